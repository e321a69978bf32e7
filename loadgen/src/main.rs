//! `seckill-loadgen`: see `seckill_loadgen` (lib) and `--help`.

fn main() -> std::process::ExitCode {
    seckill_loadgen::main()
}
