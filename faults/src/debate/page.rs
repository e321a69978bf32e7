//! The debate's files, all from one [`DebateJson`]: the JSON, the English
//! page, the Chinese page (`zh/`), one curve per row and the trace of
//! every violation that refutes a "never" claim.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;

use super::doc::{counterexample, DebateJson, Measurements, RowJson};
use super::source::{Lang, SourceStanding};
use crate::scenario::locate::Bracket;
use crate::scenario::{Curve, Outcome, Rate, Standing};

/// Write every file of the debate under `dir`: `redlock-debate.json`,
/// `redlock-debate.md`, `zh/redlock-debate.md`, `redlock-debate/<row>.svg`
/// and `redlock-debate/counterexamples/<row>.json`.
pub fn write_all(doc: &DebateJson, measurements: &Measurements, dir: &Path) -> anyhow::Result<()> {
    let assets = dir.join("redlock-debate");
    let traces = assets.join("counterexamples");
    for folder in [
        dir.to_owned(),
        dir.join("zh"),
        assets.clone(),
        traces.clone(),
    ] {
        std::fs::create_dir_all(&folder).with_context(|| format!("create {}", folder.display()))?;
    }
    let write = |path: std::path::PathBuf, text: String| {
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))
    };
    write(
        dir.join("redlock-debate.json"),
        serde_json::to_string_pretty(doc)? + "\n",
    )?;
    write(dir.join("redlock-debate.md"), markdown(doc, Lang::En))?;
    write(
        dir.join("zh").join("redlock-debate.md"),
        markdown(doc, Lang::Zh),
    )?;
    for row in &doc.rows {
        write(assets.join(format!("{}.svg", row.id)), curve(row))?;
        // A kept row's trace was written by the run that measured it.
        if doc.rejudged || doc.kept.contains(&row.id) {
            continue;
        }
        if let Some(trace) = counterexample(row, measurements)? {
            write(
                traces.join(format!("{}.json", row.id)),
                serde_json::to_string_pretty(&trace)? + "\n",
            )?;
        }
    }
    Ok(())
}

/// `--rejudge`: the kept traces of the refuted rows, copied from `from`
/// (docs/) to `to` beside the pages written there.
pub fn copy_traces(doc: &DebateJson, from: &Path, to: &Path) -> anyhow::Result<()> {
    for trace in doc.rows.iter().filter_map(|r| r.counterexample.as_deref()) {
        let (src, dst) = (from.join(trace), to.join(trace));
        let same = src
            .canonicalize()
            .ok()
            .is_some_and(|s| dst.canonicalize().ok() == Some(s));
        if !same {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copy {} to {}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

/// The row's curve: both outcomes at every probe, the measured brackets
/// shaded, the model's boundaries as lines.
fn curve(row: &RowJson) -> String {
    let numeric = row.judged.probes.iter().all(|p| p.resolved.is_finite());
    let points = row
        .judged
        .probes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                if numeric { p.resolved } else { i as f64 },
                p.exclusion_broken,
                p.data_damaged,
            )
        })
        .collect();
    crate::scenario::draw_curve(&Curve {
        key: row.sweep.key.to_string(),
        points,
        model_flips: row.judged.model.boundaries.clone(),
        brackets: row
            .judged
            .brackets
            .iter()
            .map(|b| (b.below_resolved, b.above_resolved))
            .collect(),
    })
}

fn rate(r: Option<Rate>) -> String {
    r.map_or("—".into(), |r| r.text())
}

fn bracket_text(b: &Bracket, key: &str, lang: Lang) -> String {
    match lang {
        Lang::En => format!(
            "{} between {key}={} and {key}={}",
            if b.seen_below { "stops" } else { "starts" },
            b.below,
            b.above
        ),
        Lang::Zh => format!(
            "在 {key}={} 与 {key}={} 之间{}",
            b.below,
            b.above,
            if b.seen_below { "消失" } else { "出现" }
        ),
    }
}

