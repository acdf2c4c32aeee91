//! The out-of-core rule: which of a rank's distributed arrays live on disk
//! under a given memory budget, and in which pieces (ICLAs) they are swept.
//! The apps' storage layer follows it to lay arrays out, and the model
//! (MHETA section 4.2.1) follows the same function to derive `M_i(m)`,
//! `M_β(m)` and `N_L(m)` for any distribution, so prediction and run
//! cannot disagree on what is out of core.
//!
//! # The out-of-core rule
//!
//! All of a rank's arrays compete for its memory budget `M` (`--mem-limit`
//! or the cluster spec's `mem_limit_mb`). Small per-rank data that every
//! kernel keeps in memory (vectors, ghost rows, row pointers) is `fixed`.
//! Then ([`plan`]):
//!
//! 1. If `fixed + Σ bytes(a) ≤ M`, every array stays in core: one pass.
//! 2. Otherwise a subset `S` of the arrays goes to disk. Each array of `S`
//!    is read once per sweep, and written back once if it is not
//!    read-only, in pieces. The rule prices a choice by the bytes it moves
//!    per sweep, each piece padded to 4 KiB for direct I/O, plus
//!    [`CALL_BYTES`] per call for the per-call overhead (O_r, O_w), plus
//!    the halo read of a stencil array's next piece:
//!    `Σ_{a∈S} (1 + written(a)) × Σ_k (pad(piece_k(a)) + CALL_BYTES)`,
//!    and takes the feasible `S` of least cost. This is where the paper's
//!    "simple heuristic" (spill what does not fit) goes wrong: spilling a
//!    written array costs twice what a read-only one of the same size does,
//!    and a spill that leaves room for only tiny pieces pays the per-call
//!    overhead thousands of times.
//! 3. The arrays of `S` are processed in lockstep, in pieces of whole rows;
//!    a piece's rows of all of them together take at most `B` bytes (each
//!    array's slot padded to 4 KiB for direct I/O). Memory left after the
//!    in-core arrays pays for `nbuf` piece buffers (`nbuf` = 2 with
//!    `--prefetch`: double buffering, else 1) and for the first row of
//!    every piece of a stencil array (its halo for the piece above). `B` is
//!    the largest that fits. The pieces are then the ICLAs: `M_i(m)` is
//!    array m's share of a piece, `N_L = ⌈M_β(m)/M_i(m)⌉` the number of
//!    pieces (passes).
//! 4. If even the smallest piece (one row of every array of `S`) does not
//!    fit, the limit is too small and the rank stops with an error that
//!    says how much one row needs.

use std::ops::Range;

/// Direct I/O alignment: every piece's slot is padded to this many bytes.
pub const ALIGN: usize = 4096;

/// `x` rounded up to a multiple of `to`.
pub fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// What one I/O call costs beyond its bytes, in bytes: about 0.15 ms of
/// per-call overhead at the default 100 MB/s throttle.
pub const CALL_BYTES: u64 = 16 << 10;

/// Bytes of each local row of an array: all alike (a dense array, kept
/// as one number so that the rule costs O(pieces), not O(rows): the model
/// applies it to thousands of row counts in a search) or one figure per
/// row (cg's sparse rows).
#[derive(Clone, Debug, PartialEq)]
pub enum RowBytes {
    Uniform { rows: usize, bytes: usize },
    Each(Vec<usize>),
}

