//! What a move's pieces get across a pair ([`PairCost::moves`]): the
//! sizes measured, and how the move model scales the sweep's fit by them
//! ([`PairCost::move_scale`]).

use super::{COLD_BYTES, PairCost};
use serde::{Deserialize, Serialize};

/// Message sizes of [`PairCost::moves`]: a mebibyte, and
/// [`COLD_BYTES`].
pub const MOVE_BYTES: [u64; 2] = [1 << 20, COLD_BYTES as u64];

/// One size of [`PairCost::moves`].
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct MovePoint {
    pub bytes: u64,
    /// Half a round trip, median, both ends waiting as a move waits.
    pub one_way_s: f64,
}

/// A move's scale ([`PairCost::move_scale`]) at `bytes` from its scales
/// at sizes `points` (increasing): linear in log2 of the size between
/// them, flat outside them; 1 without any.
pub fn move_scale_at(points: &[(u64, f64)], bytes: f64) -> f64 {
    let (Some(&(b0, k0)), Some(&(b1, k1))) = (points.first(), points.last()) else {
        return 1.0;
    };
    if bytes <= b0 as f64 {
        return k0;
    }
    if bytes >= b1 as f64 {
        return k1;
    }
    let at = points.partition_point(|&(b, _)| (b as f64) <= bytes);
    let ((lo, klo), (hi, khi)) = (points[at - 1], points[at]);
    let (x, x0, x1) = (bytes.log2(), (lo as f64).log2(), (hi as f64).log2());
    klo + (khi - klo) * (x - x0) / (x1 - x0)
}

impl PairCost {
    /// How a move's piece of `bytes` compares with the sweep's messages
    /// of its size: at each of [`PairCost::moves`], the one-way time
    /// waited for as a move waits less the fit's time at 0 bytes, over
    /// the fit's time at that size less the same ([`move_scale_at`]
    /// between them). The sweep's ranks poll; where the link's work
    /// needs their cores it carries less than a move gets. 1 where not
    /// measured.
    pub fn move_scale(&self, bytes: f64) -> f64 {
        move_scale_at(&self.move_scales(), bytes)
    }

    /// [`PairCost::move_scale`] at each of [`PairCost::moves`] (a point
    /// that took no longer than the fit's fixed cost measures no rate and
    /// is left out).
    pub fn move_scales(&self) -> Vec<(u64, f64)> {
        let fixed = self.one_way_s(0.0);
        (self.moves.iter())
            .filter_map(|m| {
                let swept = self.one_way_s(m.bytes as f64) - fixed;
                let napped = m.one_way_s - fixed;
                (swept > 0.0 && napped > 0.0).then(|| (m.bytes, napped / swept))
            })
            .collect()
    }
}
