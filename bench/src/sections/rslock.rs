//! Section `rslock`: our Redlock against rslock 0.10 on the same five
//! nodes, side by side: 50 tasks over 1,000 keys for 3 s each, acquire
//! + release cycles per second.

use std::sync::Arc;
use std::time::Duration;

use seckill_app::lock::redlock::Redlock;
use tokio::time::Instant;

use crate::harness::{cycles_per_second, deps, Products, NODE_TIMEOUT};
use crate::table::row;
use crate::timing::per_second;

/// Against rslock 0.10 on the same five nodes: 50 tasks, 1,000 keys.
pub async fn rslock_row(urls: &[String]) {
    let ttl = Duration::from_secs(10);
    let ours = Arc::new(Redlock::new(urls, NODE_TIMEOUT, 0.01).expect("redlock"));
    let rival = rslock::LockManager::new(urls.to_vec());
    let window = Duration::from_secs(3);
    let d = Arc::new(deps(&urls[0], ttl, Duration::from_secs(5)));
    let our_rate = cycles_per_second(
        ours,
        d,
        50,
        window,
        Products::Shares {
            first: 10_000,
            count: 1_000,
        },
    )
    .await;
    let rival_rate = per_second(50, window, |t, deadline| {
        let rival = rival.clone();
        async move {
            let (mut i, mut done) = (t, 0);
            while Instant::now() < deadline {
                let key = format!("rslock:{}", i % 1_000);
                if let Ok(lock) = rival.lock(key.as_bytes(), Duration::from_secs(10)).await {
                    rival.unlock(&lock).await;
                    done += 1;
                }
                i += 50;
            }
            done
        }
    })
    .await;
    row(
        "redlock vs rslock 0.10, 50 tasks, 1k keys",
        our_rate,
        rival_rate,
        "ops/s",
        ">= 1.25",
        our_rate / rival_rate >= 1.25,
    );
}
