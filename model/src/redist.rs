//! What a redistribution costs, and whether it pays.
//!
//! The cost model follows MHETA's reference [35] (Shao, Wolski and
//! Berman, "Modeling the cost of redistribution in scheduling"): a move
//! from one GEN_BLOCK distribution to another is a set of point-to-point
//! transfers, one per (sender, receiver) pair whose old and new blocks
//! overlap, carrying the overlapping rows of every declared array, each
//! priced by that pair's one-way transfer time from the cluster profile;
//! the move ends when the slowest rank does ([`Model::move_cost`]). With
//! every array in core (`redist/network.rs`), what the paper's model
//! leaves out is priced as the runtime moves rows:
//!
//! - the arrays move one after another; a rank that keeps its rows where
//!   they lie in its buffer overlaps its sends with its receives, one
//!   whose block gains rows above the kept ones (or keeps none) first
//!   sends, then shifts the kept rows (at its measured
//!   `NodeCost::shift_per_byte`), then receives, and its senders wait for
//!   that: those waits chain along the ranks; a sender is done with a
//!   piece when the transport has taken it off its hands,
//!   the bytes the transport holds (`Pair::send_buffer`) before its
//!   receiver has it all;
//! - the rows a rank's buffer grows by are fresh memory, backed at its
//!   measured `NodeCost::touch_per_byte`: up front when a sender shares
//!   its host or no piece is large enough for the on-node copy, else
//!   those a shift writes just before it and the rest under the
//!   receives' waits;
//! - a piece of [`DIRECT_COPY_MIN_BYTES`] or more between two ranks of
//!   one host is the runtime's cross-process copy, priced at the copy
//!   rate rather than the pair's MPI figures;
//! - a host with more ranks than its machine has CPUs gives each rank a
//!   quota of its share (the apps' `base_share`), and a rank's copies,
//!   shifts and backing there, measured with a core each, take its
//!   host's ranks over those CPUs times as long (`Net::crowding`, from
//!   `NodeCost::machine_cpus`);
//! - an array that is out of core on the sender (under the old
//!   distribution) is read from its file, and on the receiver (under the
//!   new one) written to its file, priced by the I/O model's per-rank,
//!   per-array read and write lines (trace, else the profile's disk).
//!
//! With an array out of core on any rank, the move goes through disk
//! instead ([`Model::move_cost`]'s disk case): each rank writes its old
//! rows and reads its new ones through MPI-IO, and between the two its
//! kernel is built afresh on the new rows. That rebuild is priced from
//! what building the arrays took when the run started, per row
//! ([`Model::rebuild_s_per_row`], measured by the app), else as one more
//! write of the new out-of-core rows (their initial values).
//!
//! Bytes per row come from the app's declaration: `bytes_per_row`, times
//! the row's work for `per_work` arrays (cg's nonzeros), and for a grid
//! level's arrays the rows of that level (`Dist::coarser`).
//!
//! [`decide`] moves only when the predicted gain over the remaining
//! iterations exceeds the predicted cost, and the gain per iteration is
//! at least [`MIN_GAIN`] of the current time: below that the model cannot
//! tell a better distribution from its own error.

use crate::{Dist, Model};
use serde::Serialize;

mod network;

/// Smallest predicted gain per iteration, as a fraction of the current
/// predicted iteration time, that [`decide`] acts on: the model's mean
/// error on faithful emulations (`mheta experiment`, docs/design/model.md),
/// so a smaller predicted gain may be noise in the instrumented window.
pub const MIN_GAIN: f64 = 0.03;

/// Pieces (one array's rows to one peer) of at least this many bytes
/// between two ranks of one host move by the runtime's cross-process copy,
/// both ends copying half (`mheta_runtime::onnode`), smaller ones through
/// MPI. The runtime takes its threshold from here.
pub const DIRECT_COPY_MIN_BYTES: usize = 4 << 20;

/// The predicted cost of a move.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MoveCost {
    /// The slowest rank's time, seconds.
    pub total_s: f64,
    /// Bytes that cross between ranks.
    pub bytes: u64,
    /// Per rank: max(sends, receives) + local shift + disk, seconds.
    pub rank_s: Vec<f64>,
}

/// Bytes of the declared arrays that change rank in a move from `from` to
/// `to` (rows whose owner changes, each array on its own grid level),
/// from the declaration alone: what `--move-to` reports beside its
/// measured time. [`Model::move_cost`] counts the same bytes per rank.
pub fn moved_bytes(decl: &mheta_trace::AppDecl, from: &Dist, to: &Dist) -> u64 {
    let mut total = 0u64;
    for a in &decl.arrays {
        let (mut f, mut t) = (from.clone(), to.clone());
        for _ in 0..a.level.unwrap_or(0) {
            (f, t) = (f.coarse_level(), t.coarse_level());
        }
        let (fo, to_) = (f.offsets(), t.offsets());
        let row_bytes = |r: u64| -> u64 {
            match (&decl.work_per_row, a.per_work) {
                (Some(w), true) => w.get(r as usize).copied().unwrap_or(0) * a.bytes_per_row,
                _ => a.bytes_per_row,
            }
        };
        for (i, (&fs, &fl)) in fo.iter().zip(&f.0).enumerate() {
            for (j, (&ts, &tl)) in to_.iter().zip(&t.0).enumerate() {
                if i == j {
                    continue;
                }
                let (s, e) = (fs.max(ts), (fs + fl).min(ts + tl));
                total += (s..e).map(row_bytes).sum::<u64>();
            }
        }
    }
    total
}

