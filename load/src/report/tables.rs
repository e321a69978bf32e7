//! The report as text: the terminal table and the Markdown one (one row
//! per strategy, the same cells), with the workload line above.

use std::fmt::Write as _;

use super::Report;
use crate::api::Faults;
use crate::load::Shape;

impl Report {
    pub(super) fn header(&self) -> String {
        let w = &self.workload;
        let shape = match w.shape {
            Shape::ClosedLoop => format!("{} closed-loop users", w.users),
            Shape::Burst => format!("burst of {} users", w.users),
            Shape::Rate { per_sec } => {
                format!("{per_sec} grabs/s open rate, {} users", w.users)
            }
        };
        let length = w.run_time.map_or("until sold out".to_owned(), |d| {
            format!("{} s", d.as_secs())
        });
        let faults = self.faults.as_ref().map(faults_on).unwrap_or_default();
        format!(
            "{shape}, {length}; stock {} on {} product(s); {} replica(s); synchronous_commit={}; faults: {}",
            w.stock,
            w.products,
            self.replicas.len(),
            self.synchronous_commit.as_deref().unwrap_or("?"),
            if faults.is_empty() { "none".to_owned() } else { faults.join(", ") }
        )
    }

    /// Rows of the table, shared by the terminal and Markdown forms.
    pub(super) fn rows(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let head = vec![
            "strategy",
            "grabs/s",
            "orders/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "ordered",
            "sold_out",
            "already",
            "busy",
            "rejected",
            "error",
            "wait p99 ms",
            "retries",
            "oversold",
            "lost",
            "under",
            "dup",
            "neg",
            "ack lost",
            "unacked",
            "indet f/nf",
            "overlaps",
            "verdict",
        ];
        let rows = self
            .runs
            .iter()
            .map(|r| {
                let o = |k: &str| r.outcomes.get(k).copied().unwrap_or(0).to_string();
                vec![
                    r.strategy.to_string(),
                    format!("{:.0}", r.grabs_per_sec),
                    format!("{:.0}", r.orders_per_sec),
                    format!("{:.1}", r.p50_ms),
                    format!("{:.1}", r.p95_ms),
                    format!("{:.1}", r.p99_ms),
                    o("ordered"),
                    o("sold_out"),
                    o("already_purchased"),
                    o("busy"),
                    o("rejected"),
                    o("error"),
                    r.lock
                        .acquire_wait_p99_ms
                        .map_or("-".into(), |v| format!("{v:.1}")),
                    r.lock.retries.to_string(),
                    r.damage.oversold.to_string(),
                    r.damage.lost_updates.to_string(),
                    r.damage.undersold.to_string(),
                    r.damage.duplicates.to_string(),
                    if r.negative_stock { "yes" } else { "no" }.to_owned(),
                    r.accounting
                        .map_or("?".into(), |a| a.acknowledged_missing.to_string()),
                    r.accounting
                        .map_or("?".into(), |a| a.unacknowledged_present.to_string()),
                    r.accounting.map_or("?".into(), |a| {
                        format!("{}/{}", a.indeterminate.found, a.indeterminate.not_found)
                    }),
                    r.overlaps.map_or("-".into(), |o| o.to_string()),
                    r.verdict.as_str().to_owned(),
                ]
            })
            .collect();
        (head, rows)
    }

