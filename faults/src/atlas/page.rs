//! The atlas's files, all from one [`AtlasJson`]: `atlas.json`, the
//! English page `atlas.md`, the Chinese page `zh/atlas.md`, and the map
//! `atlas/atlas.svg` (strategies by faults, each cell coloured by where it
//! breaks, marked exclusion only or data too).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;

use super::cell::{AtlasJson, Cell, CellJson};
use super::faults::{family, fault, FAULTS};
use seckill_load::api::{Kind, StrategyName};

/// Write every file under `dir`.
pub fn write_all(doc: &AtlasJson, dir: &Path) -> anyhow::Result<()> {
    for folder in [dir.to_owned(), dir.join("zh"), dir.join("atlas")] {
        std::fs::create_dir_all(&folder).with_context(|| format!("create {}", folder.display()))?;
    }
    let write = |path: std::path::PathBuf, text: String| {
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))
    };
    write(
        dir.join("atlas.json"),
        serde_json::to_string_pretty(doc)? + "\n",
    )?;
    write(dir.join("atlas.md"), markdown(doc, Lang::En))?;
    write(dir.join("zh").join("atlas.md"), markdown(doc, Lang::Zh))?;
    write(dir.join("atlas").join("atlas.svg"), svg(doc))?;
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    En,
    Zh,
}

/// The unit a cell's sizes are written in.
fn unit(c: &CellJson) -> &'static str {
    if c.dial.ends_with("_pct") {
        " %"
    } else {
        " ms"
    }
}

/// A size as a multiple of the TTL, where the dial is a duration and the
/// cell has a TTL.
fn in_ttl(c: &CellJson, x: f64) -> Option<f64> {
    let ttl = c.ttl_ms.filter(|t| *t > 0)?;
    // Only where the column's range is itself in TTLs (a pause, a delay,
    // a jump): a commit delay or an outage reads better in ms.
    fault(&c.fault)
        .is_some_and(|f| f.hi.ends_with("ttl"))
        .then(|| x / ttl as f64)
}

/// The short text of one outcome in the map's table.
fn short(c: &CellJson, cell: &Cell, lang: Lang) -> String {
    let size = |x: f64, typed: &str| match in_ttl(c, x) {
        Some(m) => format!("{m:.2}×"),
        None => format!("{typed}{}", unit(c).trim()),
    };
    match cell {
        Cell::Bracket { bracket: b, .. } => format!(
            "{}{}–{}{}",
            if b.seen_below { "≤" } else { "" },
            size(b.below_resolved, &b.below),
            size(b.above_resolved, &b.above),
            if b.more.is_empty() {
                String::new()
            } else {
                format!(" (+{} flip)", b.more.len())
            }
        ),
        Cell::Holds {
            holds_up_to,
            probes,
            ..
        } => {
            let x = probes.last().map_or(f64::NAN, |p| p.resolved);
            match lang {
                Lang::En => format!("ok ≤{}", size(x, holds_up_to)),
                Lang::Zh => format!("成立 ≤{}", size(x, holds_up_to)),
            }
        }
        Cell::Breaks {
            breaks_from,
            probes,
            ..
        } => {
            let x = probes.first().map_or(f64::NAN, |p| p.resolved);
            match lang {
                Lang::En => format!("all ≥{}", size(x, breaks_from)),
                Lang::Zh => format!("全部 ≥{}", size(x, breaks_from)),
            }
        }
        Cell::Undecided { .. } => "?".into(),
        Cell::NotApplicable { .. } => "n/a".into(),
    }
}

/// A cell of the map's table: `E …` and `D …` where measured.
fn map_cell(c: &CellJson, lang: Lang) -> String {
    if matches!(c.exclusion, Cell::NotApplicable { .. }) {
        return "n/a".into();
    }
    let stall = c
        .stalled
        .as_ref()
        .map_or_else(String::new, |s| format!(" · S {}", short(c, s, lang)));
    format!(
        "E {} · D {}{stall}",
        short(c, &c.exclusion, lang),
        short(c, &c.data, lang)
    )
}

fn cell_of<'a>(doc: &'a AtlasJson, s: StrategyName, f: &str) -> Option<&'a CellJson> {
    doc.cells
        .iter()
        .find(|c| c.strategy == s.as_str() && c.fault == f)
}

