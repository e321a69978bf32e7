//! `seckill-lab docker images|check|ci [BIN_DIR]`: the Docker paths of
//! seckill-lab, as a user takes them (`make docker-images`, `make
//! check-docker`, and CI's Docker step).
//!
//! - `images`: seckill-lab/{app,loadgen,lab}:local from docker/Dockerfile
//!   (the release build runs inside Docker), with their build times and
//!   sizes.
//! - `check`: those images, then docker-compose.yml brought up for real,
//!   checked ([`checks`]) and taken down with its volumes.
//! - `ci`: the app and loadgen runtime images from the binaries CI already
//!   built (no second compile; BuildKit builds only those stages), then
//!   the same check with fewer strategies.
//!
//! The Makefile installs docker.io and docker-compose first
//! (`require_packages`); a Docker engine is started here when none answers
//! (dockerd, as root). Where an image cannot be pulled (no registry
//! answers), docker/standins/make.sh makes a stand-in of the same tag.
//! Grafana has no stand-in (no Debian package): the live check runs every
//! service but `grafana`, whose provisioning files `make check-stack`
//! checks offline.

mod checks;
mod compose;
mod engine;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context as _};

use crate::util::say;
use checks::Mode;
use engine::{docker, ensure_engine, image_size, standins};

/// What `seckill-lab docker` does.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// `make docker-images`: the three images from docker/Dockerfile.
    Images,
    /// `make check-docker`: the images, then the compose stack for real.
    Check,
    /// CI's Docker step: the runtime images from BIN_DIR's binaries, then
    /// the compose check with nine strategies.
    Ci {
        /// Where seckill-app and seckill-loadgen were built.
        #[arg(default_value = "target/debug")]
        bin_dir: PathBuf,
    },
}

/// Run `action` from the checkout's root.
pub fn run(action: Action) -> anyhow::Result<()> {
    let root = std::env::current_dir().context("the current folder")?;
    ensure_engine()?;
    match action {
        Action::Images => build_images(&root),
        Action::Check => {
            build_images(&root)?;
            checks::check_stack(&root, Mode::Full)
        }
        Action::Ci { bin_dir } => {
            build_prebuilt_images(&root, &bin_dir)?;
            checks::check_stack(&root, Mode::Quick)
        }
    }
}

/// seckill-lab/{app,loadgen,lab}:local from docker/Dockerfile.
fn build_images(root: &Path) -> anyhow::Result<()> {
    standins(root, &["debian:bookworm-slim", "rust:1-bookworm"])?;
    for target in ["app", "loadgen", "lab"] {
        let started = Instant::now();
        let tag = format!("seckill-lab/{target}:local");
        say(&format!(
            "docker build -f docker/Dockerfile --target {target} -t {tag} ."
        ));
        let status = Command::new("docker")
            .args([
                "build",
                "-q",
                "-f",
                "docker/Dockerfile",
                "--target",
                target,
                "-t",
                &tag,
                ".",
            ])
            .current_dir(root)
            .stdout(Stdio::null())
            .status()
            .context("docker build")?;
        anyhow::ensure!(
            status.success(),
            "the {target} image did not build: docker build -f docker/Dockerfile --target {target} ."
        );
        say(&format!(
            "{tag} built in {} s, {}",
            started.elapsed().as_secs(),
            image_size(&tag)
        ));
    }
    Ok(())
}

/// A `docker build` with BuildKit (only the stages a target needs):
/// `docker buildx`, or a client older than 23 with DOCKER_BUILDKIT=1
/// (Debian bookworm's docker.io is 20.10).
fn buildkit_build(root: &Path, args: &[&str]) -> anyhow::Result<()> {
    let mut command = if docker(&["buildx", "version"]).is_ok() {
        let mut c = Command::new("docker");
        c.args(["buildx", "build", "--load"]);
        c
    } else {
        // The first client (on the PATH, then Debian's own) older than 23.
        let major = |client: &str| {
            engine::output(client, &["version", "--format", "{{.Client.Version}}"])
                .ok()
                .and_then(|v| {
                    v.trim()
                        .split('.')
                        .next()
                        .and_then(|m| m.parse::<u32>().ok())
                })
        };
        let client = ["docker", "/usr/bin/docker"]
            .into_iter()
            .find(|c| major(c).is_some_and(|m| (10..23).contains(&m)))
            .context("no docker client builds with BuildKit here: install docker-buildx (or Debian's docker.io)")?;
        let mut c = Command::new(client);
        c.arg("build").env("DOCKER_BUILDKIT", "1");
        c
    };
    let out = command
        .args(args)
        .current_dir(root)
        .stdout(Stdio::null())
        .output()
        .context("docker build")?;
    anyhow::ensure!(
        out.status.success(),
        "docker build {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// The app and loadgen runtime images from the binaries in `bin_dir`.
fn build_prebuilt_images(root: &Path, bin_dir: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let bins = ["seckill-app", "seckill-loadgen"].map(|b| root.join(bin_dir).join(b));
    if !bins.iter().all(|b| b.exists()) {
        bail!(
            "{} has no seckill-app and seckill-loadgen: build them first",
            bin_dir.display()
        );
    }
    standins(root, &["debian:bookworm-slim"])?;
    let staged = root.join(".docker-prebuilt");
    let _ = std::fs::remove_dir_all(&staged);
    std::fs::create_dir_all(&staged).context("create .docker-prebuilt")?;
    for bin in &bins {
        let name = bin.file_name().context("a binary's name")?;
        std::fs::copy(bin, staged.join(name)).with_context(|| format!("copy {}", bin.display()))?;
    }
    let built = (|| {
        for target in ["app", "loadgen"] {
            let tag = format!("seckill-lab/{target}:local");
            let stage = format!("{target}-prebuilt");
            buildkit_build(
                root,
                &[
                    "-q",
                    "-f",
                    "docker/Dockerfile",
                    "--target",
                    &stage,
                    "-t",
                    &tag,
                    ".",
                ],
            )?;
            say(&format!(
                "{tag} from {} ({})",
                bin_dir.display(),
                image_size(&tag)
            ));
        }
        anyhow::Ok(())
    })();
    let _ = std::fs::remove_dir_all(&staged);
    built.with_context(|| {
        format!(
            "the runtime images did not build from {}",
            bin_dir.display()
        )
    })?;
    say(&format!(
        "runtime images from prebuilt binaries: {} s",
        started.elapsed().as_secs()
    ));
    Ok(())
}