impl RowBytes {
    pub fn len(&self) -> usize {
        match self {
            RowBytes::Uniform { rows, .. } => *rows,
            RowBytes::Each(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest row, bytes (0 without rows).
    pub fn max(&self) -> usize {
        match self {
            RowBytes::Uniform { rows: 0, .. } => 0,
            RowBytes::Uniform { bytes, .. } => *bytes,
            RowBytes::Each(v) => v.iter().copied().max().unwrap_or(0),
        }
    }

    /// Bytes of the local rows `r`.
    pub fn sum(&self, r: Range<usize>) -> u64 {
        match self {
            RowBytes::Uniform { bytes, .. } => (r.len() * bytes) as u64,
            RowBytes::Each(v) => v[r].iter().map(|&b| b as u64).sum(),
        }
    }

    /// Row by row, `self + other` (both of the same rows).
    fn add(&self, other: &RowBytes) -> RowBytes {
        match (self, other) {
            (RowBytes::Uniform { rows, bytes: a }, RowBytes::Uniform { bytes: b, .. }) => {
                RowBytes::Uniform {
                    rows: *rows,
                    bytes: a + b,
                }
            }
            _ => RowBytes::Each(
                (0..self.len())
                    .map(|r| (self.sum(r..r + 1) + other.sum(r..r + 1)) as usize)
                    .collect(),
            ),
        }
    }
}

/// One distributed array as the memory rule sees it.
#[derive(Clone, Debug)]
pub struct Need {
    pub name: String,
    pub row_bytes: RowBytes,
    pub read_only: bool,
    /// A stencil array: sweeps need the rows just above and below a piece.
    pub halo: bool,
}

impl Need {
    pub fn fixed(name: &str, rows: usize, bytes: usize, read_only: bool, halo: bool) -> Need {
        Need {
            name: name.into(),
            row_bytes: RowBytes::Uniform { rows, bytes },
            read_only,
            halo,
        }
    }

    fn total(&self) -> u64 {
        self.row_bytes.sum(0..self.row_bytes.len())
    }
}

/// The rule's decision for one rank.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MemPlan {
    /// Per array (in the order given): on disk?
    pub out_of_core: Vec<bool>,
    /// Local row ranges of the pieces; one piece `[0, rows)` when all is in core.
    pub pieces: Vec<Range<usize>>,
    /// Largest piece of all out-of-core arrays together, bytes (the ICLA).
    pub icla_bytes: u64,
    /// Piece buffers per out-of-core array (2 with prefetching).
    pub buffers: usize,
}

impl MemPlan {
    /// Everything in core, one piece.
    pub fn in_core(arrays: usize, rows: usize) -> MemPlan {
        MemPlan {
            out_of_core: vec![false; arrays],
            pieces: std::iter::once(0..rows).collect(),
            icla_bytes: 0,
            buffers: 0,
        }
    }

    pub fn passes(&self) -> usize {
        if self.out_of_core.iter().any(|&o| o) {
            self.pieces.len()
        } else {
            1
        }
    }
}

/// The memory limit cannot hold what the rule needs.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error(
    "memory limit {} MB is smaller than one row: the in-core data takes {fixed} bytes and one row of {rows} on disk needs {row} bytes more (at least {} MB in all)",
    *budget as f64 / 1e6, (*need as f64 / 1e6 * 1000.0).ceil() / 1000.0
)]
pub struct TooSmall {
    pub budget: u64,
    pub fixed: u64,
    pub rows: String,
    pub row: u64,
    pub need: u64,
}

/// Greedy pieces: consecutive rows whose padded bytes stay within `limit`.
fn pieces_within(row_bytes: &RowBytes, limit: usize) -> Option<Vec<Range<usize>>> {
    let row_bytes = match row_bytes {
        RowBytes::Uniform { rows, bytes } => {
            if *bytes > limit {
                return None;
            }
            // As many rows as fit, in every piece but the last.
            let k = limit.checked_div(*bytes).unwrap_or(usize::MAX).max(1);
            return Some(if *rows == 0 {
                std::iter::once(0..0).collect()
            } else {
                (0..*rows)
                    .step_by(k)
                    .map(|a| a..(a.saturating_add(k)).min(*rows))
                    .collect()
            });
        }
        RowBytes::Each(v) => v,
    };
    let mut out = Vec::new();
    let mut start = 0;
    let mut acc = 0usize;
    for (r, &b) in row_bytes.iter().enumerate() {
        if b > limit {
            return None;
        }
        if acc + b > limit {
            out.push(start..r);
            start = r;
            acc = 0;
        }
        acc += b;
    }
    if start < row_bytes.len() || out.is_empty() {
        out.push(start..row_bytes.len());
    }
    Some(out)
}