/// The strategies and the faults that have a cell, in order: every one
/// in a whole atlas, the chosen ones in a run of some cells.
fn present(doc: &AtlasJson) -> (Vec<StrategyName>, Vec<&'static super::faults::Fault>) {
    let rows = StrategyName::ALL
        .into_iter()
        .filter(|s| doc.cells.iter().any(|c| c.strategy == s.as_str()))
        .collect();
    let columns = FAULTS
        .iter()
        .filter(|f| doc.cells.iter().any(|c| c.fault == f.id))
        .collect();
    (rows, columns)
}

/// The families present, each with its strategies, in teaching order.
fn families(doc: &AtlasJson) -> Vec<(Kind, Vec<StrategyName>)> {
    let mut out: Vec<(Kind, Vec<StrategyName>)> = Vec::new();
    for s in StrategyName::ALL {
        let Some(kind) = doc
            .cells
            .iter()
            .filter(|c| c.strategy == s.as_str())
            .find_map(|c| c.kind)
        else {
            continue;
        };
        // `none` and `local-mutex` are one family: no shared lock.
        match out.iter_mut().find(|(k, _)| family(*k) == family(kind)) {
            Some((_, members)) => members.push(s),
            None => out.push((kind, vec![s])),
        }
    }
    out
}

/// What the map shows of one family: the faults that broke exclusion and
/// those that damaged data, for any member.
fn family_findings(doc: &AtlasJson, members: &[StrategyName], lang: Lang) -> String {
    let mut excl = Vec::new();
    let mut data = Vec::new();
    let mut held = Vec::new();
    for f in FAULTS {
        let cells: Vec<&CellJson> = members
            .iter()
            .filter_map(|s| cell_of(doc, *s, f.id))
            .filter(|c| !matches!(c.exclusion, Cell::NotApplicable { .. }))
            .collect();
        if cells.is_empty() {
            continue;
        }
        if cells.iter().any(|c| c.exclusion.seen()) {
            excl.push(f.id);
        }
        if cells.iter().any(|c| c.data.seen()) {
            data.push(f.id);
        }
        if cells.iter().all(|c| {
            matches!(c.exclusion, Cell::Holds { .. }) && matches!(c.data, Cell::Holds { .. })
        }) {
            held.push(f.id);
        }
    }
    let list = |v: &[&str], none: &str| {
        if v.is_empty() {
            none.to_owned()
        } else {
            v.iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    match lang {
        Lang::En => format!(
            "exclusion broken (by at least one of them) under {}; data damaged (at least one) under {}; held throughout by every one measured under {}.",
            list(&excl, "no fault measured"),
            list(&data, "no fault measured"),
            list(&held, "none")
        ),
        Lang::Zh => format!(
            "互斥被破坏（至少其中之一）：{}；数据受损（至少其中之一）：{}；全部实测成员全程成立：{}。",
            list(&excl, "无"),
            list(&data, "无"),
            list(&held, "无")
        ),
    }
}

/// What each family is, for the guide.
fn family_mechanism(kind: Kind, lang: Lang) -> &'static str {
    match (kind, lang) {
        (Kind::NoLock | Kind::ProcessLocal, Lang::En) => "Nothing the replicas share: they overlap with no fault at all, so no column applies.",
        (Kind::NoLock | Kind::ProcessLocal, Lang::Zh) => "副本之间没有共享任何锁：不注入故障也会重叠，因此没有适用的列。",
        (Kind::NoExpiry, Lang::En) => "A key nobody expires: a dead holder blocks everyone (stalled); only a fault that loses the key (a failover) or frees it early lets a second holder in.",
        (Kind::NoExpiry, Lang::Zh) => "永不过期的键：持有者死后所有人都被阻塞（停滞）；只有丢失该键（故障转移）或提前释放它的故障才会放入第二个持有者。",
        (Kind::Ttl, Lang::En) => "Leases: the key expires after the TTL whatever the holder is doing, so any fault that keeps the holder inside longer than the TTL lets a second one in (setnx-expire's key has no TTL when its holder dies between SETNX and EXPIRE).",
        (Kind::Ttl, Lang::Zh) => "租约：无论持有者在做什么，键都会在 TTL 后过期；任何让持有者在临界区停留超过 TTL 的故障都会放入第二个持有者（setnx-expire 的持有者若死在 SETNX 与 EXPIRE 之间，键就没有 TTL）。",
        (Kind::Lease, Lang::En) => "Leases kept alive by a background task: renewals cover slow work, but a whole-process pause stops the renewals too.",
        (Kind::Lease, Lang::Zh) => "由后台任务续期的租约：续期能覆盖慢的工作，但整个进程暂停时续期也停止。",
        (Kind::Validity, Lang::En) => "Redlock: a lease on a majority of nodes, with the validity time checked before the write; it rests on the nodes' clocks and their memory.",
        (Kind::Validity, Lang::Zh) => "Redlock：多数派节点上的租约，写入前检查有效期；它依赖各节点的时钟和数据不丢失。",
        (Kind::Session, Lang::En) => "Sessions: the lock lives as long as the database connection, with no timer; a frozen holder keeps it, a dead one loses it with its connection.",
        (Kind::Session, Lang::Zh) => "会话锁：锁与数据库连接同生共死，没有计时器；被冻结的持有者继续持有，死掉的持有者随连接一起失去它。",
        (Kind::Fenced, Lang::En) => "Fenced leases: the lease can expire, but the database refuses the stale holder's write by its token, so exclusion may break while the data stays exact.",
        (Kind::Fenced, Lang::Zh) => "带令牌的租约：租约可能过期，但数据库按令牌拒绝过期持有者的写入，因此互斥可能被破坏而数据保持正确。",
        (Kind::LockTable, Lang::En) => "A lock-table row swept by age: a lease in a table, with the sweeper's clock as its TTL.",
        (Kind::LockTable, Lang::Zh) => "按年龄清理的锁表行：表中的租约，清理器的时钟就是它的 TTL。",
        (Kind::InTransaction, Lang::En) => "Locks of the transaction itself: held until the transaction ends, so a paused or slow holder keeps them, a dead one frees them with its rolled-back transaction, and no early unlock can come before the commit. A statement that fails ends the transaction at once: PostgreSQL aborts it there and its locks go while the holder's code still runs to its ROLLBACK (order-insert-fails: exclusion broken, data exact — nothing more can be written in an aborted transaction, but anything else done \"under the lock\" after the error runs unprotected).",
        (Kind::InTransaction, Lang::Zh) => "事务自身的锁：持有到事务结束为止，暂停或变慢的持有者继续持有，死掉的持有者随事务回滚释放它，也不可能在提交前提前释放。一条语句失败就会立刻结束事务：PostgreSQL 在出错处中止事务，锁随即释放，而持有者的代码还在走向它的 ROLLBACK（order-insert-fails：互斥被破坏，数据正确——中止的事务再也写不进任何东西，但出错之后“在锁内”做的其他事情就不再受保护）。",
        (Kind::NotALock, Lang::En) => "No lock: one atomic write or a compare-and-set, so there is no exclusion to lose; the data is the whole claim.",
        (Kind::NotALock, Lang::Zh) => "不是锁：一次原子写或比较并设置，没有互斥可失去；数据正确就是全部承诺。",
    }
}

/// The page in `lang`: its header, the map, the columns, the reading
/// guide and every cell, in order (over 80 lines: a document's markup in
/// order).
fn markdown(doc: &AtlasJson, lang: Lang) -> String {
    let mut out = String::new();
    let zh = lang == Lang::Zh;
    let measured = doc
        .cells
        .iter()
        .filter(|c| !matches!(c.exclusion, Cell::NotApplicable { .. }))
        .count();
    let undecided = doc
        .cells
        .iter()
        .filter(|c| matches!(c.exclusion, Cell::Undecided { .. }))
        .count();
    if zh {
        let _ = writeln!(out, "# 图谱：每一种锁在每一种故障下的边界\n");
        let _ = writeln!(
            out,
            "由 `seckill-loadgen atlas` 根据上一级目录的 `atlas.json` 生成（{} 构建，每个探测点计划 {} 次注入{}，用时 {:.0} 秒）。共 {} 个单元格：{} 个实测，{} 个无法判定（各自注明原因），{} 个故障无法触及（各自注明原因）。英文版：[../atlas.md](../atlas.md)。\n",
            doc.profile, doc.injections_per_probe, if doc.quick { "，--quick" } else { "" }, doc.duration_s, doc.cells.len(), measured - undecided, undecided, doc.cells.len() - measured
        );
        let _ = writeln!(out, "每个单元格沿故障的大小（一个参数）先测两端及模型预测翻转点的两侧，再在区间内取点（中点，或在通道空闲时均匀取两三个点），直到区间不超过 TTL 的 5 %，每个探测点的注入次数相同。`E` 为互斥被破坏，`D` 为数据受损，`S` 为杀死持有者后的停滞；`a–b` 是开始出现的区间（a 处未出现，b 处至少一半的注入出现：重跑两端仍在同一侧；若在 a 与 b 之间已偶尔出现，下方单元格的文字给出该处及其 k/n，二分法把两个翻转点都收窄），`≤a–b` 是消失的区间（未出现的一端与首次（或最后）出现处相距至少 TTL 的 10 %（若该处有探测点）：边界是一条带，紧挨着它的点重跑时偶尔也会出现），`(+1 flip)` 表示更远处还会再翻转一次，`成立 ≤x` 表示直到最大值都未出现，`全部 ≥x` 表示从最小值起就出现，`?` 为无法判定；`×` 为 TTL 的倍数（仅用于范围以 TTL 表示的列），`%` 为时钟漂移率。每个探测点计划的注入次数相同（失败的试验会少一些：每个探测点给出自己的 n）。每个单元格的命令可重跑该单元格；`make atlas RECHECK=1` 把每个区间的两端重跑一次，并报告两端是否仍在原来的一侧。\n");
        let _ = writeln!(out, "![图谱](../atlas/atlas.svg)\n");
    } else {
        let _ = writeln!(
            out,
            "# The atlas: every lock under every fault, measured to its boundary\n"
        );
        let _ = writeln!(
            out,
            "Written by `seckill-loadgen atlas` from `atlas.json` beside this page ({} build, {} injections planned per probe{}, {:.0} s). {} cells: {} measured, {} undecided (each says why), {} the fault cannot reach (each says why). Chinese: [zh/atlas.md](zh/atlas.md).\n",
            doc.profile, doc.injections_per_probe, if doc.quick { ", --quick" } else { "" }, doc.duration_s, doc.cells.len(), measured - undecided, undecided, doc.cells.len() - measured
        );
        let _ = writeln!(out, "Each cell measures one dial, the fault's size: both ends of its range and either side of the flip our model predicts, then sizes inside every bracket (its midpoint, or two or three evenly spaced when the lanes would sit idle) until it is at most 5 % of the TTL wide, with the same number of injections planned at every probe (a trial that fails leaves fewer: each probe shows its n). `E` is exclusion broken, `D` data damaged, `S` a stall after a kill (nobody bought again within the watch); `a–b` is where the outcome starts (not seen at a, seen in half the injections or more at b: both sides a rerun keeps; where it was first seen in fewer, between a and b, the cell's text below gives that size and its k of n, and the bisection narrows both flips), `≤a–b` where it stops (seen in half or more up to a, not at b); the clean end lies 10 % of the TTL or more from the size where the outcome was first (or last) seen, where a probe lies there, since a boundary is a band and the size next to it sees the outcome now and then on a rerun, `(+1 flip)` that it changes side again further on (the cell's table gives every flip), `ok ≤x` that it was never seen up to the largest size, `all ≥x` that it was seen from the smallest, `?` undecided (the cell says why); `×` is a multiple of the TTL in the columns whose range is in TTLs, `%` the clock's slew. Each cell's command reruns it (below the map); `make atlas RECHECK=1` runs both ends of every bracket again and says whether each kept its side.\n");
        let _ = writeln!(out, "![The map](atlas/atlas.svg)\n");
    }
    // The map.
    let _ = writeln!(out, "## {}\n", if zh { "图谱" } else { "The map" });
    let (rows, columns) = present(doc);
    let _ = write!(out, "| {} |", if zh { "策略" } else { "strategy" });
    for f in &columns {
        let _ = write!(out, " `{}` |", f.id);
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "|---|{}", "---|".repeat(columns.len()));
    for s in &rows {
        let s = *s;
        let _ = write!(out, "| `{}` |", s.as_str());
        for f in &columns {
            let text = cell_of(doc, s, f.id).map_or_else(|| "?".into(), |c| map_cell(c, lang));
            let _ = write!(out, " {text} |");
        }
        let _ = writeln!(out);
    }
    // The columns.
    let _ = writeln!(
        out,
        "\n## {}\n",
        if zh {
            "故障（列）"
        } else {
            "The faults (columns)"
        }
    );
    let _ = writeln!(
        out,
        "| {} |\n|---|---|---|---|",
        if zh {
            "故障 | 内容 | 场景 | 参数与范围"
        } else {
            "fault | what | scenario | dial and range"
        }
    );
    for f in &columns {
        let fixed: Vec<String> = f.sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            out,
            "| `{}` | {} | `{}`{}{} | `{}` {}..{} |",
            f.id,
            if zh { f.title_zh } else { f.title },
            f.scenario.name(),
            f.variant.map(|v| format!(" · {v}")).unwrap_or_default(),
            if fixed.is_empty() {
                String::new()
            } else {
                format!(" · {}", fixed.join(" "))
            },
            f.dial,
            f.lo,
            f.hi
        );
    }
    // The guide.
    let _ = writeln!(
        out,
        "\n## {}\n",
        if zh {
            "工作坊阅读指南：各个家族"
        } else {
            "Reading guide for a workshop: the families"
        }
    );
    for (kind, members) in families(doc) {
        let (name, name_zh) = family(kind);
        let names: Vec<String> = members
            .iter()
            .map(|s| format!("`{}`", s.as_str()))
            .collect();
        let _ = writeln!(
            out,
            "- **{}** ({}): {} {}",
            if zh { name_zh } else { name },
            names.join(", "),
            family_mechanism(kind, lang),
            if matches!(kind, Kind::NoLock | Kind::ProcessLocal) {
                String::new()
            } else {
                family_findings(doc, &members, lang)
            }
        );
    }
    // Every cell.
    let _ = writeln!(
        out,
        "\n## {}\n",
        if zh { "每个单元格" } else { "Every cell" }
    );
    for f in &columns {
        let _ = writeln!(out, "### `{}`\n", f.id);
        let stalls = doc
            .cells
            .iter()
            .any(|c| c.fault == f.id && c.stalled.is_some());
        let _ = writeln!(
            out,
            "| {}{} | {} |\n|---|---|---|{}---|---|",
            if zh {
                "策略 | 互斥被破坏 | 数据受损"
            } else {
                "strategy | exclusion broken | data damaged"
            },
            match (stalls, zh) {
                (false, _) => "",
                (true, false) => " | stalled (nobody bought again within the watch)",
                (true, true) => " | 停滞（观察期内无人再下单）",
            },
            if zh {
                "模型 | 命令"
            } else {
                "model | command"
            },
            if stalls { "---|" } else { "" }
        );
        for s in &rows {
            let s = *s;
            let Some(c) = cell_of(doc, s, f.id) else {
                continue;
            };
            let model = c.model.as_ref().map_or_else(String::new, |m| {
                let at: Vec<String> = m.flips.iter().map(|x| format!("{x:.0}")).collect();
                if at.is_empty() {
                    format!(
                        "{}: predicted {} at every size",
                        m.outcome.as_str(),
                        m.at_lo.as_str()
                    )
                } else {
                    format!(
                        "{}: {} from {}, flips at {}",
                        m.outcome.as_str(),
                        m.at_lo.as_str(),
                        f.lo,
                        at.join(", ")
                    )
                }
            });
            let stalled = match (&c.stalled, stalls) {
                (_, false) => String::new(),
                (Some(cell), true) => format!(" {} |", cell.text_in(unit(c), zh)),
                (None, true) => " |".into(),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} |{stalled} {} | `{}` |",
                s.as_str(),
                c.exclusion.text_in(unit(c), zh).replace('|', "\\|"),
                c.data.text_in(unit(c), zh).replace('|', "\\|"),
                model,
                c.command
            );
        }
        let _ = writeln!(out);
    }
    out
}

