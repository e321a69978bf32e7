//! `admin-token`: one admin token per docker-compose stack.
//!
//! A one-shot service runs this before anything else starts. The token is
//! `SECKILL_ADMIN_TOKEN` when the user set one; otherwise the one already in
//! the file (the stack was up before: the same token until `docker-compose
//! down -v` removes the volume); otherwise 128 random bits. The file is
//! 0644: only the stack's containers mount its volume, and the load
//! generator may run there as the host's user (`run --user`). Every
//! replica, the console and the load generator read the file
//! (`SECKILL_ADMIN_TOKEN_FILE`), so no stack accepts the README's demo
//! token unless someone set it on purpose.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::ExitCode;

use seckill_wire::admin::{read_token_file, DEMO_TOKEN};

/// Where this stack's token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `SECKILL_ADMIN_TOKEN`, written to the file.
    Set,
    /// Already in the file.
    Kept(String),
    /// Made now.
    Made(String),
}

/// The stack's token in `file`, made or taken as the module says.
pub fn ensure(file: &Path, set: Option<&str>) -> std::io::Result<Source> {
    if let Some(token) = set.map(str::trim).filter(|t| !t.is_empty()) {
        write_token(file, token)?;
        return Ok(Source::Set);
    }
    if file.exists() {
        return read_token_file(file)
            .map(Source::Kept)
            .map_err(|e| std::io::Error::other(e.to_string()));
    }
    let token: String = rand::random::<[u8; 16]>()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    write_token(file, &token)?;
    Ok(Source::Made(token))
}

fn write_token(file: &Path, token: &str) -> std::io::Result<()> {
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(file)?;
    writeln!(out, "{token}")
}

/// The subcommand: exit 0 with the token in place, 3 when it cannot be.
pub fn main(file: &Path) -> ExitCode {
    let set = std::env::var("SECKILL_ADMIN_TOKEN").ok();
    match ensure(file, set.as_deref()) {
        Ok(Source::Set) if set.as_deref().map(str::trim) == Some(DEMO_TOKEN) => {
            println!(
                "admin token: SECKILL_ADMIN_TOKEN, the README's demo token — anyone who reads the README can drive this stack"
            );
            ExitCode::SUCCESS
        }
        Ok(Source::Set) => {
            println!("admin token: SECKILL_ADMIN_TOKEN, as you set it");
            ExitCode::SUCCESS
        }
        Ok(Source::Kept(token)) => {
            println!("admin token of this stack (made at its first start; `docker-compose down -v` makes a new one): {token}");
            ExitCode::SUCCESS
        }
        Ok(Source::Made(token)) => {
            println!("admin token of this stack (made now; set SECKILL_ADMIN_TOKEN to choose one): {token}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "seckill-loadgen: cannot keep the admin token in {}: {e}",
                file.display()
            );
            ExitCode::from(3)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fresh(name: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!(
            "seckill-loadgen-token-{}-{name}",
            std::process::id()
        ));
        std::fs::remove_file(&path).ok();
        path
    }

    #[test]
    fn a_stack_makes_one_random_token_and_keeps_it() {
        let file = fresh("made");
        let Ok(Source::Made(made)) = ensure(&file, None) else {
            panic!("a first start makes a token");
        };
        assert_eq!(made.len(), 32, "{made}");
        assert!(made.chars().all(|c| c.is_ascii_hexdigit()), "{made}");
        let mode = std::fs::metadata(&file).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o644, "only its owner writes it");
        assert_eq!(ensure(&file, None).ok(), Some(Source::Kept(made.clone())));
        let other = fresh("other");
        let Ok(Source::Made(second)) = ensure(&other, Some("  ")) else {
            panic!("a blank SECKILL_ADMIN_TOKEN is unset");
        };
        assert_ne!(second, made, "each stack its own");
        std::fs::remove_file(file).ok();
        std::fs::remove_file(other).ok();
    }

    #[test]
    fn a_set_token_wins_over_the_kept_one() {
        let file = fresh("set");
        assert!(matches!(ensure(&file, None), Ok(Source::Made(_))));
        assert_eq!(ensure(&file, Some("mine")).ok(), Some(Source::Set));
        assert_eq!(read_token_file(&file).as_deref(), Ok("mine"));
        std::fs::remove_file(file).ok();
    }
}