/// Apply the out-of-core rule (module docs) for one rank.
pub fn plan(
    budget: Option<u64>,
    fixed: u64,
    needs: &[Need],
    prefetch: bool,
) -> Result<MemPlan, TooSmall> {
    let rows = needs.first().map_or(0, |n| n.row_bytes.len());
    let all: u64 = needs.iter().map(Need::total).sum();
    let Some(m) = budget else {
        return Ok(MemPlan::in_core(needs.len(), rows));
    };
    if fixed + all <= m || rows == 0 {
        return Ok(MemPlan::in_core(needs.len(), rows));
    }
    let nbuf = if prefetch { 2 } else { 1 };
    let mut best: Option<(u64, usize, MemPlan)> = None;
    let mut smallest_row = u64::MAX;
    for mask in 1u32..(1 << needs.len()) {
        let (candidate, row_cost) = plan_of(mask, m.checked_sub(fixed), needs, nbuf);
        smallest_row = smallest_row.min(row_cost);
        let Some(candidate) = candidate else {
            continue;
        };
        let traffic = traffic(mask, needs, &candidate);
        let better = match &best {
            None => true,
            Some((t, n, _)) => traffic < *t || (traffic == *t && candidate.pieces.len() < *n),
        };
        if better {
            best = Some((traffic, candidate.pieces.len(), candidate));
        }
    }
    best.map(|(_, _, p)| p).ok_or_else(|| TooSmall {
        budget: m,
        fixed,
        rows: needs
            .iter()
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>()
            .join("+"),
        row: smallest_row.saturating_sub(0),
        need: fixed + smallest_row,
    })
}

/// The plan with the arrays of `mask` on disk and `nbuf` buffers in the
/// `free` bytes the fixed data leave of the budget (None: they exceed
/// it), if one fits; and what one row of them costs with the in-core
/// arrays (for the error when nothing fits).
fn plan_of(mask: u32, free: Option<u64>, needs: &[Need], nbuf: usize) -> (Option<MemPlan>, u64) {
    let s: Vec<usize> = (0..needs.len()).filter(|i| mask & (1 << i) != 0).collect();
    let in_core: u64 = (0..needs.len())
        .filter(|i| mask & (1 << i) == 0)
        .map(|i| needs[i].total())
        .sum();
    // Bytes of each row of all arrays of S.
    let row_sum = s
        .iter()
        .skip(1)
        .fold(needs[s[0]].row_bytes.clone(), |acc, &i| {
            acc.add(&needs[i].row_bytes)
        });
    // A stencil array on disk keeps a few rows in memory: its first and
    // last rows, the carry, and the halo read of the next piece.
    let halo_rows: u64 = s
        .iter()
        .filter(|&&i| needs[i].halo)
        .map(|&i| {
            let b = needs[i].row_bytes.max();
            (4 * b + round_up(b, ALIGN)) as u64
        })
        .sum();
    let pad = (s.len() * ALIGN) as u64;
    let max_row = row_sum.max() as u64;
    let cost = |limit: u64| nbuf as u64 * (limit + pad) + halo_rows;
    let row_cost = in_core + cost(max_row);
    // The largest piece limit whose cost fits: the cost grows with the
    // limit and does not depend on how many pieces it makes, so the limit
    // follows from the budget, and one greedy cut gives the pieces.
    let limit = free
        .and_then(|f| f.checked_sub(in_core))
        .and_then(|avail| avail.checked_sub(halo_rows))
        .map(|r| r / nbuf as u64)
        .and_then(|room| room.checked_sub(pad))
        .filter(|&limit| limit >= max_row);
    let Some(pieces) = limit.and_then(|l| pieces_within(&row_sum, l as usize)) else {
        return (None, row_cost);
    };
    let icla = pieces
        .iter()
        .map(|p| row_sum.sum(p.clone()))
        .max()
        .unwrap_or(0);
    let plan = MemPlan {
        out_of_core: (0..needs.len()).map(|i| mask & (1 << i) != 0).collect(),
        pieces,
        icla_bytes: icla,
        buffers: nbuf,
    };
    (Some(plan), row_cost)
}