fn model_text(row: &RowJson, lang: Lang) -> String {
    let m = &row.judged.model;
    let unit = if row.judged.probes.iter().all(|p| p.resolved.is_finite()) {
        match row
            .scenario
            .params()
            .iter()
            .find(|s| s.name == row.sweep.key)
            .map(|s| s.unit)
        {
            Some(crate::scenario::ParamUnit::Ms | crate::scenario::ParamUnit::MsOrFill) => " ms",
            Some(crate::scenario::ParamUnit::Number) if row.sweep.key.ends_with("_pct") => " %",
            Some(crate::scenario::ParamUnit::Count) if row.sweep.key.ends_with("_ms") => " ms",
            _ => "",
        }
    } else {
        ""
    };
    let at: Vec<String> = m
        .boundaries
        .iter()
        .map(|x| format!("{x:.1}{unit}"))
        .collect();
    let boundary = match (at.is_empty(), lang) {
        (true, Lang::En) => "no boundary in range".to_owned(),
        (true, Lang::Zh) => "范围内无边界".to_owned(),
        (false, Lang::En) => format!("boundary at {}", at.join(", ")),
        (false, Lang::Zh) => format!("边界在 {}", at.join("、")),
    };
    // How far each flip missed its bracket: a stop seen a millisecond
    // late reads differently from a model off by a hundred.
    let missed: Vec<String> = m
        .misses
        .iter()
        .zip(&m.boundaries)
        .filter_map(|(miss, x)| Some((miss.filter(|d| *d > 0.0)?, x)))
        .map(|(d, x)| match lang {
            Lang::En => format!("{x:.1}{unit} lies {d:.1}{unit} outside"),
            Lang::Zh => format!("{x:.1}{unit} 差 {d:.1}{unit}"),
        })
        .collect();
    let inside = match (m.inside_bracket, lang) {
        (Some(true), Lang::En) => ", inside the bracket".to_owned(),
        (Some(false), Lang::En) if missed.is_empty() => {
            ", NOT inside the bracket (a measured flip the model does not predict)".to_owned()
        }
        (Some(false), Lang::En) => format!(", NOT inside the bracket: {}", missed.join(", ")),
        (Some(true), Lang::Zh) => "，落在区间内".to_owned(),
        (Some(false), Lang::Zh) if missed.is_empty() => {
            "，不在区间内（测得的翻转模型没有预测）".to_owned()
        }
        (Some(false), Lang::Zh) => format!("，不在区间内：{}", missed.join("、")),
        (None, _) => String::new(),
    };
    match lang {
        Lang::En => format!(
            "{} ({boundary}{inside})",
            row.judged.model_standing.as_str()
        ),
        Lang::Zh => {
            let word = match row.judged.model_standing {
                Standing::Agrees => "一致",
                Standing::Contradicts => "矛盾",
                Standing::Undecided => "未定",
            };
            format!("{word}（{boundary}{inside}）")
        }
    }
}

fn cite(row: &RowJson, lang: Lang) -> String {
    if row.source.url.is_empty() {
        return match lang {
            Lang::En => "derived by this project".into(),
            Lang::Zh => "本项目自己的论断".into(),
        };
    }
    format!(
        "{}, [\"{}\"]({}) ({})",
        row.source.author, row.source.title, row.source.url, row.source.year
    )
}

fn quote(row: &RowJson, lang: Lang) -> String {
    match (row.quote.is_empty(), lang) {
        (true, _) => String::new(),
        (false, Lang::En) => format!(" — “{}”", row.quote),
        (false, Lang::Zh) => format!(" — “{}”（{}）", row.quote, row.quote_zh),
    }
}

/// The Chinese words, or the English where a row kept from a JSON older
/// than them has none.
fn zh_or_en<'a>(zh: &'a str, en: &'a str) -> &'a str {
    if zh.is_empty() {
        en
    } else {
        zh
    }
}

fn standing_word(s: SourceStanding, lang: Lang) -> &'static str {
    match lang {
        Lang::En => s.as_str(),
        Lang::Zh => s.zh(),
    }
}

