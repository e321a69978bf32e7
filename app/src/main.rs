//! `seckill-app`: see `seckill_app::cli` (the library) and `--help`.

fn main() -> std::process::ExitCode {
    seckill_app::cli::main()
}
