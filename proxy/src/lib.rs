//! A TCP proxy in user space, for slow and cut links.
//!
//! The kernel here has no `netem`, so the scenario runner puts one of these
//! between a replica and each server it talks to (Redis, the Redlock nodes,
//! PostgreSQL, a Redis replica's link to its primary). Per proxy, at run
//! time:
//! - **delay** each direction: every chunk read is forwarded once `delay`
//!   has passed since it was read, in order — a link with that one-way
//!   latency (bandwidth is not limited);
//! - **cut**: existing connections are dropped and new ones refused until
//!   the link is restored — a partition, or a dead server as the client
//!   sees it;
//! - **retarget**: new connections go to another address (the `failover`
//!   scenario points the service's Redis link at the promoted replica).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// The settings of one link, changed while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkState {
    /// Where new connections go.
    pub target: SocketAddr,
    /// Added latency, client → server.
    pub delay_up: Duration,
    /// Added latency, server → client.
    pub delay_down: Duration,
    /// Refuse and drop every connection.
    pub cut: bool,
}

/// A running proxy. Dropping it stops accepting; connections end with it.
#[derive(Debug)]
pub struct Proxy {
    /// The port clients connect to (on 127.0.0.1).
    pub port: u16,
    state: watch::Sender<LinkState>,
    /// Bumped by every cut: connections of an older generation close.
    generation: Arc<Mutex<u64>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.state.send_modify(|s| s.cut = true);
    }
}

impl Proxy {
    /// Listen on a free loopback port and forward to `target`.
    pub async fn start(target: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let (state, watch_rx) = watch::channel(LinkState {
            target,
            delay_up: Duration::ZERO,
            delay_down: Duration::ZERO,
            cut: false,
        });
        let generation = Arc::new(Mutex::new(0u64));
        let accept = tokio::spawn(accept_loop(listener, watch_rx, generation.clone()));
        Ok(Self {
            port,
            state,
            generation,
            accept,
        })
    }

    /// The link as it is now.
    pub fn state(&self) -> LinkState {
        *self.state.borrow()
    }

    /// Add `delay` one way in each direction (a round trip costs 2×).
    pub fn set_delay(&self, delay: Duration) {
        self.set_delays(delay, delay);
    }

    /// Added latency per direction.
    pub fn set_delays(&self, up: Duration, down: Duration) {
        self.state.send_modify(|s| {
            s.delay_up = up;
            s.delay_down = down;
        });
    }

    /// Cut the link (drop every connection, refuse new ones) or restore it.
    pub fn set_cut(&self, cut: bool) {
        if cut {
            *self
                .generation
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        }
        self.state.send_modify(|s| s.cut = cut);
    }

    /// Send new connections to `target`, dropping the current ones.
    pub fn retarget(&self, target: SocketAddr) {
        *self
            .generation
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        self.state.send_modify(|s| s.target = target);
    }
}

async fn accept_loop(
    listener: TcpListener,
    state: watch::Receiver<LinkState>,
    generation: Arc<Mutex<u64>>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let link = *state.borrow();
        if link.cut {
            drop(client);
            continue;
        }
        let born = *generation
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = state.clone();
        let generation = generation.clone();
        tokio::spawn(async move {
            let Ok(server) = TcpStream::connect(link.target).await else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (client_r, client_w) = client.into_split();
            let (server_r, server_w) = server.into_split();
            let alive = {
                let generation = generation.clone();
                move |s: &LinkState| {
                    !s.cut
                        && *generation
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            == born
                }
            };
            let up = pump(client_r, server_w, state.clone(), true, alive.clone());
            let down = pump(server_r, client_w, state, false, alive);
            // When either side closes (or the link is cut), both end.
            tokio::select! {
                () = up => {}
                () = down => {}
            }
        });
    }
}

/// Copy one direction, each chunk released `delay` after it was read.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut state: watch::Receiver<LinkState>,
    upstream: bool,
    alive: impl Fn(&LinkState) -> bool + Clone + Send + 'static,
) {
    let still = alive.clone();
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let mut writer_state = state.clone();
    let writer = async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if !alive(&writer_state.borrow_and_update()) {
                return;
            }
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
    };
    let reader = async move {
        // Owned here, so it is dropped when the reader ends: the writer
        // then drains what was read before the end, and stops.
        let tx = tx;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            tokio::select! {
                read = from.read(&mut buf) => {
                    let n = match read {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    let link = *state.borrow_and_update();
                    let delay = if upstream { link.delay_up } else { link.delay_down };
                    if tx.send((Instant::now() + delay, buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
                changed = state.changed() => {
                    if changed.is_err() || !still(&state.borrow()) {
                        return;
                    }
                }
            }
        }
    };
    // A reply read just before its sender closed still reaches the other
    // side (a peer that answers and hangs up); a cut stops the writer at
    // its next chunk.
    tokio::pin!(writer);
    tokio::select! {
        () = &mut writer => {}
        () = reader => writer.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = socket.read(&mut buf).await {
                        if n == 0 || socket.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(port: u16) -> std::io::Result<Duration> {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
        let started = Instant::now();
        stream.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        tokio::time::timeout(Duration::from_secs(2), stream.read_exact(&mut buf))
            .await
            .map_err(|_| std::io::Error::other("timed out"))??;
        assert_eq!(&buf, b"ping");
        Ok(started.elapsed())
    }

    #[tokio::test]
    async fn forwards_delays_and_cuts() {
        let proxy = Proxy::start(echo_server().await).await.expect("proxy");
        assert!(round_trip(proxy.port).await.expect("plain") < Duration::from_millis(50));
        proxy.set_delay(Duration::from_millis(60));
        let slow = round_trip(proxy.port).await.expect("delayed");
        assert!(slow >= Duration::from_millis(120), "{slow:?}");
        proxy.set_delay(Duration::ZERO);
        let mut held = TcpStream::connect(("127.0.0.1", proxy.port))
            .await
            .expect("connect");
        proxy.set_cut(true);
        assert!(round_trip(proxy.port).await.is_err(), "cut refuses");
        let mut buf = [0u8; 1];
        let _ = held.write_all(b"x").await;
        let read = tokio::time::timeout(Duration::from_secs(1), held.read(&mut buf)).await;
        assert!(
            matches!(read, Ok(Ok(0) | Err(_))),
            "an open connection is dropped by the cut: {read:?}"
        );
        proxy.set_cut(false);
        assert!(round_trip(proxy.port).await.is_ok(), "restored");
    }

    #[tokio::test]
    async fn an_answer_sent_just_before_the_server_hangs_up_gets_through() {
        // A server that reads one request, answers and closes at once (a
        // 3PC participant): the answer must not be lost with the close.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buf = [0u8; 16];
                let _ = socket.read(&mut buf).await;
                let _ = socket.write_all(b"answer\n").await;
            }
        });
        let proxy = Proxy::start(addr).await.expect("proxy");
        for _ in 0..50 {
            let mut stream = TcpStream::connect(("127.0.0.1", proxy.port))
                .await
                .expect("connect");
            stream.write_all(b"ask\n").await.expect("write");
            let mut got = Vec::new();
            tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut got))
                .await
                .expect("answered in time")
                .expect("read");
            assert_eq!(got, b"answer\n");
        }
    }
}
