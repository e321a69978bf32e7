//! `seckill-loadgen` — the goose-based load generator (issue 6 builds it out).
//!
//! For now it only says so; the service and its tests stand on their own.

fn main() {
    eprintln!("seckill-loadgen: not built yet — see the README's roadmap (issue 6).");
    std::process::exit(2);
}
