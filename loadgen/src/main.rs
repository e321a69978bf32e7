//! `seckill-loadgen`: see `seckill_loadgen` (lib) and `--help`.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    seckill_loadgen::main().await
}
