//! `make check-lengths` — no function over [`LIMIT`] lines without a
//! stated reason.
//!
//! Every `.rs` file under the folders given is parsed as the compiler's
//! parser (syn) reads it; every function with a body — free functions,
//! methods, trait defaults, nested ones — is measured from its signature
//! to its closing brace. Test code is left out: a module or a function
//! under `#[cfg(test)]` or `#[test]`, and the `tests/` folders (not given).
//! A longer function passes only when its doc comment says why it is
//! long, in words containing "over 80 lines" (a dispatch of one arm per
//! subcommand, a document's markup in order, a scenario's steps read top
//! to bottom).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use syn::visit::Visit;

/// The longest a function may be without a stated reason.
pub const LIMIT: usize = 80;

/// How many functions may say why they are longer: markup, tables and
/// algorithms as taught. Steps in order are split into named steps.
pub const MOST_EXEMPT: usize = 12;

/// One function over the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Long {
    pub name: String,
    pub line: usize,
    pub lines: usize,
    /// Its doc comment says why.
    pub reasoned: bool,
}

/// Every function over [`LIMIT`] lines in `source`, test code left out.
pub fn long_functions(source: &str) -> syn::Result<Vec<Long>> {
    let file = syn::parse_file(source)?;
    let mut finder = Finder { found: Vec::new() };
    finder.visit_file(&file);
    Ok(finder.found)
}

struct Finder {
    found: Vec<Long>,
}

/// Whether `attrs` mark test code.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg")
                && a.meta
                    .require_list()
                    .is_ok_and(|l| l.tokens.to_string().split_whitespace().any(|t| t == "test")))
            || a.path().segments.last().is_some_and(|s| s.ident == "test")
    })
}

/// The doc comment of `attrs`, its lines joined by spaces.
fn doc(attrs: &[syn::Attribute]) -> String {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Finder {
    fn measure(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature, body: &syn::Block) {
        let first = sig.fn_token.span.start().line;
        let last = body.brace_token.span.close().end().line;
        let lines = last.saturating_sub(first) + 1;
        if lines > LIMIT {
            let said = doc(attrs).split_whitespace().collect::<Vec<_>>().join(" ");
            self.found.push(Long {
                name: sig.ident.to_string(),
                line: first,
                lines,
                reasoned: said.to_lowercase().contains("over 80 lines"),
            });
        }
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            self.measure(&item.attrs, &item.sig, &item.block);
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test(&item.attrs) {
            self.measure(&item.attrs, &item.sig, &item.block);
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let (false, Some(body)) = (is_test(&item.attrs), &item.default) {
            self.measure(&item.attrs, &item.sig, body);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}

/// `make check-lengths`: every folder's functions; fails on one over the
/// limit with no reason given, naming it, and on more than
/// [`MOST_EXEMPT`] with a reason, naming them all.
pub fn check(folders: &[PathBuf]) -> anyhow::Result<()> {
    let mut unreasoned = Vec::new();
    let mut reasoned = Vec::new();
    for folder in folders {
        let mut files: Vec<PathBuf> = crate::util::files_under(folder)?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        files.sort();
        for file in files {
            for long in in_file(&file)? {
                let line = format!(
                    "{}:{} fn {}: {} lines",
                    file.display(),
                    long.line,
                    long.name,
                    long.lines
                );
                if long.reasoned {
                    reasoned.push(line);
                } else {
                    unreasoned.push(line);
                }
            }
        }
    }
    crate::util::say(&format!(
        "check-lengths: {} function(s) over {LIMIT} lines, each saying why (at most {MOST_EXEMPT})",
        reasoned.len()
    ));
    if reasoned.len() > MOST_EXEMPT {
        for line in &reasoned {
            eprintln!("  {line}");
        }
        bail!(
            "{} functions over {LIMIT} lines say why, more than {MOST_EXEMPT}: only markup, tables and algorithms as taught may; split the steps in order into named steps",
            reasoned.len()
        );
    }
    if !unreasoned.is_empty() {
        for line in &unreasoned {
            eprintln!("  {line}");
        }
        bail!(
            "{} function(s) over {LIMIT} lines with no reason in their doc (\"over 80 lines …\"): split them, or say why",
            unreasoned.len()
        );
    }
    Ok(())
}

fn in_file(file: &Path) -> anyhow::Result<Vec<Long>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("read {}", file.display()))?;
    long_functions(&text).with_context(|| format!("parse {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("    let _x{i} = {i};\n"))
            .collect()
    }

    #[test]
    fn a_long_function_is_found_with_its_line_and_length() {
        let source = format!("fn short() {{}}\n\nfn long() {{\n{}}}\n", body(85));
        let found = long_functions(&source).expect("parses");
        assert_eq!(
            found,
            [Long {
                name: "long".into(),
                line: 3,
                lines: 87,
                reasoned: false
            }]
        );
    }

    #[test]
    fn a_stated_reason_methods_and_test_code() {
        let source = format!(
            "/// A dispatch: over 80\n/// lines on purpose.\nfn said() {{\n{b}}}\n\
             struct S;\nimpl S {{\n    fn method(&self) {{\n{b}    }}\n}}\n\
             #[cfg(test)]\nmod tests {{\n    fn helper() {{\n{b}    }}\n}}\n\
             #[test]\nfn a_test() {{\n{b}}}\n",
            b = body(85)
        );
        let found = long_functions(&source).expect("parses");
        let names: Vec<(&str, bool)> = found
            .iter()
            .map(|l| (l.name.as_str(), l.reasoned))
            .collect();
        assert_eq!(names, [("said", true), ("method", false)]);
    }
}
