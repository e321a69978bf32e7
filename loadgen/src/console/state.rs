//! The console's state, shared by its routes: the service client, the
//! strategies listed at start, the load (or none), the last scenario run.

use std::sync::{Arc, Mutex};

use super::pacer::Pacer;
use super::recording::Recording;
use super::runner::{Runner, RunnerOptions};
use seckill_load::api::{Service, StrategiesBody};
use seckill_load::load::lock;

/// The console's state, shared by its routes.
#[derive(Debug)]
pub struct Console {
    pub(super) service: Service,
    pub(super) product: u64,
    pub(super) default_strategy: seckill_load::api::StrategyName,
    pub(super) strategies: StrategiesBody,
    /// The load running (or stopping: it leaves once its grabs in flight
    /// are answered).
    pub(super) load: Mutex<Option<Arc<Pacer>>>,
    /// The last load's recording (the charts, the download): from its
    /// start until the next load starts.
    pub(super) recording: Mutex<Option<Arc<Recording>>>,
    /// The stock the last load (or reset) set: what "reset everything"
    /// puts back.
    pub(super) stock: Mutex<u64>,
    pub(super) runner: Runner,
    pub(super) runner_options: RunnerOptions,
}

impl Console {
    /// Stop the load and any scenario (the console is going away).
    pub(super) async fn stop_all(&self) {
        self.stop_load().await;
        let _ = self.runner.stop();
    }

    /// Stop the load, if one runs, and wait for its grabs in flight; it
    /// shows as running (stopping) until they are answered.
    pub(super) async fn stop_load(&self) {
        let pacer = lock(&self.load).clone();
        if let Some(pacer) = pacer {
            pacer.stop().await;
            let mut slot = lock(&self.load);
            if slot.as_ref().is_some_and(|p| Arc::ptr_eq(p, &pacer)) {
                *slot = None;
                if let Some(recording) = lock(&self.recording).as_ref() {
                    recording.finish();
                }
            }
        }
    }
}
