//! `console`: the room's control room — a web page served by the load
//! generator (port 8089 by default, Locust's) against the replicas of
//! `--url`, so a workshop runs without a terminal, on a projector at
//! 1280×720:
//!
//! - choose the strategy (every replica follows);
//! - start and stop a paced load ([`pacer`]): rate, buyers, stock, a share
//!   of returning buyers;
//! - switch every fault of `/admin/faults` (the shared set: every replica),
//!   with a banner of the faults in force always in view;
//! - reset everything: load stopped, faults cleared, stock reset, the
//!   default strategy back, the history off;
//! - run one fault scenario ([`runner`]) and show its steps as they come;
//! - live figures: stock, grabs/s summed over every replica, orders,
//!   oversold, lost updates, undersold, duplicates, overlaps;
//! - a live timeline of the critical sections, one row per replica, each
//!   section a bar from entry to exit, red when it overlapped another —
//!   who holds the lock when, which is the lesson itself. It reads the
//!   history arbiter's section record (`GET /admin/history/sections`),
//!   which a load started here switches on.
//!
//! Every request to the service goes through [`seckill_load::api::Service`], the
//! client `run`, `compare` and `scenario` use: there is no second
//! implementation of the API. The page polls two JSON routes of the
//! console (`GET /api/state` each second, `GET /api/sections` twice a
//! second); it has no event stream. The console holds the admin token, so
//! it binds to 127.0.0.1 unless `--bind` says otherwise.
//!
//! The page's stable hooks for outside checks are `data-testid` attributes
//! (see `page.html` and docs/console.md).

mod atlas;
mod downloads;
mod error;
mod guard;
pub mod pacer;
pub mod recording;
mod replay;
mod rounds;
mod routes;
pub mod runner;
mod scenario;
mod state;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Mutex;

use seckill_load::api::Service;
use state::Console;

pub use pacer::{LoadAdjust, LoadSettings, Pacer};
pub use runner::{Runner, RunnerOptions};

/// What `seckill-loadgen console` was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The replicas' base URLs.
    pub urls: Vec<String>,
    /// The admin token of the service.
    pub admin_token: String,
    /// Where to listen.
    pub bind: SocketAddr,
    /// The product the room buys.
    pub product: u64,
    /// The strategy "reset everything" goes back to [default: the one
    /// active when the console started].
    pub default_strategy: Option<seckill_load::api::StrategyName>,
    /// Scenario runs.
    pub runner: RunnerOptions,
}

/// Run the console until Ctrl-C; exit 3 when the service cannot be reached
/// at start or the port cannot be bound, 2 for an unknown strategy.
pub async fn main(options: Options) -> ExitCode {
    let service = Service::new(options.urls.clone(), options.admin_token.clone());
    let strategies = match service.check().await {
        Ok(listed) => listed,
        Err(e) => {
            eprintln!("seckill-loadgen console: {e}");
            return ExitCode::from(3);
        }
    };
    let default_strategy = options.default_strategy.unwrap_or(strategies.active);
    if let Err(e) = seckill_load::api::entry(&strategies, default_strategy.as_str()) {
        eprintln!("seckill-loadgen console: --default-strategy: {e}");
        return ExitCode::from(2);
    }
    let console = Console {
        service,
        product: options.product,
        default_strategy,
        strategies,
        load: Mutex::new(None),
        recording: Mutex::new(None),
        stock: Mutex::new(LoadSettings::default().stock),
        runner: Runner::default(),
        runner_options: options.runner.clone(),
    };
    // Beyond loopback, only the teacher drives the room: a login with the
    // admin token (on loopback it works as it always did).
    let login = (!options.bind.ip().is_loopback()).then(|| {
        println!(
            "console: listening on {} (beyond loopback): the page asks for the admin token",
            options.bind.ip()
        );
        guard::Login::new(&options.admin_token)
    });
    match routes::serve(console, options.bind, login).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!(
                "seckill-loadgen console: cannot serve on {}: {e}",
                options.bind
            );
            ExitCode::from(3)
        }
    }
}
