//! Wait for a state instead of sleeping for it: [`eventually`] in async
//! tests, [`eventually_blocking`] in plain `#[test]`s.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

/// How often [`eventually`] asks again.
const POLL: Duration = Duration::from_millis(20);

/// Ask `check` every 20 ms until it answers `Ok`, and return that value.
/// `Err` carries what it saw instead; past `within`, the test fails with
/// `what` and the last thing seen.
///
/// ```no_run
/// # async fn f(ready: impl Fn() -> bool) {
/// use std::time::Duration;
/// seckill_testkit::eventually("the replica is ready", Duration::from_secs(10), || async {
///     if ready() { Ok(()) } else { Err("not yet") }
/// })
/// .await;
/// # }
/// ```
pub async fn eventually<T, E, F, Fut>(what: &str, within: Duration, mut check: F) -> T
where
    E: Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let seen = match check().await {
            Ok(found) => return found,
            Err(seen) => seen,
        };
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {within:?}; last seen: {seen:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// [`eventually`] for a test without a runtime (a plain `#[test]`): asks
/// `check` every 20 ms, on a runtime of its own, until it answers `Ok`.
/// Not for use inside a tokio runtime (one cannot block on another there):
/// use [`eventually`].
///
/// ```no_run
/// # fn f(exists: impl Fn() -> bool) {
/// use std::time::Duration;
/// seckill_testkit::eventually_blocking("the pid file is written", Duration::from_secs(5), || {
///     if exists() { Ok(()) } else { Err("not yet") }
/// });
/// # }
/// ```
pub fn eventually_blocking<T, E, F>(what: &str, within: Duration, mut check: F) -> T
where
    E: Debug,
    F: FnMut() -> Result<T, E>,
{
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime to wait on")
        .block_on(eventually(what, within, || std::future::ready(check())))
}