    /// The results as a comfy-table with `preset`'s borders: strategy and
    /// verdict left, the figures right.
    fn table(
        &self,
        style: comfy_table::TableStyle,
        cell: impl Fn(String) -> String,
    ) -> comfy_table::Table {
        let (head, rows) = self.rows();
        let mut table = comfy_table::Table::new();
        table
            .load_style(style)
            .set_header(head.iter().copied())
            .add_rows(rows.into_iter().map(|row| row.into_iter().map(&cell)));
        let last = head.len() - 1;
        for (i, column) in table.column_iter_mut().enumerate() {
            if i != 0 && i != last {
                column.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
        table
    }

    /// A plain-text table for the terminal.
    pub fn terminal(&self) -> String {
        let mut out = format!("{}\n", self.header());
        // No borders: columns two spaces apart (each cell's padding).
        for line in self.table(comfy_table::presets::NOTHING, |c| c).lines() {
            out.push_str(line.strip_prefix(' ').unwrap_or(&line).trim_end());
            out.push('\n');
        }
        for (strategy, batch) in self.batched() {
            let _ = writeln!(out, "{strategy}: {}", batch.line());
        }
        for s in &self.skipped {
            let _ = writeln!(out, "skipped {}: {}", s.strategy, s.reason);
        }
        for s in &self.failed {
            let _ = writeln!(out, "FAILED {}: {}", s.strategy, s.reason);
        }
        for r in self.inconclusive() {
            let _ = writeln!(
                out,
                "inconclusive {}: {}",
                r.strategy,
                r.inconclusive_because.join("; ")
            );
        }
        for c in &self.thresholds {
            let _ = writeln!(out, "threshold {}", c.line());
        }
        if self.interrupted {
            out.push_str("interrupted (Ctrl-C): the strategies after the last row did not run\n");
        }
        out
    }

    /// A GitHub-flavoured Markdown table.
    pub fn markdown(&self) -> String {
        let mut out = format!("# seckill-loadgen report\n\n{}\n\n", self.header());
        let table = self.table(comfy_table::presets::ASCII_MARKDOWN, |c| {
            if c == "VIOLATION" {
                "**VIOLATION**".into()
            } else {
                c
            }
        });
        let _ = writeln!(out, "{table}");
        for (strategy, batch) in self.batched() {
            let _ = writeln!(out, "\n`{strategy}`: {}", batch.line());
        }
        for s in &self.skipped {
            let _ = writeln!(out, "\nSkipped `{}`: {}", s.strategy, s.reason);
        }
        for s in &self.failed {
            let _ = writeln!(out, "\n**Failed** `{}`: {}", s.strategy, s.reason);
        }
        for r in self.inconclusive() {
            let _ = writeln!(
                out,
                "\n**Inconclusive** `{}`: {}",
                r.strategy,
                r.inconclusive_because.join("; ")
            );
        }
        if !self.thresholds.is_empty() {
            out.push_str("\n## Thresholds\n\n");
            for c in &self.thresholds {
                let _ = writeln!(out, "- {}", c.line());
            }
        }
        out.push_str(
            "\nGrabs/s count every answered request (retries of `busy`/`rejected` included); \
             orders, oversold, lost, under(sold), dup and neg(ative stock) come from the database audit; \
             ack lost (a `201` whose order is not in the database), unacked (an order no answer explains) and \
             indet f/nf (timeouts, resets and `5xx` whose order was found / not found) from the buyers' ledger \
             checked against every order; wait p99 and retries from the replicas' `/metrics`.\n",
        );
        out
    }
}

/// The faults that are on (non-zero, true), by name, e.g. `work_delay_ms=5`
/// (`pause_every` only while pausing).
fn faults_on(f: &Faults) -> Vec<String> {
    let pausing = f.pause_ms > 0;
    [
        ("acquire_pause_ms", f.acquire_pause_ms, false),
        ("check_revision", u64::from(f.check_revision), true),
        ("check_token", u64::from(f.check_token), true),
        ("commit_delay_ms", f.commit_delay_ms, false),
        ("extend_expired", u64::from(f.extend_expired), true),
        ("extend_held_only", u64::from(f.extend_held_only), true),
        ("ignore_lost_lease", u64::from(f.ignore_lost_lease), true),
        ("ignore_wait_count", u64::from(f.ignore_wait_count), true),
        ("pause_every", f.pause_every, pausing),
        ("pause_ms", f.pause_ms, false),
        ("redlock_extend", u64::from(f.redlock_extend), true),
        ("release_gap_ms", f.release_gap_ms, false),
        (
            "renewal_stops_on_error",
            u64::from(f.renewal_stops_on_error),
            true,
        ),
        ("setnx_expire_gap_ms", f.setnx_expire_gap_ms, false),
        ("skip_cancel", u64::from(f.skip_cancel), true),
        (
            "skip_validity_check",
            u64::from(f.skip_validity_check),
            true,
        ),
        (
            "unlock_before_commit",
            u64::from(f.unlock_before_commit),
            true,
        ),
        ("work_delay_ms", f.work_delay_ms, false),
    ]
    .into_iter()
    .filter(|(name, value, _)| *value > 0 && (*name != "pause_every" || pausing))
    .map(|(name, value, flag)| {
        if flag && name != "pause_every" {
            format!("{name}=true")
        } else {
            format!("{name}={value}")
        }
    })
    .collect()
}
