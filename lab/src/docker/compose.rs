//! The compose project the Docker check runs as (`seckill-check`:
//! containers, network and volumes named seckill-check_*): bringing it up,
//! waiting for it, reading a replica from inside, the loadgen job, and
//! taking it down with every container, network and volume it made —
//! anonymous volumes included, which carry no label.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use super::engine::{output, stdout_of};
use crate::util::say;

/// The project's name.
pub const PROJECT: &str = "seckill-check";

/// docker-compose.yml as project [`PROJECT`].
#[derive(Debug, Clone)]
pub struct Compose {
    file: PathBuf,
    /// The volumes there were before the check: any other one at the end
    /// is the run's.
    volumes_before: BTreeSet<String>,
}

impl Compose {
    /// The project of `root`'s docker-compose.yml; the volumes now are not
    /// its own.
    pub fn new(root: &Path) -> anyhow::Result<Self> {
        Ok(Self {
            file: root.join("docker-compose.yml"),
            volumes_before: lines(&output("docker", &["volume", "ls", "-q"])?),
        })
    }

    /// `docker-compose -p PROJECT -f FILE args…`, ready to run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("docker-compose");
        c.args(["-p", PROJECT, "-f"]).arg(&self.file).args(args);
        c.stdin(Stdio::null());
        c
    }

    /// `docker-compose … args…`, its standard output.
    pub fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        stdout_of(
            self.command(args),
            &format!("docker-compose {}", args.join(" ")),
        )
    }

    /// Every service but Grafana (no image to run here) and the loadgen job.
    pub fn services(&self) -> anyhow::Result<Vec<String>> {
        Ok(lines(&self.run(&["config", "--services"])?)
            .into_iter()
            .filter(|s| s != "grafana" && s != "loadgen")
            .collect())
    }

    /// The images the services run that are not ours nor Grafana's.
    pub fn pulled_images(&self) -> anyhow::Result<Vec<String>> {
        let config = self.run(&["config"])?;
        let images: BTreeSet<String> = config
            .lines()
            .filter_map(|l| l.trim().strip_prefix("image:"))
            .map(|i| i.trim().to_owned())
            .filter(|i| !i.starts_with("seckill-lab/") && !i.starts_with("grafana/"))
            .collect();
        Ok(images.into_iter().collect())
    }

    /// `up -d --no-build` of `services`.
    pub fn up(&self, services: &[String]) -> anyhow::Result<()> {
        let mut args = vec!["up", "-d", "--no-build"];
        args.extend(services.iter().map(String::as_str));
        self.run(&args).map(drop)
    }

    /// The project's label filter.
    fn label() -> String {
        format!("label=com.docker.compose.project={PROJECT}")
    }

    /// Every container of the project: `service status health exit-code`.
    fn states(&self) -> anyhow::Result<Vec<String>> {
        let ids = lines(&output(
            "docker",
            &["ps", "-aq", "--filter", &Self::label()],
        )?);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = vec![
            "inspect",
            "-f",
            "{{index .Config.Labels \"com.docker.compose.service\"}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}} {{.State.ExitCode}}",
        ];
        args.extend(ids.iter().map(String::as_str));
        Ok(output("docker", &args)?
            .lines()
            .map(str::to_owned)
            .collect())
    }

    /// Every container running and, where it has a health check, healthy;
    /// a one-shot (admin-token) exited with 0 — within `within`.
    pub fn wait_healthy(&self, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        let mut states = Vec::new();
        while Instant::now() < deadline {
            states = self.states()?;
            let fine = |s: &String| {
                let f: Vec<&str> = s.split_whitespace().collect();
                matches!(
                    f.as_slice(),
                    [_, "running", "healthy" | "none", "0"] | [_, "exited", "none", "0"]
                )
            };
            if !states.is_empty() && states.iter().all(fine) {
                let mut names: Vec<&str> = states
                    .iter()
                    .filter_map(|s| s.split_whitespace().next())
                    .collect();
                names.sort_unstable();
                say(&format!("healthy: {}", names.join(" ")));
                return Ok(());
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        bail!(
            "not healthy within {} s (docker-compose -p {PROJECT} logs):\n{}",
            within.as_secs(),
            states.join("\n")
        )
    }

    /// GET `path` from inside replica `n`'s container, with the token.
    pub fn in_replica(&self, n: usize, path: &str, token: &str) -> anyhow::Result<String> {
        let service = format!("app-{n}");
        let auth = format!("Authorization: Bearer {token}");
        let url = format!("http://127.0.0.1:8080{path}");
        self.run(&["exec", "-T", &service, "curl", "-fsS", "-H", &auth, &url])
    }

    /// The compose file's loadgen job as it is defined (its own command
    /// unless `args` are given; reports in its volume), then its /reports
    /// copied into `dir` on the host.
    pub fn run_loadgen(&self, dir: &Path, args: &[String]) -> anyhow::Result<()> {
        let name = format!("{PROJECT}-loadgen");
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let _ = output("docker", &["rm", "-f", &name]);
        let mut all = vec!["--profile", "load", "run", "--name", &name, "loadgen"];
        all.extend(args.iter().map(String::as_str));
        let status = self
            .command(&all)
            .status()
            .context("docker-compose run loadgen")?;
        let copied = output(
            "docker",
            &[
                "cp",
                &format!("{name}:/reports/."),
                &format!("{}/", dir.display()),
            ],
        );
        // -v: the job's anonymous volume (the image's VOLUME /reports) too.
        let _ = output("docker", &["rm", "-f", "-v", &name]);
        anyhow::ensure!(
            status.success(),
            "the loadgen job exited {status}: report in {}",
            dir.display()
        );
        copied.map(drop)
    }

    /// What of the project is left: containers, networks and volumes by
    /// its label, and every volume that was not there before.
    fn leftovers(&self) -> anyhow::Result<BTreeSet<String>> {
        let label = Self::label();
        let mut left = BTreeSet::new();
        for kind in [["ps", "-aq"], ["network", "ls"], ["volume", "ls"]] {
            let mut args = kind.to_vec();
            if kind[0] != "ps" {
                args.push("-q");
            }
            args.extend(["--filter", label.as_str()]);
            left.extend(lines(&output("docker", &args)?));
        }
        left.extend(self.new_volumes()?);
        Ok(left)
    }

    /// The volumes that were not there before the check.
    fn new_volumes(&self) -> anyhow::Result<BTreeSet<String>> {
        Ok(lines(&output("docker", &["volume", "ls", "-q"])?)
            .difference(&self.volumes_before)
            .cloned()
            .collect())
    }

    /// `down -v`, then nothing of the project may be left: what is, is
    /// named, removed, and fails the check.
    pub fn take_down(&self) -> anyhow::Result<()> {
        say(&format!("docker-compose down -v (project {PROJECT})"));
        let _ = self
            .command(&[
                "--profile",
                "load",
                "down",
                "-v",
                "--remove-orphans",
                "--timeout",
                "20",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let left = self.leftovers()?;
        if left.is_empty() {
            say(&format!(
                "nothing of project {PROJECT} is left: no container, network or volume (anonymous ones counted)"
            ));
            return Ok(());
        }
        say("left behind by down -v (now removed):");
        for l in &left {
            println!("{l}");
        }
        let containers = lines(&output(
            "docker",
            &["ps", "-aq", "--filter", &Self::label()],
        )?);
        for c in &containers {
            let _ = output("docker", &["rm", "-f", "-v", c]);
        }
        for v in self.new_volumes()? {
            let _ = output("docker", &["volume", "rm", &v]);
        }
        bail!("docker-compose down -v left something of project {PROJECT} behind")
    }
}

/// The non-blank lines of `text`.
fn lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}
