//! Wait for a state instead of sleeping for it.

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
