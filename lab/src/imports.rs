//! `make import-graph` — the graph of the workspace's crates, the import
//! graph of each crate's modules, and their circles.
//!
//! Reads every `.rs` file under a folder, maps it to its module
//! (`lock/redlock.rs` → `lock::redlock`, `lock/mod.rs` → `lock`), and
//! collects the modules each one names through `crate::…` (in `use` lines
//! and in paths, `use crate::{a, b}` groups too) and `super::…`. A child
//! naming its parent's items (`super::X` inside `lock/redlock.rs`) is an
//! edge to the parent; a parent naming a child's items by relative path
//! (`redlock::Redlock` in `lock/mod.rs`) is an edge to the child; a bare
//! `mod child;` declaration is not an edge. Prints one line per module with
//! what it imports, then every strongly connected component of more than
//! one module: an import circle, where no order reads top-down. A circle
//! fails the check.
//!
//! A reading of the text, not of the compiler's name resolution: a path
//! in a string or a macro counts too (comments do not). That errs towards
//! edges that are not there, so a circle it misses is not one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use regex::Regex;

/// Module name → the modules it imports.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// `make import-graph`: the workspace's crates, then every folder's
/// graph; fails on a circle.
pub fn check(folders: &[PathBuf]) -> anyhow::Result<()> {
    let mut circled = Vec::new();
    println!("== the workspace's crates (their dependencies on each other)");
    let crates = crate_graph()?;
    for (name, deps) in &crates {
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        println!(
            "{name:<28} -> {}",
            if deps.is_empty() {
                "-".to_owned()
            } else {
                deps.join(", ")
            }
        );
    }
    println!();
    for circle in circles(&crates) {
        println!("crate circle: {}", circle.join(", "));
        circled.push("the workspace".to_owned());
    }
    for folder in folders {
        println!("== {}", folder.display());
        let graph = graph_of(folder)?;
        for (module, deps) in &graph {
            let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
            let deps = if deps.is_empty() {
                "-".to_owned()
            } else {
                deps.join(", ")
            };
            println!("{module:<28} -> {deps}");
        }
        println!();
        let found = circles(&graph);
        if found.is_empty() {
            println!(
                "no import circle among {} modules of {}",
                graph.len(),
                folder.display()
            );
        }
        for circle in found {
            println!(
                "import circle of {} modules: {}",
                circle.len(),
                circle.join(", ")
            );
            circled.push(folder.display().to_string());
        }
    }
    if !circled.is_empty() {
        bail!("import circles in {}", circled.join(", "));
    }
    Ok(())
}

/// The workspace's packages and the ones each depends on (normal and
/// build dependencies; a test's own may circle back, as cargo allows), as
/// `cargo metadata` lists them.
pub fn crate_graph() -> anyhow::Result<Graph> {
    let out = std::process::Command::new("cargo")
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .context("run cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("read cargo metadata's answer")?;
    crate_graph_of(&meta)
}

/// [`crate_graph`] from `cargo metadata`'s JSON.
pub fn crate_graph_of(meta: &serde_json::Value) -> anyhow::Result<Graph> {
    let packages = meta["packages"]
        .as_array()
        .context("cargo metadata lists no packages")?;
    let names: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut graph = Graph::new();
    for p in packages {
        let name = p["name"].as_str().context("a package without a name")?;
        let deps = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .filter_map(|d| d["name"].as_str())
            .filter(|d| names.contains(d) && *d != "seckill-hack")
            .map(str::to_owned)
            .collect();
        graph.insert(name.to_owned(), deps);
    }
    Ok(graph)
}

/// The graph of the crate under `root`.
pub fn graph_of(root: &Path) -> anyhow::Result<Graph> {
    let mut files: Vec<PathBuf> = crate::util::files_under(root)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    let mut sources = BTreeMap::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
        let module = module_of(root, &file);
        let is_mod_file = matches!(
            file.file_name().and_then(|n| n.to_str()),
            Some("mod.rs" | "lib.rs" | "main.rs")
        );
        sources.insert(module, (is_mod_file, text));
    }
    Ok(graph(&sources))
}

