//! GEN_BLOCK distributions: `s_0..s_{P-1}` rows per rank, each >= 0,
//! summing to N; rank i owns rows `[sum_{j<i} s_j, sum_{j<=i} s_j)`.

use std::fmt;

/// Why a distribution was rejected.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DistError {
    #[error("--dist {text:?}: {detail}")]
    Parse { text: String, detail: String },
    #[error("--dist has {found} entries but there are {expected} ranks")]
    Length { found: usize, expected: usize },
    #[error("--dist sums to {found} rows but N = {expected}")]
    Sum { found: u64, expected: u64 },
}

/// Prefix sums of per-row work: entry r is the work of rows `[0, r)`, so a
/// block's work is a difference of two entries.
pub fn prefix_sums(w: &[u64]) -> Vec<u64> {
    let mut acc = 0u64;
    std::iter::once(0)
        .chain(w.iter().map(|&x| {
            acc += x;
            acc
        }))
        .collect()
}

/// A GEN_BLOCK distribution.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Dist(pub Vec<u64>);

/// Fewest rows per rank that a coarse multigrid level keeps before
/// [`Dist::coarse_level`] gathers it onto fewer ranks.
pub const COARSE_MIN_ROWS: u64 = 16;

impl Dist {
    /// Parse `s0,s1,...` and check it against `ranks` and `rows`.
    pub fn parse(text: &str, ranks: usize, rows: u64) -> Result<Dist, DistError> {
        let mut v = Vec::new();
        for part in text.split(',') {
            let p = part.trim();
            let x = p.parse::<u64>().map_err(|_| DistError::Parse {
                text: text.into(),
                detail: format!("{p:?} is not a non-negative row count"),
            })?;
            v.push(x);
        }
        let d = Dist(v);
        d.check(ranks, rows)?;
        Ok(d)
    }

    /// Check length and sum.
    pub fn check(&self, ranks: usize, rows: u64) -> Result<(), DistError> {
        if self.0.len() != ranks {
            return Err(DistError::Length {
                found: self.0.len(),
                expected: ranks,
            });
        }
        let sum = self.total();
        if sum != rows {
            return Err(DistError::Sum {
                found: sum,
                expected: rows,
            });
        }
        Ok(())
    }

    /// The next coarser grid level's distribution (multigrid): every
    /// boundary halved, so a coarse row lives with the fine row at its
    /// centre.
    pub fn coarser(&self) -> Dist {
        let offs: Vec<u64> = self
            .offsets()
            .iter()
            .chain(std::iter::once(&self.total()))
            .map(|&o| o / 2)
            .collect();
        Dist(offs.windows(2).map(|w| w[1] - w[0]).collect())
    }

    /// The next coarser grid level's distribution as multigrid keeps it:
    /// [`Dist::coarser`], then [`Dist::gathered`] onto ranks holding at
    /// least [`COARSE_MIN_ROWS`] rows each. A coarse level of a few rows per
    /// rank is all halo exchanges and no work; on fewer ranks it needs fewer
    /// of them at once (as PETSc's `PCTELESCOPE` and hypre's coarse-grid
    /// agglomeration do).
    pub fn coarse_level(&self) -> Dist {
        self.coarser().gathered(COARSE_MIN_ROWS)
    }

    /// The rows on fewer ranks when the owners hold fewer than `min` rows
    /// each on average: the owners (ranks with rows) form consecutive
    /// groups, as few as keep `min` rows per group (at least one), and
    /// each group's rows go to its first rank. Still GEN_BLOCK; unchanged
    /// when the owners already average `min` rows.
    pub fn gathered(&self, min: u64) -> Dist {
        let owners: Vec<usize> = (0..self.ranks()).filter(|&i| self.0[i] > 0).collect();
        let k = owners.len() as u64;
        if k <= 1 || self.total() >= min.max(1) * k {
            return self.clone();
        }
        let groups = (self.total() / min.max(1)).max(1);
        let per = k.div_ceil(groups) as usize;
        let mut out = vec![0; self.ranks()];
        for g in owners.chunks(per) {
            out[g[0]] = g.iter().map(|&i| self.0[i]).sum();
        }
        Dist(out)
    }

