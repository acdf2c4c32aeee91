//! The task farm's pieces that are not MPI: the task kinds (a
//! communication-heavy one, [`mandel`], and a compute-heavy one, [`ep`]),
//! each with its numerics and its verification, behind [`Kind`]: what a
//! request and a result carry, what a worker computes, and what the
//! master checks and accumulates. The `farm` binary owns the MPI side.

pub mod ep;
pub mod mandel;

use anyhow::{Result, bail};
use serde_json::{Value, json};

/// A task kind with the master's running totals.
pub enum Kind {
    Mandel {
        m: mandel::Mandel,
        total: u64,
        image: Vec<u32>,
    },
    Ep {
        class: ep::Class,
        total: ep::Sums,
    },
}

/// Bytes of a request: the task index, a little-endian u64.
pub const REQUEST_BYTES: u64 = 8;
/// Bytes the farm puts before a result's payload: the task index and
/// the worker's compute time, ns.
pub const RESULT_HEADER: u64 = 16;

impl Kind {
    /// The name in the report.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Mandel { .. } => "mandel",
            Kind::Ep { .. } => "ep",
        }
    }

    /// Tasks in the run.
    pub fn tasks(&self) -> u64 {
        match self {
            Kind::Mandel { m, .. } => m.tiles(),
            Kind::Ep { class, .. } => class.batches(),
        }
    }

    /// The problem, for the report.
    pub fn problem(&self) -> Value {
        match self {
            Kind::Mandel { m, .. } => {
                json!({"size": m.size, "tile": m.tile, "max_iter": m.max_iter})
            }
            Kind::Ep { class, .. } => {
                json!({"class": class.name.to_string(), "m": class.m, "pairs_per_task": ep::NK})
            }
        }
    }

    /// Bytes of a whole task's result message (header and payload; for
    /// mandel, a full tile).
    pub fn result_bytes(&self) -> u64 {
        RESULT_HEADER
            + match self {
                Kind::Mandel { m, .. } => 8 + m.max_result_bytes(),
                Kind::Ep { .. } => 8 * (2 + ep::NQ as u64),
            }
    }

    /// Units of work of task `k` for the CPU emulation: pixels of a tile,
    /// pairs of a batch.
    pub fn units(&self, k: u64) -> u64 {
        match self {
            Kind::Mandel { m, .. } => {
                let r = m.rect(k);
                u64::from(r.w * r.h)
            }
            Kind::Ep { .. } => ep::NK,
        }
    }

    /// A worker's computation of task `k`: the result's payload.
    pub fn compute(&self, k: u64) -> Vec<u8> {
        match self {
            Kind::Mandel { m, .. } => mandel::encode(&m.compute(k)),
            Kind::Ep { .. } => ep::batch(k).encode(),
        }
    }

    /// Units of the master's work on a result of task `k` (checking it
    /// and placing it).
    pub fn master_units(&self, k: u64) -> u64 {
        match self {
            Kind::Mandel { m, .. } => {
                let r = m.rect(k);
                u64::from(r.w * r.h) + mandel::SAMPLES as u64 * u64::from(m.max_iter)
            }
            Kind::Ep { .. } => ep::NQ as u64,
        }
    }

    /// The master's check of task `k`'s payload, then its accumulation.
    pub fn absorb(&mut self, k: u64, payload: &[u8]) -> Result<()> {
        match self {
            Kind::Mandel { m, total, image } => {
                let (counts, sum) = mandel::decode(payload)?;
                *total += m.check(k, &counts, sum)?;
                place(m, image, k, &counts);
            }
            Kind::Ep { total, .. } => {
                let s = ep::Sums::decode(payload)?;
                s.check(k)?;
                total.add(&s);
            }
        }
        Ok(())
    }

    /// The whole run's verification after tasks `0..ran`: `verified` and
    /// the values checked. `serial`: also recompute those tiles serially
    /// (mandel). EP's published sums are for every batch of the class;
    /// after fewer, only the per-task checks stand, and the values say so.
    pub fn verify(&self, serial: bool, ran: u64) -> (bool, Value) {
        match self {
            Kind::Ep { class, total } if ran == class.batches() => ep::verify(class, total),
            Kind::Ep { class, total } => (
                true,
                json!({"sx": total.sx, "sy": total.sy, "q": total.q.to_vec(),
                       "reference": format!("not compared: {ran} of the class's {} batches ran", class.batches())}),
            ),
            Kind::Mandel { m, total, image } => {
                let placed: u64 = image.iter().map(|&c| u64::from(c)).sum();
                let mut v = json!({"total": total, "image_total": placed});
                let mut ok = placed == *total;
                if serial {
                    let want = m.serial_total(ran);
                    v["serial_total"] = json!(want);
                    ok &= want == *total;
                }
                (ok, v)
            }
        }
    }
}

