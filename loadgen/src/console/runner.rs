//! One fault scenario run from the console: this very binary's `scenario
//! NAME --quick` as a child process (it owns its replicas, Redis nodes and
//! database, never the room's stack), its step lines kept as they come so
//! the page shows the story while it happens. Stopping sends it SIGINT:
//! the scenario's own interrupt handler stops what it started.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;

use seckill_faults::scenario::{Scenario, Sweep};
use seckill_load::load::lock;

/// Lines kept per run (the oldest are dropped first).
const LINES_KEPT: usize = 2_000;

/// Where a scenario runs from: the flags the console passes on.
#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// Report folders go under it, one per run.
    pub out: PathBuf,
    /// `--app-bin`, when the console was given one.
    pub app_bin: Option<PathBuf>,
    /// `--database-url`, when the console was given one.
    pub database_url: Option<String>,
    /// The atlas whose cells the page offers (`--atlas`).
    pub atlas: PathBuf,
}

/// The dials a run was started with: `--set` each, and one `--sweep`;
/// for an atlas cell, its strategy and variant, without `--quick`.
#[derive(Debug, Clone, Default)]
pub struct Dials {
    /// `NAME=VALUE`s.
    pub sets: Vec<(String, String)>,
    /// `NAME` and its values.
    pub sweep: Option<(String, Vec<String>)>,
    /// One strategy only (`--strategies`), outside an atlas cell.
    pub strategy: Option<seckill_load::api::StrategyName>,
    /// The atlas cell this run reruns (its strategy, variant and bracket).
    pub cell: Option<AtlasRun>,
    /// At the target's own dials, without `--quick` (a replay: its
    /// variants' dials are the report's).
    pub full: bool,
}

/// An atlas cell run from the page: both ends of its bracket (or of its
/// range) as one sweep, the dials it was measured with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AtlasRun {
    /// `strategy × fault`.
    pub label: String,
    /// What the atlas measured there, in words.
    pub measured: String,
    pub strategy: seckill_load::api::StrategyName,
    pub variant: Option<String>,
    /// The bracket's ends in the dial's unit, shaded on the curve.
    pub bracket: Option<(f64, f64)>,
    /// Where the model predicts the flips.
    pub model_flips: Vec<f64>,
    /// Whether the atlas ran with the scenarios' `--quick` dials.
    pub quick: bool,
}

impl Dials {
    /// As command-line arguments.
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let (None, Some(strategy)) = (&self.cell, self.strategy) {
            args.push("--strategies".to_owned());
            args.push(strategy.as_str().to_owned());
        }
        match &self.cell {
            None if self.full => {}
            None => args.push("--quick".to_owned()),
            Some(cell) => {
                if cell.quick {
                    args.push("--quick".to_owned());
                }
                args.push("--strategies".to_owned());
                args.push(cell.strategy.as_str().to_owned());
                if let Some(v) = &cell.variant {
                    args.push("--variants".to_owned());
                    args.push(v.clone());
                }
            }
        }
        for (k, v) in &self.sets {
            args.push("--set".to_owned());
            args.push(format!("{k}={v}"));
        }
        if let Some((k, values)) = &self.sweep {
            args.push("--sweep".to_owned());
            args.push(format!("{k}={}", values.join(",")));
        }
        args
    }
}

/// One curve of the last run, drawn.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    /// `scenario · strategy · variant · dial`.
    pub title: String,
    /// The SVG.
    pub svg: String,
}

/// The page's view of the last run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunView {
    /// Scenario name (`null` before the first run).
    pub name: Option<String>,
    /// Whether it is still running.
    pub running: bool,
    /// Its exit code once it ended (`null` while running, or killed by a
    /// signal).
    pub exit_code: Option<i32>,
    /// Its report folder.
    pub out: Option<String>,
    /// Its output, stdout and stderr as they came.
    pub lines: Vec<String>,
    /// The atlas cell it reruns, when it was started as one.
    pub cell: Option<AtlasRun>,
    /// The replay it runs (`scenario replay ID`), when it is one.
    pub replay: Option<String>,
}

/// What the page runs: a scenario, or one replayed bug report.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// `scenario NAME`.
    Scenario(Scenario),
    /// `scenario replay ID`: both its variants, at its own dials.
    Replay(&'static str),
}

impl Target {
    /// As the page names it.
    fn name(self) -> String {
        match self {
            Target::Scenario(s) => s.name().to_owned(),
            Target::Replay(id) => format!("replay {id}"),
        }
    }

    /// The arguments after `scenario`.
    fn args(self) -> Vec<&'static str> {
        match self {
            Target::Scenario(s) => vec![s.name()],
            Target::Replay(id) => vec!["replay", id],
        }
    }
}

/// The last scenario run.
#[derive(Debug, Default)]
pub struct Runner {
    view: Arc<Mutex<RunView>>,
    pid: Arc<Mutex<Option<u32>>>,
}

impl Runner {
    /// What the page shows.
    pub fn view(&self) -> RunView {
        lock(&self.view).clone()
    }

