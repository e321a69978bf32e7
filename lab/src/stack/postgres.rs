//! The checkout's one private PostgreSQL cluster (trust auth, loopback
//! only, `max_connections` 200, `max_prepared_transactions` 64 for
//! pg-2pc): reused when it answers, started when it exists, created
//! otherwise. `make demo`, `make check-panels`, `make fuzz-api`, `make
//! bench` and — when the machine has no server of its own — `make test`
//! share it, each in databases of its own.
//!
//! It lives in `.state/pg`. As root it belongs to `postgres` (initdb
//! refuses root); when that user cannot reach the checkout (a clone under
//! /root, a 0700 temporary folder) it lives under postgres' home instead:
//! no folder we did not create is ever chmod-ed.

use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};
use nix::unistd::User;
use sqlx::{Connection as _, PgConnection};

/// Where the server programs are (Debian keeps them off PATH).
fn bindir() -> anyhow::Result<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    // Other distributions put them on PATH.
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
        .context("PostgreSQL's server programs are missing: apt-get install -y postgresql")
}

fn root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A server program run as the cluster's owner: `postgres` when we are
/// root, else ourselves.
fn as_owner(program: &Path) -> Command {
    if root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// The cluster's folder (see the module doc).
pub fn folder(checkout: &Path) -> anyhow::Result<PathBuf> {
    let dir = checkout.join(".state/pg");
    if !root() {
        return Ok(dir);
    }
    if User::from_name("postgres")?.is_none() {
        run(Command::new("useradd")
            .args(["--system", "--create-home", "--home-dir"])
            .args(["/var/lib/postgresql", "postgres"]))?;
    }
    std::fs::create_dir_all(checkout.join(".state"))?;
    let reachable = Command::new("runuser")
        .args(["-u", "postgres", "--", "test", "-x"])
        .arg(checkout.join(".state"))
        .status()?
        .success();
    if reachable {
        return Ok(dir);
    }
    let home = User::from_name("postgres")?.map_or_else(|| "/var/lib/postgresql".into(), |u| u.dir);
    let mut hasher = DefaultHasher::new();
    checkout.hash(&mut hasher);
    Ok(home.join(format!("seckill-lab-{:x}/pg", hasher.finish())))
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    let out = command
        .output()
        .with_context(|| format!("run {command:?}"))?;
    if !out.status.success() {
        bail!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn url(port: u16, database: &str) -> String {
    format!("postgres://postgres@127.0.0.1:{port}/{database}")
}

async fn answers(url: &str) -> bool {
    match PgConnection::connect(url).await {
        Ok(connection) => connection.close().await.is_ok(),
        Err(_) => false,
    }
}

/// The cluster's `postgres` database URL, the cluster started (or made)
/// first when it does not answer.
pub async fn up(checkout: &Path) -> anyhow::Result<String> {
    let dir = folder(checkout)?;
    let port_file = dir.join("port");
    let kept: Option<u16> = std::fs::read_to_string(&port_file)
        .ok()
        .and_then(|p| p.trim().parse().ok());
    if let Some(port) = kept {
        if answers(&url(port, "postgres")).await {
            crate::util::say(&format!(
                "PostgreSQL: reusing own cluster at {}",
                url(port, "postgres")
            ));
            return Ok(url(port, "postgres"));
        }
    }
    let bin = bindir()?;
    let data = dir.join("data");
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    if root() {
        run(Command::new("chown").arg("postgres:").arg(&dir))?;
    }
    if !data.join("PG_VERSION").is_file() {
        crate::util::say(&format!(
            "PostgreSQL: creating own cluster in {}",
            dir.display()
        ));
        run(as_owner(&bin.join("initdb")).arg("-D").arg(&data).args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        ]))?;
    }
    // A stale, half-started one.
    let _ = as_owner(&bin.join("pg_ctl"))
        .arg("-D")
        .arg(&data)
        .args(["-m", "fast", "stop"])
        .output();
    let port = match kept.filter(|p| super::state::port_free(*p)) {
        Some(port) => port,
        None => seckill_launch::free_port()?,
    };
    std::fs::write(&port_file, format!("{port}\n"))?;
    let options = format!(
        "-p {port} -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200 -c max_prepared_transactions=64"
    );
    let log = dir.join("postgres.log");
    // pg_ctl -w returns once the server accepts connections.
    run(as_owner(&bin.join("pg_ctl"))
        .arg("-D")
        .arg(&data)
        .arg("-l")
        .arg(&log)
        .args(["-w", "-t", "60", "-o", &options, "start"]))
    .with_context(|| format!("PostgreSQL did not start (log {})", log.display()))?;
    crate::util::say(&format!(
        "PostgreSQL: own cluster at {} (log {})",
        url(port, "postgres"),
        log.display()
    ));
    Ok(url(port, "postgres"))
}

/// Stop the cluster, unless another client still uses it (a test run
/// beside the demo, or another stack).
pub async fn down(checkout: &Path) -> anyhow::Result<()> {
    let dir = folder(checkout)?;
    let Some(port) = std::fs::read_to_string(dir.join("port"))
        .ok()
        .and_then(|p| p.trim().parse().ok())
    else {
        return Ok(());
    };
    if !dir.join("data/postmaster.pid").is_file() {
        return Ok(());
    }
    let Ok(mut connection) = PgConnection::connect(&url(port, "postgres")).await else {
        return Ok(());
    };
    let others: i64 = sqlx::query_scalar(
        "select count(*) from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()",
    )
    .fetch_one(&mut connection)
    .await?;
    connection.close().await?;
    if others > 0 {
        crate::util::say(&format!(
            "own PostgreSQL cluster left running: {others} other connections use it"
        ));
        return Ok(());
    }
    run(as_owner(&bindir()?.join("pg_ctl"))
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-m", "fast", "stop"]))?;
    crate::util::say("stopped own PostgreSQL cluster");
    Ok(())
}

/// `database` on the server of `admin_url`, created when missing; dropped
/// and made again first when `fresh`. Returns its URL.
pub async fn database(admin_url: &str, database: &str, fresh: bool) -> anyhow::Result<String> {
    let mut connection = PgConnection::connect(admin_url)
        .await
        .with_context(|| format!("connect to {admin_url}"))?;
    if fresh {
        sqlx::query(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
            .execute(&mut connection)
            .await?;
    }
    let exists: Option<i32> = sqlx::query_scalar("select 1 from pg_database where datname = $1")
        .bind(database)
        .fetch_optional(&mut connection)
        .await?;
    if exists.is_none() {
        sqlx::query(&format!("CREATE DATABASE {database}"))
            .execute(&mut connection)
            .await?;
    }
    connection.close().await?;
    let base = admin_url
        .rsplit_once('/')
        .map_or(admin_url, |(base, _)| base);
    Ok(format!("{base}/{database}"))
}
