//! `seckill-app` — reads settings, builds the application, serves until
//! SIGINT/SIGTERM.

use seckill_app::configuration::Settings;
use seckill_app::startup::Application;
use seckill_app::telemetry;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let settings = match Settings::load() {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("seckill-app: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    telemetry::init(&settings.log_format);
    let strategy = settings.strategy.clone();
    let app = match Application::build(settings).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("cannot start: {e:#}");
            eprintln!("seckill-app: cannot start: {e:#}");
            return std::process::ExitCode::from(1);
        }
    };
    tracing::info!(port = app.port(), %strategy, "seckill-app listening");
    match app.run_until_stopped().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "server failed");
            std::process::ExitCode::from(1)
        }
    }
}