    /// The curves of the last run's sweeps, once it ended (each case
    /// of a sweep carries the whole curve: one per strategy and variant).
    pub fn curves(&self) -> Vec<Curve> {
        let view = self.view();
        if view.running {
            return Vec::new();
        }
        let Some(out) = view.out else {
            return Vec::new();
        };
        let Ok(text) = std::fs::read_to_string(std::path::Path::new(&out).join("scenarios.json"))
        else {
            return Vec::new();
        };
        let Ok(report) = serde_json::from_str::<serde_json::Value>(&text) else {
            return Vec::new();
        };
        let mut curves: Vec<Curve> = Vec::new();
        for case in report["scenarios"].as_array().into_iter().flatten() {
            let Ok(sweep) = serde_json::from_value::<Sweep>(case["sweep"].clone()) else {
                continue;
            };
            let title = format!(
                "{} · {}{} · {}",
                case["name"].as_str().unwrap_or("?"),
                case["strategy"].as_str().unwrap_or("?"),
                case["variant"]
                    .as_str()
                    .map_or(String::new(), |v| format!(" · {v}")),
                sweep.key
            );
            if curves.iter().any(|c| c.title == title) {
                continue;
            }
            let svg = match &view.cell {
                // The atlas's bracket shaded, the model's flips drawn.
                Some(cell) => {
                    seckill_faults::scenario::draw_curve(&seckill_faults::scenario::Curve {
                        model_flips: cell.model_flips.clone(),
                        brackets: cell.bracket.into_iter().collect(),
                        ..seckill_faults::scenario::Curve::of(&sweep)
                    })
                }
                None => seckill_faults::scenario::curve_svg(&sweep),
            };
            curves.push(Curve { svg, title });
        }
        curves
    }

    /// Start `target` with `dials` unless a run is going; the report
    /// folder.
    pub fn start(
        &self,
        target: Target,
        dials: &Dials,
        options: &RunnerOptions,
    ) -> Result<String, String> {
        if lock(&self.view).running {
            return Err("a scenario is already running: stop it first".into());
        }
        let name = target.name();
        let (mut command, out) = command(target, dials, options)?;
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start the scenario: {e}"))?;
        let out_text = out.display().to_string();
        *lock(&self.view) = RunView {
            name: Some(name.clone()),
            running: true,
            exit_code: None,
            out: Some(out_text.clone()),
            lines: vec![format!(
                "$ seckill-loadgen scenario {name} --out {out_text} {}",
                dials.args().join(" ")
            )],
            cell: dials.cell.clone(),
            replay: match target {
                Target::Replay(id) => Some(id.to_owned()),
                Target::Scenario(_) => None,
            },
        };
        *lock(&self.pid) = child.id();
        let readers = [
            child
                .stdout
                .take()
                .map(|s| keep_lines(s, Arc::clone(&self.view))),
            child
                .stderr
                .take()
                .map(|s| keep_lines(s, Arc::clone(&self.view))),
        ];
        let (view, pid) = (Arc::clone(&self.view), Arc::clone(&self.pid));
        tokio::spawn(async move {
            let status = child.wait().await;
            for reader in readers.into_iter().flatten() {
                let _ = reader.await;
            }
            *lock(&pid) = None;
            let mut view = lock(&view);
            view.running = false;
            match status {
                Ok(status) => {
                    view.exit_code = status.code();
                    view.lines.push(format!("(exit {status})"));
                }
                Err(e) => view.lines.push(format!("(could not wait for it: {e})")),
            }
        });
        Ok(out_text)
    }

    /// Ask the running scenario to stop (SIGINT): it stops its processes
    /// and exits 130.
    pub fn stop(&self) -> Result<(), String> {
        let pid = (*lock(&self.pid)).ok_or("no scenario is running")?;
        seckill_launch::process::send_signal(pid, "INT").map_err(|e| e.to_string())
    }
}

/// The child that runs `target` (this very binary), and its report
/// folder: a new one under the console's, named by the target and the
/// time in ms — never one an earlier run wrote (two runs started within
/// the same second once shared one, and the page showed the first's).
fn command(
    target: Target,
    dials: &Dials,
    options: &RunnerOptions,
) -> Result<(Command, PathBuf), String> {
    let stamp = seckill_load::clock::unix_ms();
    let name = target.name().replace(' ', "-");
    let out = (0..)
        .map(|n| match n {
            0 => options.out.join(format!("{name}-{stamp}")),
            n => options.out.join(format!("{name}-{stamp}-{n}")),
        })
        .find(|folder| !folder.exists())
        .expect("an unused folder name");
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let mut command = Command::new(exe);
    command
        .arg("scenario")
        .args(target.args())
        .arg("--out")
        .arg(&out)
        .args(dials.args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group: a Ctrl-C in the console's terminal
        // reaches the console, which stops the run the same way.
        .process_group(0);
    if let Some(bin) = &options.app_bin {
        command.arg("--app-bin").arg(bin);
    }
    if let Some(url) = &options.database_url {
        command.arg("--database-url").arg(url);
    }
    Ok((command, out))
}

fn keep_lines(
    stream: impl AsyncRead + Unpin + Send + 'static,
    view: Arc<Mutex<RunView>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut view = lock(&view);
            if view.lines.len() >= LINES_KEPT {
                view.lines.remove(0);
            }
            view.lines.push(line);
        }
    })
}
