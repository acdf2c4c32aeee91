//! The farm's compute-heavy task: NPB EP's Gaussian-pair Monte Carlo.
//!
//! NPB EP draws 2^(M+1) uniform numbers from the NPB linear congruential
//! generator x ← a·x mod 2^46 (a = 5^13, seed s = 271828183), pairs them
//! as (x1, x2) on [-1, 1]², keeps the pairs inside the unit circle,
//! turns each into two Gaussian deviates by the polar (Marsaglia) method,
//! sums the deviates (sx, sy) and counts the pairs in each square annulus
//! l ≤ max(|X|, |Y|) < l + 1 (q[0..10]). The numbers come in batches of
//! NK = 2^16 pairs; batch k starts at the stream's element 2·NK·k, so its
//! seed is s·a^(2·NK·k) mod 2^46 whichever rank draws it. One batch is
//! one farm task.
//!
//! Verification, NPB style: sx and sy summed over all batches against
//! NPB's published values for the class, relative error ≤ 1e-8; per
//! task, the sums are finite and the counts add up to the accepted
//! pairs (no more than NK).

use anyhow::{Result, bail};
use serde_json::{Value, json};

/// log2 of the pairs per batch (NPB's MK).
pub const MK: u32 = 16;
/// Pairs per batch (NPB's NK).
pub const NK: u64 = 1 << MK;
/// Annuli counted (NPB's NQ).
pub const NQ: usize = 10;
/// The generator's multiplier, 5^13.
pub const A: u64 = 1_220_703_125;
/// The generator's seed.
pub const S: u64 = 271_828_183;
/// NPB's tolerance on sx and sy.
pub const EPSILON: f64 = 1e-8;
const MASK46: u64 = (1 << 46) - 1;
const R46: f64 = 1.0 / (1u64 << 46) as f64;

/// An EP class: M (2^M pairs in all) and NPB's published sums.
#[derive(Clone, Copy, Debug)]
pub struct Class {
    pub name: char,
    pub m: u32,
    pub sx: f64,
    pub sy: f64,
}

/// The classes this farm runs, with NPB's reference sums (digits as NPB
/// publishes them, beyond f64's).
#[allow(clippy::excessive_precision)]
pub const CLASSES: [Class; 3] = [
    Class {
        name: 'S',
        m: 24,
        sx: -3.247_834_652_034_740e3,
        sy: -6.958_407_078_382_297e3,
    },
    Class {
        name: 'W',
        m: 25,
        sx: -2.863_319_731_645_753e3,
        sy: -6.320_053_679_109_499e3,
    },
    Class {
        name: 'A',
        m: 28,
        sx: -4.295_875_165_629_892e3,
        sy: -1.580_732_573_678_431e4,
    },
];

/// The class named `name` (S, W or A).
pub fn class(name: &str) -> Result<Class> {
    match CLASSES
        .iter()
        .find(|c| name.eq_ignore_ascii_case(&c.name.to_string()))
    {
        Some(c) => Ok(*c),
        None => bail!("--class {name}: EP runs class S, W or A"),
    }
}

impl Class {
    /// Batches (tasks) of NK pairs: 2^(M − MK).
    pub fn batches(&self) -> u64 {
        1 << (self.m - MK)
    }
}

/// x·y mod 2^46 (NPB's randlc without the scaling).
pub fn mul46(x: u64, y: u64) -> u64 {
    x.wrapping_mul(y) & MASK46
}

/// a^e mod 2^46 by repeated squaring.
pub fn pow46(a: u64, mut e: u64) -> u64 {
    let (mut base, mut r) = (a & MASK46, 1u64);
    while e > 0 {
        if e & 1 == 1 {
            r = mul46(r, base);
        }
        base = mul46(base, base);
        e >>= 1;
    }
    r
}

/// The generator's state before batch `k`: s·a^(2·NK·k) mod 2^46 (NPB's
/// seed jump by the binary expansion of k over an = a^(2·NK)).
pub fn batch_seed(k: u64) -> u64 {
    let an = pow46(A, 2 * NK);
    mul46(S, pow46(an, k))
}

/// One batch's sums: sx, sy and the annulus counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sums {
    pub sx: f64,
    pub sy: f64,
    pub q: [u64; NQ],
}