/// Copy tile `k`'s counts into the image.
fn place(m: &mandel::Mandel, image: &mut Vec<u32>, k: u64, counts: &[u32]) {
    let size = m.size as usize;
    if image.is_empty() {
        image.resize(size * size, 0);
    }
    let r = m.rect(k);
    for (row, line) in counts.chunks_exact(r.w as usize).enumerate() {
        let at = (r.y0 as usize + row) * size + r.x0 as usize;
        image[at..at + line.len()].copy_from_slice(line);
    }
}

/// Parse `--workers r1,r2,...`: distinct ranks below `np`, none the
/// master, at least one. Default: every rank but the master.
pub fn parse_workers(text: Option<&str>, np: usize, master: usize) -> Result<Vec<usize>> {
    if master >= np {
        bail!("--master {master}: there are {np} ranks (0..{})", np - 1);
    }
    let Some(text) = text else {
        let all: Vec<usize> = (0..np).filter(|&r| r != master).collect();
        if all.is_empty() {
            bail!("the farm needs a worker besides the master: run on 2 ranks or more");
        }
        return Ok(all);
    };
    let mut out = Vec::new();
    for part in text.split(',') {
        let r: usize = part
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("--workers {text}: '{part}' is not a rank number"))?;
        if r >= np {
            bail!(
                "--workers {text}: rank {r} does not exist ({np} ranks, 0..{})",
                np - 1
            );
        }
        if r == master {
            bail!("--workers {text}: rank {r} is the master (--master {master})");
        }
        if out.contains(&r) {
            bail!("--workers {text}: rank {r} is listed twice");
        }
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_lists_are_checked() {
        assert_eq!(parse_workers(None, 4, 2).unwrap(), vec![0, 1, 3]);
        assert_eq!(parse_workers(Some("3, 1"), 4, 0).unwrap(), vec![3, 1]);
        for (bad, why) in [
            ("1,7", "rank 7 does not exist"),
            ("1,x", "'x' is not a rank number"),
            ("0,1", "rank 0 is the master"),
            ("1,1", "listed twice"),
            ("", "'' is not a rank number"),
        ] {
            let e = parse_workers(Some(bad), 4, 0).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("--workers"), "{bad}: {e}");
        }
        assert!(parse_workers(None, 1, 0).is_err());
        assert!(parse_workers(None, 2, 2).is_err());
    }

    #[test]
    fn the_master_places_and_totals_tiles() {
        let m = mandel::Mandel::new(40, 16, 30).unwrap();
        let mut k = Kind::Mandel {
            m: m.clone(),
            total: 0,
            image: Vec::new(),
        };
        for t in (0..m.tiles()).rev() {
            let p = Kind::Mandel {
                m: m.clone(),
                total: 0,
                image: Vec::new(),
            }
            .compute(t);
            k.absorb(t, &p).unwrap();
        }
        let (ok, v) = k.verify(true, m.tiles());
        assert!(ok, "{v}");
        assert_eq!(v["total"], v["serial_total"]);
        // A tile's payload under another tile's index is refused.
        let p = k.compute(1);
        assert!(k.absorb(0, &p).is_err());
    }
}