/// Rows `[start, end)` of rank `r` under `d` (offsets given).
fn span(offs: &[u64], d: &Dist, r: usize) -> (u64, u64) {
    (offs[r], offs[r] + d.0[r])
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> Option<(u64, u64)> {
    let (s, e) = (a.0.max(b.0), a.1.min(b.1));
    (s < e).then_some((s, e))
}

impl Model {
    /// Bytes of rows `[a, b)` of declared array `k`, on its own level.
    fn array_bytes(&self, k: usize, a: u64, b: u64) -> f64 {
        let decl = &self.app.arrays[k];
        let rows = match (&self.work_prefix, decl.per_work) {
            (Some(w), true) => w[b as usize] - w[a as usize],
            _ => b - a,
        };
        rows as f64 * decl.bytes_per_row as f64
    }

    /// Predicted time of moving every declared array from `from` to `to`
    /// (module docs): through MPI-IO when an array is out of core on some
    /// rank before or after, else over the network.
    pub fn move_cost(&self, from: &Dist, to: &Dist) -> MoveCost {
        let p = self.ranks();
        let levels = self
            .app
            .arrays
            .iter()
            .filter_map(|a| a.level)
            .max()
            .unwrap_or(0);
        // The two distributions on each level that an array lives on.
        let mut on_level = vec![(from.clone(), to.clone())];
        for l in 0..levels as usize {
            let next = (on_level[l].0.coarse_level(), on_level[l].1.coarse_level());
            on_level.push(next);
        }
        let (of, ot) = (from.offsets(), to.offsets());
        let ooc_from: Vec<Vec<bool>> = (0..p)
            .map(|i| self.out_of_core_arrays(of[i], from.0[i], i))
            .collect();
        let ooc_to: Vec<Vec<bool>> = (0..p)
            .map(|i| self.out_of_core_arrays(ot[i], to.0[i], i))
            .collect();
        let any = |v: &[Vec<bool>]| v.iter().flatten().any(|&o| o);
        if any(&ooc_from) || any(&ooc_to) {
            return self.disk_move_cost(&on_level, &ooc_from, &ooc_to);
        }
        self.network_move_cost(&on_level)
    }

    /// Which arrays rank `i` holds out of core with `rows` rows from row
    /// `first`.
    fn out_of_core_arrays(&self, first: u64, rows: u64, i: usize) -> Vec<bool> {
        let Some(io) = &self.io else { return vec![] };
        let plan = io.plan(i, first, rows);
        let mut v = vec![false; self.app.arrays.len()];
        if let Some(plan) = plan {
            for (j, &k) in io.arrays.iter().enumerate() {
                v[k] = plan.out_of_core.get(j).copied().unwrap_or(false);
            }
        }
        v
    }

    /// A move with an array out of core on some rank goes through MPI-IO
    /// (the apps' `Mover`): every rank writes its old rows of every array
    /// to one shared file per array and reads its new rows back, reading
    /// its old out-of-core files on the way out and writing its new ones on
    /// the way in. No rows cross the network. The shared files are priced
    /// with the rank's own disk lines (its first on-disk array's), an upper
    /// bound where that disk is emulated slower than the real one.
    fn disk_move_cost(
        &self,
        on_level: &[(Dist, Dist)],
        ooc_from: &[Vec<bool>],
        ooc_to: &[Vec<bool>],
    ) -> MoveCost {
        let p = self.ranks();
        let Some(io) = &self.io else {
            return MoveCost {
                total_s: 0.0,
                bytes: 0,
                rank_s: vec![0.0; p],
            };
        };
        let line = |i: usize, k: Option<usize>, write: bool| {
            let j = k.map_or(Some(0), |k| io.arrays.iter().position(|&a| a == k))?;
            let lines = if write { &io.write } else { &io.read };
            lines.get(i)?.get(j).copied()
        };
        let mut bytes = 0u64;
        let offs: Vec<(Vec<u64>, Vec<u64>)> = on_level
            .iter()
            .map(|(f, n)| (f.offsets(), n.offsets()))
            .collect();
        let rank_s: Vec<f64> = (0..p)
            .map(|i| {
                let mut t = 0.0;
                for (k, decl) in self.app.arrays.iter().enumerate() {
                    let lv = decl.level.unwrap_or(0) as usize;
                    let ((f, n), (fo, no)) = (&on_level[lv], &offs[lv]);
                    let old = self.array_bytes(k, fo[i], fo[i] + f.0[i]);
                    let new = self.array_bytes(k, no[i], no[i] + n.0[i]);
                    bytes += old as u64;
                    if let Some(w) = line(i, None, true) {
                        t += w.time(old);
                    }
                    if let Some(r) = line(i, None, false) {
                        t += r.time(new);
                    }
                    if ooc_from[i].get(k) == Some(&true)
                        && let Some(r) = line(i, Some(k), false)
                    {
                        t += r.time(old);
                    }
                    if ooc_to[i].get(k) == Some(&true)
                        && let Some(w) = line(i, Some(k), true)
                    {
                        t += w.time(new);
                        if self.rebuild_s_per_row.is_none() {
                            // The rebuilt kernel's initial values.
                            t += w.time(new);
                        }
                    }
                }
                if let Some(per_row) = &self.rebuild_s_per_row {
                    t += per_row.get(i).copied().unwrap_or(0.0) * on_level[0].1.0[i] as f64;
                }
                t
            })
            .collect();
        MoveCost {
            total_s: rank_s.iter().copied().fold(0.0, f64::max),
            bytes,
            rank_s,
        }
    }
}

/// Whether to move, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    pub moved: bool,
    /// One sentence for the report.
    pub reason: String,
    /// Predicted iteration time now and after the move.
    pub current_s: f64,
    pub chosen_s: f64,
    /// Iterations left after the move.
    pub remaining_iters: u64,
    /// Predicted gain over the remaining iterations, seconds.
    pub gain_s: f64,
    /// Predicted cost of the move, seconds.
    pub cost_s: f64,
}

