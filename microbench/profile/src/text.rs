//! The profile as text tables: what `mheta-microbench` prints after a
//! session and `mheta show --profile` prints of a stored profile, in one
//! place so that the two never differ.

use crate::{ClusterProfile, MEAN_TEXT, PairCost};
use std::fmt::Write as _;

impl ClusterProfile {
    /// Every table of the profile: the session's header, per pair the
    /// overheads, fit and bandwidths, the multi-modal figures, the
    /// latency and bandwidth matrices, the links and the nodes.
    pub fn tables(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# cluster profile: {} ranks on {}{}; timer reading {:.0} ns",
            self.np,
            self.hosts.join(","),
            if self.quick { " (quick)" } else { "" },
            self.timer_s * 1e9
        );
        let _ = writeln!(out, "# method: {}", self.method);
        let _ = writeln!(out, "# schedule: {}", self.schedule);
        self.pair_table(&mut out);
        self.exchange_table(&mut out);
        self.send_table(&mut out);
        self.modes(&mut out);
        self.matrix(&mut out, "Latency, 8 B one-way (us)", &|c| {
            c.one_way_small.p50 * 1e6
        });
        self.matrix(&mut out, "Bandwidth at 1 MiB (MB/s)", &|c| {
            c.bandwidth_bps / 1e6
        });
        self.matrix(
            &mut out,
            "Bandwidth of one 8 MiB message between buffers out of the cache (MB/s)",
            &|c| c.bandwidth_cold_bps / 1e6,
        );
        self.matrix(
            &mut out,
            "Bandwidth of the same message, both ends waiting as a move waits, polling then napping (MB/s)",
            &|c| c.moves.last().map_or(0.0, |m| m.bytes as f64 / m.one_way_s / 1e6),
        );
        out.push_str(&self.link_tables());
        self.node_table(&mut out);
        reuse_table(&self.nodes, &mut out);
        out
    }

    /// Per pair (one line for both ways) that measured its exchanges
    /// (`PairCost::exchange`): each gap and size's median, beside the
    /// pair's one-way fit at that size.
    fn exchange_table(&self, out: &mut String) {
        let pairs: Vec<&PairCost> = (self.pairs.iter())
            .filter(|c| c.src < c.dst && !c.exchange.is_empty())
            .collect();
        let Some(first) = pairs.first() else {
            return;
        };
        let _ = writeln!(
            out,
            "# Exchange, both ranks sending at once, after each swept memory for the gap with no MPI call (us from posting to completing, median; in brackets the one-way fit at that size)"
        );
        let heads: Vec<String> = (first.exchange.iter())
            .map(|x| format!("{:.0}ms {}B", x.gap_s * 1e3, x.bytes))
            .collect();
        let _ = writeln!(
            out,
            "{:>5} {:>5} {}",
            "src",
            "dst",
            heads.iter().map(|h| format!("{h:>18}")).collect::<String>()
        );
        for c in pairs {
            let cells: String = (c.exchange.iter())
                .map(|x| {
                    let v = format!(
                        "{:.1} ({:.1})",
                        x.one_way.p50 * 1e6,
                        c.one_way_s(x.bytes as f64) * 1e6
                    );
                    format!("{v:>18}")
                })
                .collect();
            let _ = writeln!(out, "{:>5} {:>5} {}", c.src, c.dst, cells);
        }
    }

    /// Per pair that measured them (`PairCost::send_by_size`): the
    /// sender's time in an eager send of each size, after o_s at 8 bytes.
    fn send_table(&self, out: &mut String) {
        let pairs: Vec<&PairCost> = (self.pairs.iter())
            .filter(|c| !c.send_by_size.is_empty())
            .collect();
        if pairs.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "# Sender's time in a blocking eager send by size, the receiver waiting (us, {MEAN_TEXT}; LogGP's o(m); the model takes it linear between the sizes and flat past the largest)"
        );
        let _ = writeln!(out, "{:>5} {:>5} {:>10}  by size", "src", "dst", "o_s (8B)");
        for c in pairs {
            let cells: String = (c.send_by_size.iter())
                .map(|x| format!("  {}B {:.2}", x.bytes, x.o_send_s * 1e6))
                .collect();
            let _ = writeln!(
                out,
                "{:>5} {:>5} {:>10.2} {}",
                c.src,
                c.dst,
                c.o_send_s * 1e6,
                cells
            );
        }
    }

    /// Per pair: LogP's o_s, o_r, L, the 8-byte round trip, their
    /// spreads, the bandwidths, the eager limit and the per-byte segments.
    fn pair_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# Overheads and fit per pair (us, {MEAN_TEXT}; spread: interquartile range of the round medians, % of the median; 8M cold: one 8 MiB message between buffers out of the cache, polling; move 1M/8M: 1 and 8 MiB messages out of the cache, both ends waiting as a move waits (polling, then napping); eager B: the largest send that completes before its receive is posted; held MB: of one 8 MiB message to a posted receive, what the transport still held when the send completed, after the sweep; first MB: the same for the pair's first large message; direct GB/s: one 8 MiB piece of a move copied by both ends, ranks of one host; per-byte in ns/B by segment)"
        );
        let _ = writeln!(
            out,
            "{:>5} {:>5} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7} {:>12} {:>14} {:>14} {:>8} {:>8} {:>8} {:>10}  segments",
            "src",
            "dst",
            "o_s",
            "o_r",
            "L",
            "RTT8",
            "rounds",
            "o_s±%",
            "o_r±%",
            "RTT8±%",
            "MB/s (1 MiB)",
            "MB/s (8M cold)",
            "move 1M/8M MB/s",
            "eager B",
            "held MB",
            "first MB",
            "direct GB/s"
        );
        let unlisted = [("same", true), ("other", false)]
            .into_iter()
            .filter_map(|(kind, same)| {
                Some((
                    ("*".to_string(), kind.to_string()),
                    self.unlisted_pair(same)?,
                ))
            });
        let listed = (self.pairs.iter()).map(|c| ((c.src.to_string(), c.dst.to_string()), c));
        for ((src, dst), c) in listed.chain(unlisted) {
            let segs: Vec<String> = c
                .segments
                .iter()
                .map(|g| {
                    let to = if g.to_bytes == u64::MAX {
                        "inf".to_string()
                    } else {
                        g.to_bytes.to_string()
                    };
                    format!("[{}..{}] {:.4}", g.from_bytes, to, g.per_byte_s * 1e9)
                })
                .collect();
            let rate = |bps: f64| {
                if bps > 0.0 {
                    format!("{:.0}", bps / 1e6)
                } else {
                    "-".into()
                }
            };
            let moved = (c.moves.iter())
                .map(|m| rate(m.bytes as f64 / m.one_way_s))
                .collect::<Vec<_>>()
                .join("/");
            let (cold, moved) = (
                rate(c.bandwidth_cold_bps),
                if moved.is_empty() { "-".into() } else { moved },
            );
            let mb = |b: Option<u64>| b.map_or("-".into(), |b| format!("{:.2}", b as f64 / 1e6));
            let (held, first) = (mb(c.send_buffer_bytes), mb(c.send_buffer_first_bytes));
            let direct = c
                .direct_copy_bps
                .map_or("-".into(), |d| format!("{:.2}", d / 1e9));
            let _ = writeln!(
                out,
                "{:>5} {:>5} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>7} {:>7.1} {:>7.1} {:>7.1} {:>12.0} {:>14} {:>14} {:>8} {:>8} {:>8} {:>10}  {}",
                src,
                dst,
                c.o_send_s * 1e6,
                c.o_recv_s * 1e6,
                c.latency_s * 1e6,
                c.rtt_small_s * 1e6,
                c.one_way_small.rounds.len(),
                c.o_send.spread_pct,
                c.o_recv.spread_pct,
                c.one_way_small.spread_pct,
                c.bandwidth_bps / 1e6,
                cold,
                moved,
                c.eager_text(),
                held,
                first,
                direct,
                segs.join(" ")
            );
        }
        if self.unlisted.is_some() {
            let _ = writeln!(
                out,
                "# src '*': every pair the list leaves out whose ranks share a host (dst 'same') or not ('other')"
            );
        }
        let unknown = self
            .pairs
            .iter()
            .filter(|c| c.eager_limit_bytes.is_none())
            .count();
        if unknown > 0 {
            let _ = writeln!(
                out,
                "# eager B '-': not measured for {unknown} of {} pairs (no probe kept its receiver out of MPI within the budget: ranks sharing cores, or a busy host); the model takes their sends as eager",
                self.pairs.len()
            );
        }
    }

    /// Which figures are multi-modal, and what the profile stores of them.
    fn modes(&self, out: &mut String) {
        let mm = self.multi_modal();
        if mm.is_empty() {
            let _ = writeln!(
                out,
                "# Modes: every o_s, o_r and 8-byte one-way time is unimodal"
            );
            return;
        }
        let _ = writeln!(
            out,
            "# Modes: {} figures are multi-modal; the profile stores {MEAN_TEXT} (`mheta predict --mode dominant|fast|slow` picks one mode)",
            mm.len(),
        );
        for (s, d, name, text) in mm {
            let _ = writeln!(out, "#   {s} -> {d} {name}: {text}");
        }
    }

    /// A figure of every pair as a matrix: rows the source, columns the
    /// destination.
    fn matrix(&self, out: &mut String, title: &str, f: &dyn Fn(&PairCost) -> f64) {
        let n = self.np;
        let _ = writeln!(out, "# {title} (rows: source rank, columns: destination)");
        let _ = write!(out, "{:>6}", "");
        for d in 0..n {
            let _ = write!(out, "{d:>10}");
        }
        let _ = writeln!(out);
        for s in 0..n {
            let _ = write!(out, "{s:>6}");
            for d in 0..n {
                if s == d {
                    let _ = write!(out, "{:>10}", "-");
                } else {
                    let _ = write!(out, "{:>10.2}", f(self.pair(s, d)));
                }
            }
            let _ = writeln!(out);
        }
    }

    /// Per node: CPU weight, memory and the disk's fitted figures.
    fn node_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# Nodes (shift: rows the cache has lost moved within a rank's memory, GB/s by each distance measured, as 'distance:rate', else at one distance)"
        );
        let _ = writeln!(
            out,
            "{:>5} {:<12} {:>10} {:>12} {:>11} {:>30} {:>12} {:>10} {:>10} {:>10} {:>10}  disk method",
            "rank",
            "host",
            "cpu w",
            "mem (MB)",
            "copy (GB/s)",
            "shift (GB/s)",
            "touch (GB/s)",
            "O_r (us)",
            "r (ns/B)",
            "O_w (us)",
            "w (ns/B)"
        );
        for nd in &self.nodes {
            let d = nd.disk.as_ref();
            let f = |x: Option<f64>, k: f64| x.map_or("-".to_string(), |v| format!("{:.3}", v * k));
            let _ = writeln!(
                out,
                "{:>5} {:<12} {:>10.3} {:>12.0} {:>11} {:>30} {:>12} {:>10} {:>10} {:>10} {:>10}  {}",
                nd.rank,
                nd.host,
                nd.cpu_weight,
                nd.mem_available_bytes as f64 / 1e6,
                f(nd.copy_per_byte.as_ref().map(|c| 1.0 / c.p50), 1e-9),
                shift_text(nd),
                f(nd.touch_per_byte.as_ref().map(|c| 1.0 / c.p50), 1e-9),
                f(d.map(|d| d.read_overhead_s), 1e6),
                f(d.map(|d| d.read_per_byte_s), 1e9),
                f(d.map(|d| d.write_overhead_s), 1e6),
                f(d.map(|d| d.write_per_byte_s), 1e9),
                d.map_or("-", |d| d.method.as_str()),
            );
        }
    }
}

