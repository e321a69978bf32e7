//! The commands printed with each row: the `debate` command that reruns it
//! under its own folder, and the `scenario` command of its fixed points.

use super::doc;
use super::rows::{Row, Run};
use super::settings::Settings;

/// `seckill-loadgen debate --rows ID --injections N --out DIR`: reruns
/// the row as measured (its sweep, then its bisection), writing under DIR
/// only.
pub(super) fn rerun_command(settings: &Settings, row: &Row) -> String {
    format!(
        "seckill-loadgen debate --rows {} --injections {} --out loadgen-report/debate-{}",
        row.id, settings.injections, row.id
    )
}

/// The scenario command of a run's fixed points.
pub(super) fn scenario_command(settings: &Settings, run: &Run) -> String {
    format!(
        "{} --set injections={} --sweep {}={}",
        doc::scenario_command_at(run),
        settings.injections,
        run.sweep.0,
        run.sweep.1.join(",")
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::debate::table::ROWS;
    use crate::scenario;

    #[test]
    fn every_row_carries_a_command_that_reruns_it_under_its_own_folder() {
        let settings = Settings {
            injections: 20,
            only: Vec::new(),
            out: PathBuf::from("loadgen-report/debate"),
            write_docs: false,
            no_locate: false,
            reuse: false,
            rejudge: false,
            scenario: scenario::Options::default(),
        };
        let row = ROWS
            .iter()
            .find(|r| r.id == "drift-factor-covers-slew")
            .expect("row");
        assert_eq!(
            rerun_command(&settings, row),
            "seckill-loadgen debate --rows drift-factor-covers-slew --injections 20 --out loadgen-report/debate-drift-factor-covers-slew"
        );
        assert_eq!(
            scenario_command(&settings, &row.run),
            "seckill-loadgen scenario clock-slew --strategies redlock --set ttl_ms=1000 --set margin_ms=40 --set users=2 --set drift_factor=0.01 --set injections=20 --sweep slew_pct=1,2,6,10"
        );
    }
}
