//! `make cheatsheet` / `make check-cheatsheet` — docs/cheatsheet.md printed
//! on one A4 page.
//!
//! The cheat sheet is written in a small part of Markdown — headings,
//! paragraphs, one pipe table, `code`, `**bold**` and `[links](target)` — and
//! this turns exactly that part into HTML with print CSS (A4 landscape,
//! small type, the table on the whole width), parsed by pulldown-cmark.
//! Anything else in the page (a list, a code block, a second-level
//! heading) stops it with the line number, rather than printing raw
//! Markdown. Headless Chromium prints the HTML (`--print-to-pdf`),
//! `pdfinfo` checks it is exactly one A4 page, and `make cheatsheet` keeps
//! the PDF in docs/cheatsheet.pdf and draws its picture with `pdftoppm`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context};
use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// The page's style: A4 landscape, small type, the table's columns sized.
const CSS: &str = r#"
@page { size: A4 landscape; margin: 7mm 9mm; }
* { box-sizing: border-box; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { margin: 0; font: 7.5pt/1.24 "DejaVu Sans", "Liberation Sans", Arial, sans-serif; color: #111; }
h1 { font-size: 13pt; margin: 0 0 1.2mm; }
h1 small { font-size: 7.5pt; font-weight: normal; color: #555; margin-left: 3mm; }
p { margin: 0 0 1.4mm; }
code { font: 7pt "DejaVu Sans Mono", "Liberation Mono", monospace; background: #eef1f6; padding: 0 .5mm; border-radius: .6mm; }
table { width: 100%; border-collapse: collapse; margin: 1.2mm 0 1.8mm; table-layout: fixed; }
th, td { border: .2mm solid #9aa3b5; padding: .35mm 1mm; vertical-align: top; text-align: left; }
th { background: #dfe5f0; font-size: 7.4pt; }
tr:nth-child(even) td { background: #f6f8fb; }
td:first-child { white-space: nowrap; font-weight: bold; }
col.strategy { width: 12%; } col.lineage { width: 19%; } col.guarantee { width: 13%; }
col.fails { width: 31%; } col.shown { width: 25%; }
a { color: inherit; text-decoration: none; }
"#;

/// The classes of the table's columns, in order (the CSS sizes them).
const COLUMNS: [&str; 5] = ["strategy", "lineage", "guarantee", "fails", "shown"];

/// `&`, `<`, `>` and `"` as entities.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The table's rows must have the header's cells (pulldown-cmark would pad
/// or cut them silently).
fn check_cells(markdown: &str, source: &str) -> anyhow::Result<()> {
    let cells = |line: &str| line.trim().trim_matches('|').split('|').count();
    let mut header: Option<usize> = None;
    for (n, line) in markdown.lines().enumerate() {
        if !line.starts_with('|') {
            header = None;
            continue;
        }
        match header {
            None => header = Some(cells(line)),
            Some(h) if cells(line) != h && !line.contains("---") => {
                bail!(
                    "{source}:{}: {} cells, the header has {h}",
                    n + 1,
                    cells(line)
                )
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// docs/cheatsheet.md as one printable HTML page; `source` names it in the
/// title line and in errors.
pub fn html(markdown: &str, source: &str) -> anyhow::Result<String> {
    check_cells(markdown, source)?;
    let line_of = |at: usize| markdown[..at].matches('\n').count() + 1;
    let mut body = String::new();
    let mut title = String::from("cheat sheet");
    let mut in_title = false;
    let mut in_head = false;
    for (event, range) in Parser::new_ext(markdown, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading {
                level: HeadingLevel::H1,
                ..
            }) => {
                in_title = true;
                title.clear();
                body.push_str("<h1>");
            }
            Event::End(TagEnd::Heading(HeadingLevel::H1)) => {
                in_title = false;
                let _ = writeln!(
                    body,
                    "<small>{} · make cheatsheet</small></h1>",
                    escape(source)
                );
            }
            Event::Start(Tag::Paragraph) => body.push_str("<p>"),
            Event::End(TagEnd::Paragraph) => body.push_str("</p>\n"),
            Event::Start(Tag::Table(aligns)) => {
                body.push_str("<table><colgroup>");
                for n in 0..aligns.len() {
                    match COLUMNS.get(n) {
                        Some(class) => {
                            let _ = write!(body, "<col class=\"{class}\">");
                        }
                        None => body.push_str("<col>"),
                    }
                }
                body.push_str("</colgroup>");
            }
            Event::End(TagEnd::Table) => body.push_str("</table>\n"),
            Event::Start(Tag::TableHead) => {
                in_head = true;
                body.push_str("<tr>");
            }
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                body.push_str("</tr>");
            }
            Event::Start(Tag::TableRow) => body.push_str("<tr>"),
            Event::End(TagEnd::TableRow) => body.push_str("</tr>"),
            Event::Start(Tag::TableCell) => body.push_str(if in_head { "<th>" } else { "<td>" }),
            Event::End(TagEnd::TableCell) => body.push_str(if in_head { "</th>" } else { "</td>" }),
            Event::Start(Tag::Strong) => body.push_str("<strong>"),
            Event::End(TagEnd::Strong) => body.push_str("</strong>"),
            // A link prints as its text: paper has no targets.
            Event::Start(Tag::Link { .. }) | Event::End(TagEnd::Link) => {}
            Event::Text(text) => {
                if in_title {
                    title.push_str(&text);
                }
                body.push_str(&escape(&text));
            }
            Event::Code(code) => {
                let _ = write!(body, "<code>{}</code>", escape(&code));
            }
            Event::SoftBreak => body.push(' '),
            other => bail!(
                "{source}:{}: only a title, paragraphs and one table are printed, not {other:?}",
                line_of(range.start)
            ),
        }
    }
    Ok(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{CSS}</style></head>\n<body>\n{body}</body></html>\n",
        escape(&title)
    ))
}

/// The sheets: the Markdown, the PDF kept beside it, its `<html lang>`.
const SHEETS: [(&str, &str, &str); 2] = [
    ("docs/cheatsheet.md", "docs/cheatsheet.pdf", "en"),
    ("docs/zh/cheatsheet.md", "docs/zh/cheatsheet.pdf", "zh-CN"),
];

/// `make cheatsheet` (`check`: only print and check, keep nothing): every
/// sheet of [`SHEETS`].
pub fn make(check: bool) -> anyhow::Result<()> {
    for (source, kept, lang) in SHEETS {
        print_one(source, kept, lang, check)?;
    }
    Ok(())
}

/// Print `source` to PDF, check it is one A4 page, and (unless `check`)
/// keep it as `kept` with a picture of it.
fn print_one(source: &str, kept: &str, lang: &str, check: bool) -> anyhow::Result<()> {
    let markdown = std::fs::read_to_string(source)
        .with_context(|| format!("read {source} (run from the checkout's root)"))?;
    let work = Path::new(".state/cheatsheet").join(lang);
    std::fs::create_dir_all(&work).with_context(|| format!("create {}", work.display()))?;
    let page = work.join("cheatsheet.html");
    let pdf = work.join("cheatsheet.pdf");
    let html = html(&markdown, source)?.replacen(
        "<html lang=\"en\">",
        &format!("<html lang=\"{lang}\">"),
        1,
    );
    std::fs::write(&page, html).context("write the page")?;
    let profile = work.join("chromium-profile");
    let page_url = format!("file://{}", std::fs::canonicalize(&page)?.display());
    let printed = Command::new("/usr/bin/chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .args(["--no-first-run", "--no-pdf-header-footer"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(&page_url)
        .output()
        .context("run /usr/bin/chromium (apt-get install chromium)")?;
    let _ = std::fs::remove_dir_all(&profile);
    if !printed.status.success() || std::fs::metadata(&pdf).map_or(true, |m| m.len() == 0) {
        bail!("chromium could not print {}", page.display());
    }
    let info = Command::new("pdfinfo")
        .arg(&pdf)
        .output()
        .context("run pdfinfo (apt-get install poppler-utils)")?;
    let info = String::from_utf8_lossy(&info.stdout);
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim_start_matches(':').trim().to_owned())
            .unwrap_or_default()
    };
    let (pages, size) = (field("Pages"), field("Page size"));
    if pages != "1" || !size.contains("(A4)") {
        bail!("{source} prints on {pages} page(s) of {size}: it must fit one A4 page (shorten it, or tighten lab/src/cheatsheet.rs's CSS)");
    }
    crate::util::say(&format!("cheat sheet {source}: {pages} page, {size}"));
    if !check {
        std::fs::copy(&pdf, kept).with_context(|| format!("copy to {kept}"))?;
        let drawn = Command::new("pdftoppm")
            .args(["-png", "-r", "110", "-singlefile", kept])
            .arg(work.join("cheatsheet"))
            .status()
            .context("run pdftoppm")?;
        if !drawn.success() {
            bail!("pdftoppm could not draw {kept}");
        }
        crate::util::say(&format!(
            "wrote {kept}; its picture: {}",
            work.join("cheatsheet.png").display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_small_part_of_markdown_becomes_html() {
        let page = html(
            "# Sheet <1>\n\nOne `code` and **bold** [link](x.md)\nwrapped.\n\n| a | b |\n|---|---|\n| `x` | y & z |\n",
            "docs/c.md",
        )
        .expect("converted");
        assert!(
            page.contains("<h1>Sheet &lt;1&gt;<small>docs/c.md · make cheatsheet</small></h1>"),
            "{page}"
        );
        assert!(
            page.contains("<p>One <code>code</code> and <strong>bold</strong> link wrapped.</p>"),
            "{page}"
        );
        assert!(
            page.contains("<colgroup><col class=\"strategy\"><col class=\"lineage\"></colgroup>"),
            "{page}"
        );
        assert!(
            page.contains(
                "<tr><th>a</th><th>b</th></tr><tr><td><code>x</code></td><td>y &amp; z</td></tr>"
            ),
            "{page}"
        );
        assert!(page.contains("<title>Sheet &lt;1&gt;</title>"), "{page}");
    }

    #[test]
    fn anything_else_is_refused_with_its_line() {
        let list = html("# T\n\npara\n\n- a list\n", "c.md").expect_err("a list");
        assert!(
            list.to_string().starts_with("c.md:5: only a title"),
            "{list}"
        );
        let block = html("# T\n\n```sh\nls\n```\n", "c.md").expect_err("a code block");
        assert!(block.to_string().starts_with("c.md:3:"), "{block}");
        let cells =
            html("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n", "c.md").expect_err("a row too long");
        assert_eq!(cells.to_string(), "c.md:3: 3 cells, the header has 2");
    }
}
