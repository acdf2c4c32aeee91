//! What a trace says about stages and I/O, in the paper's terms (MHETA
//! section 4.1): per stage, its time split into I/O and computation
//! (T_Φ = stage time − I/O inside it); per variable (the file passed to
//! `MPI_File_open`), the read and write calls, with the per-call overheads
//! O_r, O_w fitted apart from the per-byte latencies r(m), w(m) when the
//! calls have different sizes; and for prefetched reads (recorded with the
//! fig. 5 trick) the read latency T_r and the overlapped computation T_A.

use mheta_trace::{Iteration, RankTrace, What};
use serde::Serialize;

/// One stage of one iteration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageTime {
    pub total_s: f64,
    pub io_s: f64,
    /// T_Φ: the stage minus the I/O inside it.
    pub compute_s: f64,
}

/// A prefetched read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prefetch {
    /// T_r(m) (with O_r): the read, done blocking while recording.
    pub read_s: f64,
    /// T_A: from the prefetch's issue to its wait.
    pub overlap_s: f64,
    pub bytes: u64,
}

/// Reads or writes of one variable.
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
pub struct Calls {
    pub calls: u64,
    pub bytes: u64,
    pub time_s: f64,
    /// Per-call overhead (O_r or O_w) and per-byte cost (r(m) or w(m)) by
    /// least squares over the calls; `None` when all calls had one size
    /// (then the cluster profile's disk figures separate them).
    pub overhead_s: Option<f64>,
    pub per_byte_s: Option<f64>,
    #[serde(skip)]
    samples: Vec<(f64, f64)>,
}

impl Calls {
    fn add(&mut self, bytes: u64, secs: f64) {
        self.calls += 1;
        self.bytes += bytes;
        self.time_s += secs;
        self.samples.push((bytes as f64, secs));
    }

    fn fit(&mut self) {
        if let Some((o, b)) = mheta_profile::line_fit(&self.samples) {
            self.overhead_s = Some(o);
            self.per_byte_s = Some(b);
        }
    }
}

/// I/O of one variable over all recorded iterations of a rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VarIo {
    pub name: String,
    pub reads: Calls,
    pub writes: Calls,
    pub seeks: u64,
    pub seek_s: f64,
    pub prefetches: Vec<Prefetch>,
}

/// The stages of one iteration, in order.
pub fn stages(it: &Iteration) -> Vec<StageTime> {
    let mut out = Vec::new();
    let mut open: Option<(u64, f64)> = None;
    for e in it.events.iter().filter(|e| e.thread == 0) {
        match &e.what {
            What::StageBegin => open = Some((e.t0_ns, 0.0)),
            What::StageEnd => {
                if let Some((t0, io)) = open.take() {
                    let total = (e.t0_ns.saturating_sub(t0)) as f64 * 1e-9;
                    out.push(StageTime {
                        total_s: total,
                        io_s: io,
                        compute_s: (total - io).max(0.0),
                    });
                }
            }
            w if is_io(w) => {
                if let Some((_, io)) = open.as_mut() {
                    *io += (e.t1_ns - e.t0_ns) as f64 * 1e-9;
                }
            }
            _ => {}
        }
    }
    out
}

fn is_io(w: &What) -> bool {
    matches!(
        w,
        What::FileRead { .. }
            | What::FileWrite { .. }
            | What::FileIread { .. }
            | What::FileIwrite { .. }
            | What::FileSeek { .. }
            | What::FileOpen { .. }
            | What::FileClose { .. }
    )
}