/// One page, in `lang`, in the order it reads.
///
/// Over 80 lines on purpose: one document's Markdown, top to bottom.
fn markdown(doc: &DebateJson, lang: Lang) -> String {
    let en = lang == Lang::En;
    let up = if en { "" } else { "../" };
    let mut md = String::new();
    let t = doc.tally();
    if en {
        md.push_str("# The Redlock debate, judged against its sources\n\n");
        let _ = writeln!(
            md,
            "Generated by `seckill-loadgen debate` ({} build) in {:.0} s; [中文](zh/redlock-debate.md). \
             Each claim is judged **as its source states it**: a claim that something *never* happens is \
             supported only by 0 of n injections wherever it applies (the 95 % upper bound on the rate is \
             given) and refuted by one violation, whose trace is kept; a claim that something *can* happen \
             is supported by one proven injection. {} injections planned at every point of every sweep (a round \
             whose injection could not be proven does not count: each point shows the n that landed); where two \
             neighbouring points differ, the runner bisects between them until the bracket is at most 5 % \
             of the TTL (a duration) or 1 (a slew, %) wide; a bisection probe of a duration is written in ms. Our model's prediction is a separate column: it \
             agrees when its boundary lies inside the measured bracket and every fixed point of the sweep \
             lies on its side of the {:.0} % line (a point whose 95 % interval straddles the line is \
             undecided, and so is the model on that row unless another point contradicts it). \
             Each row's `Rerun` command measures it again under a folder of its own.\n",
            doc.profile,
            doc.duration_s,
            doc.injections_per_point,
            doc.decision_rate * 100.0
        );
        if !doc.reused.is_empty() {
            let _ = writeln!(
                md,
                "{} of the runs were read back from the reports an earlier run kept (`--reuse`): the time above is not theirs; each run's own report (`scenarios.json` under the debate's `--out`) holds its cases' durations. Read back: {}.\n",
                doc.reused.len(),
                doc.reused.join(", ")
            );
        }
        if !doc.kept.is_empty() {
            let _ = writeln!(
                md,
                "{} of the rows were measured by an earlier run and kept as it measured them (`debate --rows ID --write-docs` measures only its rows): {}.\n",
                doc.kept.len(),
                doc.kept.join(", ")
            );
        }
        if doc.rejudged {
            md.push_str(
                "Judged again: every row's verdicts were derived again by `seckill-loadgen debate --rejudge` from the probes this page keeps, under a later build's claims, rules and words; no injection was run again for them.\n\n",
            );
        }
        let _ = writeln!(
            md,
            "**The sources: {} supported, {} refuted, {} undecided. Our model: {} agrees, {} contradicts, {} undecided.**\n",
            t.supported,
            t.refuted,
            t.undecided,
            t.agrees,
            t.contradicts,
            t.model_undecided
        );
        md.push_str(
            "| # | source | claim, as stated | the source's verdict | measured | our model |\n",
        );
    } else {
        md.push_str("# Redlock 之争：逐条对照原文\n\n");
        let _ = writeln!(
            md,
            "由 `seckill-loadgen debate`（{} 构建）生成，用时 {:.0} 秒；[English](../redlock-debate.md)。\
             每条论断都按**原文的说法**判定：说某事“永远不会”发生的论断，只有在它适用的每一处都是 n 次注入中 0 次才算成立\
             （同时给出发生率的 95% 置信上界），一次违例就推翻它，并保存那次违例的轨迹；说某事“可能”发生的论断，\
             一次被证实的注入就算成立。每个扫描点计划 {} 次注入（无法证实生效的那一轮不计入：每个点给出实际生效的 n）；相邻两点结果不同时，在两点之间二分，直到区间不超过 TTL 的 5%\
             （时长）或 1（时钟偏快，%）。我们自己模型的预测单列一栏：它的边界落在测得的区间内、且扫描的每个固定点都在 {:.0}% \
             线的预测一侧时，才算一致（95% 区间跨过这条线的点记为未定；若没有别的点与模型矛盾，这一行的模型也记为未定）。\
             每行的“重跑”命令会在它自己的目录下重新测量这一行。命令与英文版完全相同。\n",
            doc.profile,
            doc.duration_s,
            doc.injections_per_point,
            doc.decision_rate * 100.0
        );
        if !doc.kept.is_empty() {
            let _ = writeln!(
                md,
                "其中 {} 行由更早的一次运行测得，按原样保留（`debate --rows ID --write-docs` 只测它列出的行）：{}。\n",
                doc.kept.len(),
                doc.kept.join(", ")
            );
        }
        if doc.rejudged {
            md.push_str(
                "重新判定：每一行的判定都由 `seckill-loadgen debate --rejudge` 依据本页保留的探测点、按后来构建的论断、规则和措辞重新得出；没有为此重跑任何注入。\n\n",
            );
        }
        let _ = writeln!(
            md,
            "**原文论断：{} 条成立，{} 条被推翻，{} 条未定。我们的模型：{} 条一致，{} 条矛盾，{} 条未定。**\n",
            t.supported,
            t.refuted,
            t.undecided,
            t.agrees,
            t.contradicts,
            t.model_undecided
        );
        md.push_str("| # | 出处 | 论断（原文的说法） | 对原文的判定 | 测得 | 我们的模型 |\n");
    }
    md.push_str("|---:|---|---|---|---|---|\n");
    for (i, r) in doc.rows.iter().enumerate() {
        let measured = r
            .judged
            .brackets
            .iter()
            .map(|b| bracket_text(b, &r.sweep.key, lang))
            .collect::<Vec<_>>()
            .join("; ");
        let measured = if measured.is_empty() {
            let seen = r
                .judged
                .probes
                .iter()
                .filter(|p| p.seen(r.outcome) == Some(true))
                .count();
            match (en, seen) {
                (true, 0) => "seen at no probe".to_owned(),
                (true, n) if n == r.judged.probes.len() => "seen at every probe".to_owned(),
                (true, _) => "mixed (undecided probes)".to_owned(),
                (false, 0) => "所有探测点都没出现".to_owned(),
                (false, n) if n == r.judged.probes.len() => "每个探测点都出现".to_owned(),
                (false, _) => "不一（有未定的探测点）".to_owned(),
            }
        } else {
            measured
        };
        let _ = writeln!(
            md,
            "| [{}](#{}-{}) | {}{} | {} | **{}** — {} | {} | {} |",
            i + 1,
            i + 1,
            r.id,
            cite(r, lang),
            quote(r, lang),
            if en { &r.claim } else { &r.claim_zh },
            standing_word(r.judged.source_standing, lang),
            if en {
                &r.judged.source_evidence
            } else {
                &r.judged.source_evidence_zh
            },
            measured,
            model_text(r, lang)
        );
    }
    md.push_str(if en {
        "\n## Row by row\n"
    } else {
        "\n## 逐条\n"
    });
    for (i, r) in doc.rows.iter().enumerate() {
        // GitHub's anchor of "### 3. some-id" is "#3-some-id".
        let _ = writeln!(md, "\n### {}. {}\n", i + 1, r.id);
        let outcome = match (r.outcome, en) {
            (Outcome::ExclusionBroken, true) => "exclusion broken",
            (Outcome::DataDamaged, true) => "data damaged",
            (Outcome::Stalled, true) => "stalled",
            (Outcome::Refused, true) => "newer holder refused",
            (Outcome::ExclusionBroken, false) => "互斥被破坏",
            (Outcome::DataDamaged, false) => "数据被损坏",
            (Outcome::Stalled, false) => "停滞",
            (Outcome::Refused, false) => "较新的持有者被 fencing 拒绝",
        };
        let kind = match (r.claim_kind, en) {
            (super::rows::Kind::Never, true) => "never",
            (super::rows::Kind::CanHappen, true) => "can happen",
            (super::rows::Kind::Never, false) => "永远不会",
            (super::rows::Kind::CanHappen, false) => "可能发生",
        };
        if en {
            let _ = writeln!(md, "- **Source**: {}{}", cite(r, lang), quote(r, lang));
            let _ = writeln!(
                md,
                "- **Claim**: {} — *{kind}* ({outcome}), {}",
                r.claim, r.claim_applies
            );
            let _ = writeln!(
                md,
                "- **The source's verdict**: **{}** — {}",
                r.judged.source_standing.as_str(),
                r.judged.source_evidence
            );
            let _ = writeln!(md, "- **Mechanism**: {}", r.mechanism);
            let _ = writeln!(
                md,
                "- **Our model**: {} — {}",
                r.predicts,
                model_text(r, lang)
            );
        } else {
            let _ = writeln!(md, "- **出处**：{}{}", cite(r, lang), quote(r, lang));
            let _ = writeln!(md, "- **论断**：{}——*{kind}*（{outcome}）", r.claim_zh);
            let _ = writeln!(
                md,
                "- **对原文的判定**：**{}**——{}",
                r.judged.source_standing.zh(),
                r.judged.source_evidence_zh
            );
            let _ = writeln!(
                md,
                "- **机制**：{}",
                zh_or_en(&r.mechanism_zh, &r.mechanism)
            );
            let _ = writeln!(
                md,
                "- **我们的模型**：{}——{}",
                zh_or_en(&r.predicts_zh, &r.predicts),
                model_text(r, lang)
            );
        }
        let fixed: Vec<String> = r.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            md,
            "- **{}**: `{}` · `{}`{} · `{}` ({})",
            if en { "Sweep" } else { "扫描" },
            r.scenario.name(),
            r.strategy,
            r.variant.map_or(String::new(), |v| format!(" · `{v}`")),
            r.sweep.key,
            fixed.join(", ")
        );
        if let Some(path) = &r.counterexample {
            let _ = writeln!(
                md,
                "- **{}**: [{path}]({up}{path})",
                if en {
                    "Counterexample (trace)"
                } else {
                    "反例（轨迹）"
                }
            );
        }
        let (rerun, fixed_alone) = if en {
            ("Rerun", "the fixed points alone")
        } else {
            ("重跑", "只跑固定点")
        };
        let _ = writeln!(
            md,
            "- **{rerun}**: `{}` ({fixed_alone}: `{}`)\n",
            r.command, r.scenario_command
        );
        probe_table(&mut md, r, en);
        let _ = writeln!(md, "\n![{}]({up}{})", r.id, r.curve);
    }
    md
}

