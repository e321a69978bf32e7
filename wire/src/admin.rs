//! The admin token as both sides hold it: every `/admin/*` call sends
//! `Authorization: Bearer <token>`.
//!
//! - [`DEMO_TOKEN`]: what a service on a loopback address accepts when no
//!   token is set (`make demo`), and what the load generator sends then.
//! - A token file (`SECKILL_ADMIN_TOKEN_FILE`): docker-compose makes one
//!   random token per stack into a shared volume, and every replica, the
//!   console and the load generator read it from there ([`read_token_file`]),
//!   so the token never sits in the compose file or in a process list.

use std::fmt;
use std::path::{Path, PathBuf};

/// The token of the loopback-only demo. Printed in the README; a service
/// listening beyond loopback never accepts it unless it was set on purpose.
pub const DEMO_TOKEN: &str = "seckill-demo-admin";

/// Why a token file gave no token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFileError {
    /// The file as named.
    pub path: PathBuf,
    /// What went wrong: the read error, or that it holds no token.
    pub reason: String,
}

impl fmt::Display for TokenFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot take the admin token from {}: {}",
            self.path.display(),
            self.reason
        )
    }
}

impl std::error::Error for TokenFileError {}

/// The token in `path`: its first line, surrounding whitespace removed. A
/// missing, unreadable or blank file is an error, never an empty token.
pub fn read_token_file(path: &Path) -> Result<String, TokenFileError> {
    let error = |reason: String| TokenFileError {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
    let token = text.lines().next().unwrap_or("").trim();
    if token.is_empty() {
        return Err(error("the file holds no token".into()));
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(name: &str, text: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("seckill-wire-token-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("write the token file");
        path
    }

    #[test]
    fn the_first_line_trimmed_is_the_token() {
        let path = file_with("ok", "  s3cret \nignored\n");
        assert_eq!(read_token_file(&path).as_deref(), Ok("s3cret"));
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn a_blank_file_is_refused_not_an_empty_token() {
        let path = file_with("blank", " \n\n");
        let err = read_token_file(&path).expect_err("blank");
        assert_eq!(err.reason, "the file holds no token");
        assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn a_missing_file_names_the_path() {
        let path = std::env::temp_dir().join("seckill-wire-no-such-token-file");
        let err = read_token_file(&path).expect_err("missing");
        assert!(
            err.to_string()
                .starts_with("cannot take the admin token from "),
            "{err}"
        );
    }
}