/// The colour of a cell: grey where the fault cannot reach it, green
/// where nothing broke, white where undecided, and from dark red to
/// yellow by how small a fault broke exclusion (or the data): in
/// multiples of the TTL for a duration, as a share of the range else.
fn colour(c: &CellJson) -> &'static str {
    if matches!(c.exclusion, Cell::NotApplicable { .. }) {
        return "#d9d9d9";
    }
    // A stall (nobody buys again after a crash) is a breakage too.
    let at = c
        .exclusion
        .breaks_at()
        .or_else(|| c.data.breaks_at())
        .or_else(|| c.stalled.as_ref().and_then(Cell::breaks_at));
    let Some(x) = at else {
        let undecided = matches!(c.exclusion, Cell::Undecided { .. })
            || matches!(c.data, Cell::Undecided { .. });
        return if undecided { "#ffffff" } else { "#a1d99b" };
    };
    let scale = in_ttl(c, x).unwrap_or_else(|| {
        let f = fault(&c.fault);
        let range = f.and_then(|f| Some((f.lo.parse::<f64>().ok()?, f.hi.parse::<f64>().ok()?)));
        range.map_or(1.0, |(lo, hi)| 2.0 * (x - lo) / (hi - lo).max(f64::EPSILON))
    });
    match scale {
        s if s <= 0.5 => "#a50f15",
        s if s <= 1.0 => "#de2d26",
        s if s <= 1.5 => "#fb6a4a",
        s if s <= 2.0 => "#fcae91",
        _ => "#fee5d9",
    }
}

