//! The `seckill-app` command line: `--help` lists every setting with its
//! default and meaning, `--version`, `--config FILE`, usage errors exit 2.

use std::process::{Command, Output};

use documented::DocumentedFields;
use seckill_app::configuration::Settings;
use seckill_testkit::workspace_binary;

fn app(args: &[&str]) -> Output {
    Command::new(workspace_binary("seckill-app", "seckill-app"))
        .args(args)
        .env_remove("SECKILL_CONFIG")
        .output()
        .expect("run seckill-app")
}

#[test]
fn help_lists_every_setting_with_its_default_and_meaning() {
    let out = app(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for name in Settings::FIELD_NAMES {
        let var = format!("SECKILL_{}  [default: ", name.to_uppercase());
        let at = help
            .find(&var)
            .unwrap_or_else(|| panic!("{var} missing in --help:\n{help}"));
        // A line of meaning follows every setting.
        let meaning = help[at..].lines().nth(1).unwrap_or("").trim();
        assert!(meaning.len() > 10, "no meaning under {var}: {meaning:?}");
    }
    assert!(
        help.contains("SECKILL_LOCK_TTL_MS  [default: 30000]"),
        "{help}"
    );
    assert!(help.contains("--config <FILE>"), "{help}");
}

#[test]
fn version_and_usage_errors() {
    let out = app(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("seckill-app {}", env!("CARGO_PKG_VERSION"))
    );
    let out = app(&["--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bogus"));
    let out = app(&["--config", "/nonexistent/seckill.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/seckill.toml"));
}

/// The file is read: a wrong value in it stops the start, naming the setting.
#[test]
fn config_file_values_are_read_and_checked() {
    let path = std::env::temp_dir().join(format!("seckill-cli-{}.toml", uuid::Uuid::new_v4()));
    std::fs::write(&path, "lock_ttl_ms = \"soon\"\n").expect("write config");
    let out = app(&["--config", path.to_str().expect("utf-8 path")]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SECKILL_LOCK_TTL_MS"), "{err}");
}