/// Estimated I/O of a sweep under `plan` (the arrays of `mask` on disk),
/// in bytes (module docs).
fn traffic(mask: u32, needs: &[Need], plan: &MemPlan) -> u64 {
    (0..needs.len())
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| {
            let moved: u64 = plan
                .pieces
                .iter()
                .map(|p| {
                    let b = needs[i].row_bytes.sum(p.clone()) as usize;
                    round_up(b.max(1), ALIGN) as u64 + CALL_BYTES
                })
                .sum();
            let halo = if needs[i].halo {
                plan.pieces.len() as u64 * (ALIGN as u64 + CALL_BYTES)
            } else {
                0
            };
            moved * if needs[i].read_only { 1 } else { 2 } + halo
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_in_core_when_it_fits_or_no_limit() {
        let n = [Need::fixed("u", 100, 800, false, true)];
        assert_eq!(plan(None, 0, &n, false).unwrap().passes(), 1);
        assert_eq!(plan(Some(80_000), 0, &n, false).unwrap().passes(), 1);
    }

    #[test]
    fn passes_follow_the_limit() {
        // 100 rows of 4096 bytes, one buffer: 10 rows + pad per piece.
        let n = [Need::fixed("a", 100, 4096, true, false)];
        let p = plan(Some(10 * 4096 + 4096), 0, &n, false).unwrap();
        assert_eq!(p.out_of_core, vec![true]);
        assert_eq!(p.passes(), 10);
        assert!(p.pieces.iter().all(|r| r.len() == 10));
        // Prefetching doubles the buffers: 2 * (B + 4096) <= 45056 leaves
        // B = 18432, 4 rows a piece.
        let q = plan(Some(10 * 4096 + 4096), 0, &n, true).unwrap();
        assert_eq!(q.passes(), 25);
        assert_eq!(q.buffers, 2);
    }

    #[test]
    fn spills_the_read_only_array_when_traffic_is_lower() {
        // u (written) and f (read-only), same size; room for one of them:
        // spilling f costs half the I/O of spilling u.
        let n = [
            Need::fixed("u", 100, 1000, false, true),
            Need::fixed("f", 100, 1000, true, false),
        ];
        let p = plan(Some(100_000 + 30_000), 0, &n, false).unwrap();
        assert_eq!(p.out_of_core, vec![false, true]);
    }

    #[test]
    fn too_small_names_the_row() {
        let n = [Need::fixed("u", 10, 100_000, false, true)];
        let e = plan(Some(50_000), 1000, &n, false).unwrap_err();
        assert!(e.to_string().contains("smaller than one row"), "{e}");
    }

    #[test]
    fn uniform_rows_cut_as_the_same_rows_listed_one_by_one() {
        // The O(pieces) path for dense arrays and the row-by-row one agree
        // on every budget, with and without prefetching, for one and for
        // two arrays.
        let as_each = |n: &Need| Need {
            row_bytes: RowBytes::Each(vec![n.row_bytes.max(); n.row_bytes.len()]),
            ..n.clone()
        };
        for rows in [1, 7, 100, 1000] {
            let one = [Need::fixed("u", rows, 8200, false, true)];
            let two = [
                Need::fixed("u", rows, 8200, false, true),
                Need::fixed("f", rows, 3000, true, false),
            ];
            for needs in [&one[..], &two[..]] {
                let each: Vec<Need> = needs.iter().map(as_each).collect();
                for budget in (1..60).map(|k| k * 37_000) {
                    for prefetch in [false, true] {
                        let u = plan(Some(budget), 5000, needs, prefetch);
                        let e = plan(Some(budget), 5000, &each, prefetch);
                        assert_eq!(u, e, "{rows} rows, budget {budget}, prefetch {prefetch}");
                    }
                }
            }
        }
    }

    #[test]
    fn uneven_rows_are_cut_by_bytes() {
        let n = [Need {
            name: "a".into(),
            row_bytes: RowBytes::Each(vec![100, 5000, 100, 100, 5000, 100]),
            read_only: true,
            halo: false,
        }];
        let p = plan(Some(5200 + 4096), 0, &n, false).unwrap();
        for r in &p.pieces {
            let b = n[0].row_bytes.sum(r.clone());
            assert!(b <= 5200, "{r:?}");
        }
        assert_eq!(p.pieces.iter().map(|r| r.len()).sum::<usize>(), 6);
    }
}
