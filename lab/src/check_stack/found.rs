//! What the checks of [`super`] share: their findings, YAML read as JSON
//! values.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// What one check found: a line per pass and per failure.
#[derive(Default)]
pub struct Findings {
    pub passes: Vec<String>,
    pub failures: Vec<String>,
}

impl Findings {
    pub fn ok(&mut self, message: impl Into<String>) {
        self.passes.push(message.into());
    }

    pub fn fail(&mut self, message: impl Into<String>) {
        self.failures.push(message.into());
    }
}

/// This project's cache folder, kept between runs (the tools the checks
/// install once): `$XDG_CACHE_HOME/seckill-lab`, else `~/.cache/seckill-lab`,
/// else `.state/seckill-lab`.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(|| ".state".into())
        .join("seckill-lab")
}

/// A YAML file as JSON values (YAML 1.2 through serde-saphyr).
pub fn yaml(path: &Path) -> anyhow::Result<Value> {
    use anyhow::Context as _;
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    yaml_text(&text).with_context(|| format!("parse {}", path.display()))
}

pub fn yaml_text(text: &str) -> anyhow::Result<Value> {
    Ok(serde_saphyr::from_str::<Option<Value>>(text)?.unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_reads_into_json_values() {
        let value = yaml_text("a:\n  - 1\n  - x: \"y\"\nb: null\n").expect("valid YAML");
        assert_eq!(value, serde_json::json!({"a": [1, {"x": "y"}], "b": null}));
    }
}