    /// Equal blocks; the first `rows % ranks` ranks get one more row.
    pub fn block(ranks: usize, rows: u64) -> Dist {
        let p = ranks as u64;
        Dist((0..p).map(|i| rows / p + u64::from(i < rows % p)).collect())
    }

    /// Rows proportional to `weights` (largest-remainder rounding).
    pub fn proportional(weights: &[f64], rows: u64) -> Dist {
        let total: f64 = weights.iter().map(|w| w.max(0.0)).sum();
        if total <= 0.0 {
            return Dist::block(weights.len(), rows);
        }
        let exact: Vec<f64> = weights
            .iter()
            .map(|w| w.max(0.0) / total * rows as f64)
            .collect();
        let mut s: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
        let mut left = rows - s.iter().sum::<u64>();
        let mut order: Vec<usize> = (0..s.len()).collect();
        order.sort_by(|&a, &b| {
            let ra = exact[a] - exact[a].floor();
            let rb = exact[b] - exact[b].floor();
            rb.total_cmp(&ra).then(a.cmp(&b))
        });
        for &i in order.iter().cycle() {
            if left == 0 {
                break;
            }
            s[i] += 1;
            left -= 1;
        }
        Dist(s)
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn ranks(&self) -> usize {
        self.0.len()
    }

    /// First global row of each rank.
    pub fn offsets(&self) -> Vec<u64> {
        let mut acc = 0;
        self.0
            .iter()
            .map(|&s| {
                let o = acc;
                acc += s;
                o
            })
            .collect()
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|x| x.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathered_keeps_min_rows_per_owner_in_consecutive_groups() {
        // 255 rows on 8 ranks (about 32 each): 7 groups of 32 would need
        // groups of 2 ranks, so 4 groups.
        let d = Dist(vec![32, 32, 32, 32, 32, 32, 32, 31]);
        assert_eq!(d.gathered(32).0, vec![64, 0, 64, 0, 64, 0, 63, 0]);
        // Already 32 a rank: unchanged; below one group's worth: one rank.
        let e = Dist(vec![32, 32]);
        assert_eq!(e.gathered(32), e);
        assert_eq!(Dist(vec![3, 4, 0, 5]).gathered(32).0, vec![12, 0, 0, 0]);
        // Ranks without rows are skipped, not counted.
        assert_eq!(
            Dist(vec![0, 10, 10, 0, 10, 10]).gathered(20).0,
            vec![0, 20, 0, 0, 20, 0]
        );
        // A level's distribution: halved, then gathered; sums kept.
        let f = Dist::block(8, 2047);
        let mut l = f.clone();
        for _ in 0..10 {
            let next = l.coarse_level();
            assert_eq!(next.total(), l.total() / 2);
            assert!(next.0.iter().zip(&l.0).all(|(&a, &b)| b > 0 || a == 0));
            l = next;
        }
    }

    #[test]
    fn parse_checks_length_and_sum() {
        assert_eq!(Dist::parse("3,0,7", 3, 10).unwrap().0, vec![3, 0, 7]);
        assert_eq!(
            Dist::parse("3,7", 3, 10),
            Err(DistError::Length {
                found: 2,
                expected: 3
            })
        );
        assert_eq!(
            Dist::parse("3,0,6", 3, 10),
            Err(DistError::Sum {
                found: 9,
                expected: 10
            })
        );
        assert!(matches!(
            Dist::parse("3,-1,8", 3, 10),
            Err(DistError::Parse { .. })
        ));
    }

    #[test]
    fn block_and_proportional() {
        assert_eq!(Dist::block(3, 10).0, vec![4, 3, 3]);
        assert_eq!(Dist::proportional(&[2.0, 1.0], 1200).0, vec![800, 400]);
        let d = Dist::proportional(&[1.0, 1.0, 1.0], 10);
        assert_eq!(d.total(), 10);
        assert_eq!(d.offsets(), vec![0, d.0[0], d.0[0] + d.0[1]]);
    }
}