/// Per-variable I/O of a rank's recorded iterations.
pub fn io(t: &RankTrace) -> Vec<VarIo> {
    let mut vars: Vec<VarIo> = t
        .files
        .iter()
        .map(|n| VarIo {
            name: n.clone(),
            reads: Calls::default(),
            writes: Calls::default(),
            seeks: 0,
            seek_s: 0.0,
            prefetches: Vec::new(),
        })
        .collect();
    let var = |vars: &mut Vec<VarIo>, file: u32| -> Option<usize> {
        ((file as usize) < vars.len()).then_some(file as usize)
    };
    for it in &t.iterations {
        for (k, e) in it.events.iter().enumerate() {
            let secs = (e.t1_ns - e.t0_ns) as f64 * 1e-9;
            match e.what {
                What::FileRead { file, bytes, .. } => {
                    if let Some(v) = var(&mut vars, file) {
                        vars[v].reads.add(bytes, secs);
                    }
                }
                What::FileWrite { file, bytes, .. } | What::FileIwrite { file, bytes, .. } => {
                    if let Some(v) = var(&mut vars, file) {
                        vars[v].writes.add(bytes, secs);
                    }
                }
                What::FileSeek { file } => {
                    if let Some(v) = var(&mut vars, file) {
                        vars[v].seeks += 1;
                        vars[v].seek_s += secs;
                    }
                }
                What::FileIread {
                    file,
                    bytes,
                    req,
                    blocking,
                } => {
                    let Some(v) = var(&mut vars, file) else {
                        continue;
                    };
                    if !blocking {
                        continue;
                    }
                    vars[v].reads.add(bytes, secs);
                    let wait = it.events[k..].iter().find(|w| match &w.what {
                        What::Complete(c) => c.iter().any(|c| c.req == req),
                        _ => false,
                    });
                    if let Some(w) = wait {
                        vars[v].prefetches.push(Prefetch {
                            read_s: secs,
                            overlap_s: (w.t0_ns.saturating_sub(e.t1_ns)) as f64 * 1e-9,
                            bytes,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    for v in &mut vars {
        v.reads.fit();
        v.writes.fit();
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::ev;
    use mheta_trace::{Completion, Op};

    #[test]
    fn stage_compute_excludes_io_and_fits_overheads() {
        let events = vec![
            ev(0, 0, None, What::StageBegin),
            ev(
                100,
                1_100,
                Some(Op::File_read_at),
                What::FileRead {
                    file: 0,
                    bytes: 1000,
                    at: true,
                    collective: false,
                },
            ),
            ev(
                2_000,
                4_000,
                Some(Op::File_read_at),
                What::FileRead {
                    file: 0,
                    bytes: 3000,
                    at: true,
                    collective: false,
                },
            ),
            ev(
                5_000,
                6_000,
                Some(Op::File_iread_at),
                What::FileIread {
                    file: 0,
                    bytes: 1000,
                    req: 9,
                    blocking: true,
                },
            ),
            ev(
                9_000,
                9_010,
                Some(Op::Wait),
                What::Complete(vec![Completion { req: 9, recv: None }]),
            ),
            ev(10_000, 10_000, None, What::StageEnd),
        ];
        let t = RankTrace {
            rank: 0,
            world_size: 1,
            pid: 1,
            host: String::new(),
            files: vec!["/data/u".into()],
            iterations: vec![Iteration {
                index: 3,
                duration_ns: 10_000,
                events,
            }],
        };
        let s = stages(&t.iterations[0]);
        assert_eq!(s.len(), 1);
        assert!((s[0].total_s - 10e-6).abs() < 1e-15);
        assert!((s[0].io_s - 4e-6).abs() < 1e-15);
        assert!((s[0].compute_s - 6e-6).abs() < 1e-15);
        let v = io(&t);
        assert_eq!(v[0].name, "/data/u");
        assert_eq!((v[0].reads.calls, v[0].reads.bytes), (3, 5000));
        // time = 0.5 us + 0.5 ns/byte fits all three reads exactly.
        assert!((v[0].reads.per_byte_s.unwrap() - 0.5e-9).abs() < 1e-15);
        assert!((v[0].reads.overhead_s.unwrap() - 0.5e-6).abs() < 1e-12);
        assert_eq!(v[0].prefetches.len(), 1);
        assert!((v[0].prefetches[0].overlap_s - 3e-6).abs() < 1e-15);
        assert!((v[0].prefetches[0].read_s - 1e-6).abs() < 1e-15);
    }
}