/// The mark of a cell: what broke (E: exclusion only, E+D, D: data only,
/// S: only a stall after a crash).
fn mark(c: &CellJson) -> &'static str {
    match (c.exclusion.seen(), c.data.seen()) {
        _ if matches!(c.exclusion, Cell::NotApplicable { .. }) => "–",
        (false, false) if c.stalled.as_ref().is_some_and(Cell::seen) => "S",
        (true, true) => "E+D",
        (true, false) => "E",
        (false, true) => "D",
        (false, false) if matches!(c.exclusion, Cell::Undecided { .. }) => "?",
        (false, false) => "ok",
    }
}

/// The map: strategies by faults.
fn svg(doc: &AtlasJson) -> String {
    let (rows, columns) = present(doc);
    let (left, top, w, h) = (150.0, 130.0, 62.0, 22.0);
    // Room on the right for the last rotated column name.
    let width = (left + w * columns.len() as f64 + 120.0).max(520.0);
    let height = top + h * rows.len() as f64 + 90.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (j, f) in columns.iter().enumerate() {
        let x = left + w * j as f64 + w / 2.0;
        let _ = writeln!(
            out,
            r#"<text transform="translate({x},{}) rotate(-50)" text-anchor="start">{}</text>"#,
            top - 6.0,
            f.id
        );
    }
    for (i, s) in rows.iter().enumerate() {
        let y = top + h * i as f64;
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            left - 6.0,
            y + h * 0.68,
            s.as_str()
        );
        for (j, f) in columns.iter().enumerate() {
            let x = left + w * j as f64;
            let (fill, text) =
                cell_of(doc, *s, f.id).map_or(("#ffffff", "?"), |c| (colour(c), mark(c)));
            let _ = writeln!(
                out,
                r##"<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}" stroke="#ffffff"/><text x="{}" y="{}" text-anchor="middle">{text}</text>"##,
                x + w / 2.0,
                y + h * 0.68
            );
        }
    }
    let legend = [
        ("#a50f15", "breaks ≤0.5 TTL"),
        ("#de2d26", "≤1 TTL"),
        ("#fb6a4a", "≤1.5 TTL"),
        ("#fcae91", "≤2 TTL"),
        ("#fee5d9", "larger"),
        ("#a1d99b", "held throughout"),
        ("#d9d9d9", "n/a"),
    ];
    let y = top + h * rows.len() as f64 + 20.0;
    for (k, (fill, label)) in legend.iter().enumerate() {
        let x = 10.0 + 120.0 * (k % 4) as f64;
        let y = y + 22.0 * (k / 4) as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="{y}" width="14" height="14" fill="{fill}"/><text x="{}" y="{}">{label}</text>"#,
            x + 18.0,
            y + 11.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="10" y="{}">E: exclusion broken only · E+D: data damaged too · D: data only · S: stalled after a kill · columns not sized in TTLs: share of their range</text>"#,
        y + 62.0
    );
    out.push_str("</svg>\n");
    out
}