/// Move when the gain per iteration is at least [`MIN_GAIN`] of the
/// current time and the gain over `remaining` iterations exceeds the
/// move's cost.
pub fn decide(current_s: f64, chosen_s: f64, cost_s: f64, remaining: u64) -> Decision {
    let per_iter = current_s - chosen_s;
    let gain_s = per_iter * remaining as f64;
    let (moved, reason) = if per_iter <= 0.0 {
        (
            false,
            format!(
                "no gain: the new distribution is predicted {:.2}% slower per iteration than the current one",
                -100.0 * per_iter / current_s
            ),
        )
    } else if per_iter < MIN_GAIN * current_s {
        (
            false,
            format!(
                "already balanced: the new distribution is predicted {:.2}% faster per iteration, below the {:.0}% the model can resolve",
                100.0 * per_iter / current_s,
                100.0 * MIN_GAIN
            ),
        )
    } else if gain_s <= cost_s {
        (
            false,
            format!(
                "too short to pay: {remaining} remaining iterations gain {gain_s:.6} s, the move costs {cost_s:.6} s"
            ),
        )
    } else {
        (
            true,
            format!(
                "pays: {remaining} remaining iterations gain {gain_s:.6} s, the move costs {cost_s:.6} s"
            ),
        )
    };
    Decision {
        moved,
        reason,
        current_s,
        chosen_s,
        remaining_iters: remaining,
        gain_s,
        cost_s,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn moved_bytes_counts_rows_that_change_rank_on_their_level() {
        let decl: mheta_trace::AppDecl = serde_json::from_str(
            r#"{"version": 3, "app": "t", "rows": 256, "dist": [256, 0],
                "arrays": [{"name": "u", "bytes_per_row": 10, "read_only": false},
                           {"name": "c", "bytes_per_row": 1, "read_only": true, "level": 1}]}"#,
        )
        .unwrap();
        // Fine level: rows 128..256 change rank (1280 bytes); the coarse
        // level halves the boundaries, 64 of its 128 rows move (64 bytes).
        let b = moved_bytes(&decl, &Dist(vec![256, 0]), &Dist(vec![128, 128]));
        assert_eq!(b, 1344);
        // A coarse level of fewer than COARSE_MIN_ROWS rows a rank is
        // gathered onto the first rank either way: only fine rows move.
        let b = moved_bytes(&decl, &Dist(vec![8, 0]), &Dist(vec![4, 4]));
        assert_eq!(b, 40);
        assert_eq!(moved_bytes(&decl, &Dist(vec![4, 4]), &Dist(vec![4, 4])), 0);
    }

    use super::*;

    #[test]
    fn decide_needs_a_resolvable_gain_that_pays() {
        // 2% faster: below MIN_GAIN, whatever the remaining iterations.
        let d = decide(1.0, 0.98, 0.0, 1_000_000);
        assert!(
            !d.moved && d.reason.starts_with("already balanced"),
            "{d:?}"
        );
        // 10% slower: no gain, said as slower, not as a negative speed-up.
        let d = decide(1.0, 1.1, 0.0, 1_000_000);
        assert!(!d.moved && d.reason.starts_with("no gain"), "{d:?}");
        assert!(d.reason.contains("10.00% slower"), "{d:?}");
        // 30% faster, 10 iterations gain 3 s; a 5 s move does not pay.
        let d = decide(1.0, 0.7, 5.0, 10);
        assert!(!d.moved && d.reason.starts_with("too short"), "{d:?}");
        assert!((d.gain_s - 3.0).abs() < 1e-12);
        // ... a 2 s move does.
        let d = decide(1.0, 0.7, 2.0, 10);
        assert!(d.moved, "{d:?}");
    }
}