/// `lock/redlock.rs` → `lock::redlock`; `lock/mod.rs` → `lock`; `lib.rs` → `crate`.
pub fn module_of(root: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(root).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|p| matches!(p.as_str(), "mod" | "lib" | "main"))
    {
        parts.pop();
    }
    if parts.is_empty() {
        "crate".to_owned()
    } else {
        parts.join("::")
    }
}

/// The graph of modules given as name → (is a `mod.rs`/`lib.rs`/`main.rs`, text).
pub fn graph(sources: &BTreeMap<String, (bool, String)>) -> Graph {
    let path = Regex::new(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)").expect("a valid regex");
    let relative = Regex::new(r"(?:^|[^:\w])([a-z_][a-z0-9_]*)::").expect("a valid regex");
    let names: BTreeSet<&str> = sources.keys().map(String::as_str).collect();
    let mut edges = Graph::new();
    for (module, (is_mod_file, text)) in sources {
        let text = strip_comments(text);
        let mut deps = BTreeSet::new();
        let mut paths: Vec<(String, String)> = path
            .captures_iter(&text)
            .map(|c| (c[1].to_owned(), c[2].to_owned()))
            .collect();
        paths.extend(grouped(&text));
        for (kind, rest) in paths {
            let segments = rest.split("::").filter(|s| !s.is_empty() && *s != "self");
            let mut target: Vec<&str> = Vec::new();
            if kind == "super" && module != "crate" {
                // `super` of lock/redlock.rs is `lock`; of lock/mod.rs, the crate.
                target.extend(module.split("::"));
                target.pop();
            }
            target.extend(segments);
            if let Some(found) = resolve(&target, &names) {
                if found != module && found != "crate" {
                    deps.insert(found.to_owned());
                }
            }
        }
        if *is_mod_file {
            // A parent naming its children by relative path (`redlock::Redlock`
            // inside lock/mod.rs) imports them.
            let prefix = if module == "crate" {
                String::new()
            } else {
                format!("{module}::")
            };
            for c in relative.captures_iter(&text) {
                let child = format!("{prefix}{}", &c[1]);
                if names.contains(child.as_str()) && child != *module {
                    deps.insert(child);
                }
            }
        }
        edges.insert(module.clone(), deps);
    }
    edges
}

/// `use crate::{a, b::c, D}` → (crate, ::a), (crate, ::b), (crate, ::D):
/// the top-level items of each group (a nested group keeps its prefix).
fn grouped(text: &str) -> Vec<(String, String)> {
    let group = Regex::new(r"\b(crate|super)::\{").expect("a valid regex");
    let mut found = Vec::new();
    for m in group.captures_iter(text) {
        let kind = m[1].to_owned();
        let start = m.get(0).map_or(0, |g| g.end());
        let mut depth = 1;
        let mut end = start;
        for (i, ch) in text[start..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = start + i;
                break;
            }
        }
        let mut level = 0;
        let mut item = String::new();
        for ch in text[start..end].chars().chain(std::iter::once(',')) {
            if ch == ',' && level == 0 {
                let head = item.split("::{").next().unwrap_or("").trim();
                let head = head.split(" as ").next().unwrap_or("").trim();
                if !head.is_empty() {
                    found.push((kind.clone(), format!("::{head}")));
                }
                item.clear();
                continue;
            }
            match ch {
                '{' => level += 1,
                '}' => level -= 1,
                _ => {}
            }
            item.push(ch);
        }
    }
    found
}

/// The text without `/* … */` and `// …` comments.
fn strip_comments(text: &str) -> String {
    let block = Regex::new(r"(?s)/\*.*?\*/").expect("a valid regex");
    block
        .replace_all(text, "")
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The longest prefix of `target` that is a module.
fn resolve<'a>(target: &[&str], names: &BTreeSet<&'a str>) -> Option<&'a str> {
    (1..=target.len())
        .rev()
        .find_map(|n| names.get(target[..n].join("::").as_str()).copied())
}