/// A row's probes, both outcomes at each, and the stall or the refused
/// newer holder where the run measures one.
fn probe_table(md: &mut String, r: &RowJson, en: bool) {
    let probes = &r.judged.probes;
    let stalled = probes.iter().any(|p| p.stalled.is_some());
    let refused = probes.iter().any(|p| p.refused.is_some());
    let mut head = vec![
        r.sweep.key.to_string(),
        if en {
            "exclusion broken"
        } else {
            "互斥被破坏"
        }
        .to_owned(),
        if en {
            "data damaged"
        } else {
            "数据被损坏"
        }
        .to_owned(),
    ];
    if stalled {
        head.push(if en { "stalled" } else { "停滞" }.to_owned());
    }
    if refused {
        head.push(
            if en {
                "newer holder refused"
            } else {
                "较新的持有者被拒绝"
            }
            .to_owned(),
        );
    }
    let _ = writeln!(
        md,
        "| {} |\n|{}",
        head.join(" | "),
        "---|".repeat(head.len())
    );
    for p in probes {
        let mut cells = vec![
            p.value.clone(),
            rate(p.exclusion_broken),
            rate(p.data_damaged),
        ];
        if stalled {
            cells.push(rate(p.stalled));
        }
        if refused {
            cells.push(rate(p.refused));
        }
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
}