/// Batch `k`: NK pairs from its seed, the polar method, the sums.
pub fn batch(k: u64) -> Sums {
    let mut x = batch_seed(k);
    let mut s = Sums::default();
    let mut next = || {
        x = mul46(x, A);
        x as f64 * R46
    };
    for _ in 0..NK {
        let x1 = 2.0 * next() - 1.0;
        let x2 = 2.0 * next() - 1.0;
        let t1 = x1 * x1 + x2 * x2;
        if t1 <= 1.0 {
            let t2 = (-2.0 * t1.ln() / t1).sqrt();
            let (t3, t4) = (x1 * t2, x2 * t2);
            let l = t3.abs().max(t4.abs()) as usize;
            s.q[l.min(NQ - 1)] += 1;
            s.sx += t3;
            s.sy += t4;
        }
    }
    s
}

impl Sums {
    /// The wire form: sx, sy, then q as 8-byte little-endian words.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(8 * (2 + NQ));
        b.extend_from_slice(&self.sx.to_le_bytes());
        b.extend_from_slice(&self.sy.to_le_bytes());
        for q in self.q {
            b.extend_from_slice(&q.to_le_bytes());
        }
        b
    }

    /// Read [`Sums::encode`]'s form.
    pub fn decode(b: &[u8]) -> Result<Sums> {
        if b.len() != 8 * (2 + NQ) {
            bail!("EP result of {} bytes, not {}", b.len(), 8 * (2 + NQ));
        }
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[8 * i..8 * i + 8]);
            w
        };
        let mut s = Sums {
            sx: f64::from_le_bytes(word(0)),
            sy: f64::from_le_bytes(word(1)),
            q: [0; NQ],
        };
        for (l, q) in s.q.iter_mut().enumerate() {
            *q = u64::from_le_bytes(word(2 + l));
        }
        Ok(s)
    }

    /// The per-task check: finite sums, and counts that add up to at
    /// most NK accepted pairs, with at least one (π/4 of NK accept on
    /// average).
    pub fn check(&self, k: u64) -> Result<u64> {
        let accepted: u64 = self.q.iter().sum();
        if !(self.sx.is_finite() && self.sy.is_finite()) {
            bail!(
                "EP batch {k}: sums not finite (sx {}, sy {})",
                self.sx,
                self.sy
            );
        }
        if accepted == 0 || accepted > NK {
            bail!("EP batch {k}: {accepted} accepted pairs, not in 1..={NK}");
        }
        Ok(accepted)
    }

    /// Add another batch's sums.
    pub fn add(&mut self, o: &Sums) {
        self.sx += o.sx;
        self.sy += o.sy;
        for (a, b) in self.q.iter_mut().zip(o.q) {
            *a += b;
        }
    }
}

/// The whole run's verification: sx and sy against the class's
/// published values (relative error ≤ [`EPSILON`]), and the values
/// checked, for the report.
pub fn verify(c: &Class, total: &Sums) -> (bool, Value) {
    let ex = ((total.sx - c.sx) / c.sx).abs();
    let ey = ((total.sy - c.sy) / c.sy).abs();
    let ok = ex <= EPSILON && ey <= EPSILON;
    let gc: u64 = total.q.iter().sum();
    (
        ok,
        json!({
            "sx": total.sx, "sy": total.sy, "sx_ref": c.sx, "sy_ref": c.sy,
            "sx_rel_err": ex, "sy_rel_err": ey, "epsilon": EPSILON,
            "gaussian_pairs": gc, "q": total.q.to_vec(),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_jump_lands_where_the_stream_does() {
        // Batch 3's seed is the stream advanced 3·2·NK steps from s.
        let mut x = S;
        for _ in 0..3 * 2 * NK {
            x = mul46(x, A);
        }
        assert_eq!(batch_seed(3), x);
        assert_eq!(batch_seed(0), S);
    }

    #[test]
    fn class_s_matches_npbs_published_sums() {
        let c = class("s").unwrap();
        let mut t = Sums::default();
        for k in 0..c.batches() {
            let s = batch(k);
            s.check(k).unwrap();
            assert_eq!(Sums::decode(&s.encode()).unwrap(), s);
            t.add(&s);
        }
        let (ok, v) = verify(&c, &t);
        assert!(ok, "{v}");
        // A wrong sum fails.
        t.sx += 1e-3;
        assert!(!verify(&c, &t).0);
    }

    #[test]
    fn bad_results_are_refused() {
        let mut s = batch(0);
        s.sx = f64::NAN;
        assert!(s.check(0).is_err());
        let mut s = batch(0);
        s.q[0] += NK;
        assert!(s.check(0).is_err());
        assert!(Sums::decode(&[0u8; 12]).is_err());
        assert!(class("B").is_err());
    }
}