/// Per machine measured, `reuse_by` as a table: a row per working set,
/// each point's CPU ps a byte and its ratio to the sweep right after a
/// sweep, in order of the time since the last sweep.
fn reuse_table(nodes: &[crate::NodeCost], out: &mut String) {
    let mut shown: Vec<(&Vec<crate::ReusePoint>, Vec<u32>)> = Vec::new();
    for nd in nodes.iter().filter(|n| !n.reuse_by.is_empty()) {
        match shown.iter_mut().find(|(r, _)| **r == nd.reuse_by) {
            Some((_, ranks)) => ranks.push(nd.rank),
            None => shown.push((&nd.reuse_by, vec![nd.rank])),
        }
    }
    for (pts, ranks) in shown {
        let ranks: Vec<String> = ranks.iter().map(u32::to_string).collect();
        let _ = writeln!(
            out,
            "# A byte's cost by the time since its last sweep, ranks {} (a five-point sweep's CPU ps a byte and its ratio to right after a sweep, at ms since the last sweep)",
            ranks.join(",")
        );
        let mut i = 0;
        while i < pts.len() {
            let ws = pts[i].ws_bytes;
            let mut line = format!("{:>6}M ", ws >> 20);
            while i < pts.len() && pts[i].ws_bytes == ws {
                let p = &pts[i];
                line += &format!(
                    " {:>6.1}ms:{:>5.1} x{:.2}",
                    p.reuse_s * 1e3,
                    p.per_byte.p50 * 1e12,
                    p.rel
                );
                i += 1;
            }
            let _ = writeln!(out, "{line}");
        }
    }
}

/// A node's shift rates as the node table prints them: `256K:9.3
/// 1M:8.5 ...` (GB/s by distance) where measured by distance, else its
/// one figure.
fn shift_text(nd: &crate::NodeCost) -> String {
    if nd.shift_by.is_empty() {
        return nd
            .shift_per_byte
            .as_ref()
            .map_or("-".into(), |c| format!("{:.3}", 1e-9 / c.p50));
    }
    let at = |b: u64| {
        if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
            format!("{}M", b >> 20)
        } else if b.is_multiple_of(1024) {
            format!("{}K", b >> 10)
        } else {
            format!("{b}")
        }
    };
    (nd.shift_by.iter())
        .map(|pt| format!("{}:{:.1}", at(pt.distance_bytes), 1e-9 / pt.per_byte.p50))
        .collect::<Vec<_>>()
        .join(" ")
}