/// Every strongly connected component of more than one module (Tarjan).
pub fn circles(graph: &Graph) -> Vec<Vec<String>> {
    #[derive(Default)]
    struct Walk<'g> {
        counter: usize,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        circles: Vec<Vec<String>>,
    }
    fn visit<'g>(graph: &'g Graph, v: &'g str, walk: &mut Walk<'g>) {
        walk.index.insert(v, walk.counter);
        walk.low.insert(v, walk.counter);
        walk.counter += 1;
        walk.stack.push(v);
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !walk.index.contains_key(w) {
                if graph.contains_key(w) {
                    visit(graph, w, walk);
                    let low = walk.low[v].min(walk.low[w]);
                    walk.low.insert(v, low);
                }
            } else if walk.stack.contains(&w) {
                let low = walk.low[v].min(walk.index[w]);
                walk.low.insert(v, low);
            }
        }
        if walk.low[v] == walk.index[v] {
            let mut component = Vec::new();
            while let Some(w) = walk.stack.pop() {
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                walk.circles.push(component);
            }
        }
    }
    let mut walk = Walk::default();
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            visit(graph, v, &mut walk);
        }
    }
    walk.circles
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(files: &[(&str, bool, &str)]) -> BTreeMap<String, (bool, String)> {
        files
            .iter()
            .map(|(m, is_mod, text)| ((*m).to_owned(), (*is_mod, (*text).to_owned())))
            .collect()
    }

    #[test]
    fn the_crate_graph_keeps_the_workspace_s_own_non_dev_dependencies() {
        let meta = serde_json::json!({"packages": [
            {"name": "seckill-faults", "dependencies": [
                {"name": "seckill-load", "kind": null},
                {"name": "seckill-hack", "kind": null},
                {"name": "tokio", "kind": null},
                {"name": "seckill-testkit", "kind": "dev"}]},
            {"name": "seckill-load", "dependencies": []},
            {"name": "seckill-hack", "dependencies": []},
            {"name": "seckill-testkit", "dependencies": [{"name": "seckill-faults", "kind": "dev"}]}
        ]});
        let graph = crate_graph_of(&meta).expect("a graph");
        assert_eq!(
            graph["seckill-faults"].iter().collect::<Vec<_>>(),
            ["seckill-load"]
        );
        assert!(graph["seckill-testkit"].is_empty());
        assert!(circles(&graph).is_empty());
        let mut back = graph;
        back.get_mut("seckill-load")
            .expect("load")
            .insert("seckill-faults".into());
        assert_eq!(circles(&back).len(), 1);
    }

    #[test]
    fn paths_groups_super_and_children_are_edges() {
        let graph = graph(&sources(&[
            (
                "crate",
                true,
                "mod lock; mod db; use crate::{db::Pool, error as e};",
            ),
            ("error", false, "// use crate::db;\npub struct E;"),
            ("db", false, "use crate::error::E;"),
            (
                "lock",
                true,
                "mod redlock; mod guard; pub use redlock::Redlock;",
            ),
            (
                "lock::redlock",
                false,
                "use crate::db::Pool; fn f() -> crate::error::E { todo!() }",
            ),
            ("lock::guard", false, "use super::redlock::Redlock;"),
        ]));
        let deps = |m: &str| graph[m].iter().cloned().collect::<Vec<_>>();
        assert_eq!(deps("crate"), ["db", "error"]);
        assert_eq!(deps("error"), Vec::<String>::new(), "a comment is no edge");
        assert_eq!(deps("lock"), ["lock::redlock"]);
        assert_eq!(deps("lock::redlock"), ["db", "error"]);
        assert_eq!(deps("lock::guard"), ["lock::redlock"]);
        assert!(circles(&graph).is_empty());
    }

    #[test]
    fn a_circle_is_found() {
        let graph = graph(&sources(&[
            ("a", false, "use crate::b::X;"),
            ("b", false, "use crate::c::Y;"),
            ("c", false, "use crate::a::Z;"),
            ("d", false, "use crate::a::Z;"),
        ]));
        assert_eq!(
            circles(&graph),
            [vec!["a".to_owned(), "b".into(), "c".into()]]
        );
    }

    #[test]
    fn module_names_follow_the_files() {
        let root = Path::new("app/src");
        assert_eq!(module_of(root, Path::new("app/src/lib.rs")), "crate");
        assert_eq!(module_of(root, Path::new("app/src/lock/mod.rs")), "lock");
        assert_eq!(
            module_of(root, Path::new("app/src/lock/redlock.rs")),
            "lock::redlock"
        );
    }
}
