//! The summary profiler: calls, bytes and time per MPI function per rank,
//! like an mpiP report. Counted in per-thread [`Stats`]; at
//! `MPI_Finalize` rank 0 gathers every rank's and writes
//! `mheta-summary.txt` and `mheta-summary.json`; `MPI_Pcontrol(3)` or `(4)`
//! (mpiP's report levels) and `MPI_Abort`, SIGTERM and SIGINT write this
//! rank's `summary.rank-NNNNN.json` (no communication: other ranks may be
//! gone). Files go to `MHETA_SUMMARY_DIR`, else the trace directory.
//! `MPI_Pcontrol(0)` pauses counting, `(1)` resumes, `(2)` zeroes.

use super::{Call, SUMMARY, Tool, is_active, set_active};
use crate::threads::{self, lock};
use mheta_trace::{OP_COUNT, Op};
use std::ffi::CString;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Counters of one MPI function (`time_ns` holds clock ticks while
/// counting; reports convert).
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct OpStat {
    pub calls: u64,
    pub bytes: u64,
    pub time_ns: u64,
}

/// Counters of every MPI function, one set per thread.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats(pub [OpStat; OP_COUNT]);

impl Default for Stats {
    fn default() -> Self {
        Stats([OpStat::default(); OP_COUNT])
    }
}

impl Stats {
    fn add(&mut self, other: &Stats) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            a.calls += b.calls;
            a.bytes += b.bytes;
            a.time_ns += b.time_ns;
        }
    }
}

pub struct Summary;
pub static SUMMARY_TOOL: Summary = Summary;

static RANK: AtomicU32 = AtomicU32::new(0);
static SIZE: AtomicU32 = AtomicU32::new(1);
static START_NS: AtomicU64 = AtomicU64::new(0);
static REPORTS: AtomicU32 = AtomicU32::new(0);
/// Where this rank's emergency report goes, prepared at init so that a
/// signal handler need not allocate.
static EMERGENCY_PATH: Mutex<Option<(CString, CString)>> = Mutex::new(None);

fn dir() -> PathBuf {
    match std::env::var_os("MHETA_SUMMARY_DIR") {
        Some(d) => mheta_trace::env::job_dir(&PathBuf::from(d)),
        None => mheta_trace::env::trace_dir(),
    }
}

/// This rank's counters, summed over its threads, times in ns.
fn collect() -> Stats {
    let mut total = Stats::default();
    threads::collect(|_, s| total.add(s));
    let scale = crate::clock::ns_per_tick();
    for s in total.0.iter_mut() {
        s.time_ns = (s.time_ns as f64 * scale) as u64;
    }
    total
}

fn rank_json(rank: u32, wall_ns: u64, s: &Stats, why: &str) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "{{\"format\":\"mheta-summary-rank\",\"version\":1,\"rank\":{rank},\"why\":\"{why}\",\"wall_s\":{:.9},\"ops\":{{",
        wall_ns as f64 * 1e-9
    );
    let mut first = true;
    for (i, st) in s.0.iter().enumerate().filter(|(_, st)| st.calls > 0) {
        let _ = write!(
            o,
            "{}\"{}\":{{\"calls\":{},\"bytes\":{},\"time_s\":{:.9}}}",
            if first { "" } else { "," },
            Op::ALL[i].name(),
            st.calls,
            st.bytes,
            st.time_ns as f64 * 1e-9
        );
        first = false;
    }
    o.push_str("}}\n");
    o
}

/// Write `text` to `path` whole or not at all: a temporary file beside
/// it, renamed over it (a rank killed mid-write, as mpirun's SIGKILL after
/// its SIGTERM can, leaves no empty or half report). Each write has a
/// temporary of its own: two at once (a signal handled on two threads)
/// must not truncate the file the other is renaming. Not
/// `mheta_base::write_atomic`, whose fsync would lengthen a write that
/// must finish between mpirun's SIGTERM and its SIGKILL.
fn write_file(path: &std::path::Path, text: &str) {
    static WRITES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = std::path::PathBuf::from(tmp);
    let r = std::fs::create_dir_all(path.parent().unwrap_or(std::path::Path::new(".")))
        .and_then(|_| std::fs::write(&tmp, text))
        .and_then(|_| std::fs::rename(&tmp, path));
    if let Err(e) = r {
        crate::warn(format!(
            "mheta[{}]: cannot write {}: {e}",
            RANK.load(Ordering::Relaxed),
            path.display()
        ));
    }
}

/// This rank's report alone, text and JSON, without communicating.
fn write_rank_report(why: &str) {
    let rank = RANK.load(Ordering::Relaxed);
    let wall = crate::clock::mono_ns().saturating_sub(START_NS.load(Ordering::Relaxed));
    let stats = collect();
    let d = dir();
    write_file(
        &d.join(format!("summary.rank-{rank:05}.json")),
        &rank_json(rank, wall, &stats, why),
    );
    let (text, _) = reports(&[(wall, stats)]);
    let text = text.replacen(
        "@ mheta summary: 1 ranks",
        &format!("@ mheta summary: rank {rank} ({why})"),
        1,
    );
    write_file(&d.join(format!("summary.rank-{rank:05}.txt")), &text);
}

/// The aggregate report of all ranks: text (mpiP-like) and JSON.
fn reports(per_rank: &[(u64, Stats)]) -> (String, String) {
    let p = per_rank.len();
    let mut total = Stats::default();
    for (_, s) in per_rank {
        total.add(s);
    }
    let app: f64 = per_rank.iter().map(|(w, _)| *w as f64 * 1e-9).sum();
    let mpi: f64 = total.0.iter().map(|s| s.time_ns as f64 * 1e-9).sum();
    let mut order: Vec<usize> = (0..OP_COUNT).filter(|&i| total.0[i].calls > 0).collect();
    order.sort_by(|&a, &b| total.0[b].time_ns.cmp(&total.0[a].time_ns));

    let mut t = String::new();
    let _ = writeln!(t, "@ mheta summary: {p} ranks");
    let _ = writeln!(
        t,
        "@ MPI time {mpi:.6} s of {app:.6} s summed over ranks ({:.2}%)",
        100.0 * mpi / app.max(1e-12)
    );
    let _ = writeln!(t);
    let _ = writeln!(t, "@--- Aggregate time, descending ---");
    let _ = writeln!(
        t,
        "{:<28} {:>12} {:>14} {:>14} {:>8}",
        "Call", "Calls", "Bytes", "Time (s)", "MPI%"
    );
    for &i in &order {
        let s = total.0[i];
        let _ = writeln!(
            t,
            "{:<28} {:>12} {:>14} {:>14.6} {:>8.2}",
            Op::ALL[i].name(),
            s.calls,
            s.bytes,
            s.time_ns as f64 * 1e-9,
            100.0 * s.time_ns as f64 * 1e-9 / mpi.max(1e-12)
        );
    }
    let _ = writeln!(t);
    let _ = writeln!(t, "@--- Per rank ---");
    let _ = writeln!(
        t,
        "{:<28} {:>6} {:>12} {:>14} {:>14}",
        "Call", "Rank", "Calls", "Bytes", "Time (s)"
    );
    for &i in &order {
        for (r, (_, s)) in per_rank.iter().enumerate() {
            let st = s.0[i];
            if st.calls > 0 {
                let _ = writeln!(
                    t,
                    "{:<28} {:>6} {:>12} {:>14} {:>14.6}",
                    Op::ALL[i].name(),
                    r,
                    st.calls,
                    st.bytes,
                    st.time_ns as f64 * 1e-9
                );
            }
        }
    }

    let mut j = String::new();
    let _ = write!(
        j,
        "{{\"format\":\"mheta-summary\",\"version\":1,\"ranks\":["
    );
    for (r, (w, s)) in per_rank.iter().enumerate() {
        let one = rank_json(r as u32, *w, s, "finalize");
        let _ = write!(j, "{}{}", if r == 0 { "" } else { "," }, one.trim_end());
    }
    j.push_str("]}\n");
    (t, j)
}

impl Tool for Summary {
    fn name(&self) -> &'static str {
        "summary"
    }

    fn init(&self, rank: u32, size: u32) {
        RANK.store(rank, Ordering::Relaxed);
        SIZE.store(size, Ordering::Relaxed);
        START_NS.store(crate::clock::mono_ns(), Ordering::Relaxed);
        let path = dir().join(format!("summary.rank-{rank:05}.json"));
        let _ = std::fs::create_dir_all(dir());
        // The report and the temporary it is written to first (renamed
        // over it, so a second signal, or SIGKILL during the write, never
        // leaves an empty report).
        let name = path.to_string_lossy().into_owned();
        *lock(&EMERGENCY_PATH) = CString::new(name.clone())
            .ok()
            .zip(CString::new(format!("{name}.{}.sig.tmp", std::process::id())).ok());
        set_active(SUMMARY, true);
    }

    #[inline]
    fn post(&self, call: &Call) {
        if is_active(SUMMARY) {
            let dt = call.t1.saturating_sub(call.t0);
            let bytes = call.what.bytes();
            threads::with(|_, stats, _| {
                let s = &mut stats.0[call.op as usize];
                s.calls += 1;
                s.bytes += bytes;
                s.time_ns += dt;
            });
        }
    }

    fn pcontrol(&self, level: i32) {
        match level {
            mheta_trace::pcontrol::OFF => set_active(SUMMARY, false),
            mheta_trace::pcontrol::ON => set_active(SUMMARY, true),
            mheta_trace::pcontrol::RESET => threads::collect(|_, s| *s = Stats::default()),
            3 | 4 => {
                REPORTS.fetch_add(1, Ordering::Relaxed);
                write_rank_report("pcontrol");
            }
            _ => {}
        }
    }

    fn finalize(&self) {
        set_active(SUMMARY, false);
        let rank = RANK.load(Ordering::Relaxed);
        let p = SIZE.load(Ordering::Relaxed) as usize;
        let wall = crate::clock::mono_ns().saturating_sub(START_NS.load(Ordering::Relaxed));
        let mine = collect();
        // [wall, (calls, bytes, time) per op] as u64s, gathered at rank 0.
        let mut send: Vec<u64> = Vec::with_capacity(1 + 3 * OP_COUNT);
        send.push(wall);
        for s in &mine.0 {
            send.extend_from_slice(&[s.calls, s.bytes, s.time_ns]);
        }
        let n = send.len();
        let mut recv = vec![0u64; if rank == 0 { n * p } else { 0 }];
        // SAFETY: buffers sized n and n*p u64s; MPI is still initialised.
        let rc = unsafe {
            mpi_sys::PMPI_Gather(
                send.as_ptr().cast(),
                n as i32,
                mpi_sys::RSMPI_UINT64_T,
                recv.as_mut_ptr().cast(),
                n as i32,
                mpi_sys::RSMPI_UINT64_T,
                0,
                mpi_sys::RSMPI_COMM_WORLD,
            )
        };
        if rc != 0 {
            write_rank_report("finalize");
            return;
        }
        if rank != 0 {
            return;
        }
        let per_rank: Vec<(u64, Stats)> = recv
            .chunks(n)
            .map(|c| {
                let mut s = Stats::default();
                for (i, st) in s.0.iter_mut().enumerate() {
                    *st = OpStat {
                        calls: c[1 + 3 * i],
                        bytes: c[2 + 3 * i],
                        time_ns: c[3 + 3 * i],
                    };
                }
                (c[0], s)
            })
            .collect();
        let (text, json) = reports(&per_rank);
        let d = dir();
        write_file(&d.join("mheta-summary.txt"), &text);
        write_file(&d.join("mheta-summary.json"), &json);
    }

    fn emergency(&self, in_signal: bool) {
        if !in_signal {
            write_rank_report("abort");
            return;
        }
        signal_report();
    }
}

/// A fixed buffer that `core::fmt` can write into without allocating.
struct Buf {
    data: [u8; 16384],
    len: usize,
}

impl std::fmt::Write for Buf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let b = s.as_bytes();
        if self.len + b.len() > self.data.len() {
            return Err(std::fmt::Error);
        }
        self.data[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
        Ok(())
    }
}

/// The report written from a signal handler: no allocation, no blocking
/// lock (when a lock is held by the interrupted code, nothing is written:
/// that is the case where it is not safe).
fn signal_report() {
    let Ok(path) = EMERGENCY_PATH.try_lock() else {
        return;
    };
    let Some((path, tmp)) = path.as_ref() else {
        return;
    };
    let mut total = [OpStat::default(); OP_COUNT];
    let complete = threads::try_collect(|s| {
        for (a, b) in total.iter_mut().zip(&s.0) {
            a.calls += b.calls;
            a.bytes += b.bytes;
            a.time_ns += b.time_ns;
        }
    });
    if !complete {
        return;
    }
    let scale = crate::clock::ns_per_tick();
    let mut buf = Buf {
        data: [0; 16384],
        len: 0,
    };
    let rank = RANK.load(Ordering::Relaxed);
    let wall = crate::clock::mono_ns().saturating_sub(START_NS.load(Ordering::Relaxed));
    let _ = write!(
        buf,
        "{{\"format\":\"mheta-summary-rank\",\"version\":1,\"rank\":{rank},\"why\":\"signal\",\"wall_ns\":{wall},\"ops\":{{"
    );
    let mut first = true;
    for (i, st) in total.iter().enumerate().filter(|(_, s)| s.calls > 0) {
        let _ = write!(
            buf,
            "{}\"{}\":{{\"calls\":{},\"bytes\":{},\"time_ns\":{}}}",
            if first { "" } else { "," },
            Op::ALL[i].name(),
            st.calls,
            st.bytes,
            (st.time_ns as f64 * scale) as u64
        );
        first = false;
    }
    let _ = buf.write_str("}}\n");
    // SAFETY: both paths are NUL-terminated; open/write/close/rename are
    // async-signal-safe.
    unsafe {
        let fd = libc::open(
            tmp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            0o644,
        );
        if fd >= 0 {
            let whole = libc::write(fd, buf.data.as_ptr().cast(), buf.len) == buf.len as isize;
            libc::close(fd);
            if whole {
                libc::rename(tmp.as_ptr(), path.as_ptr());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_orders_by_time_and_sums_ranks() {
        let mut a = Stats::default();
        a.0[Op::Send as usize] = OpStat {
            calls: 2,
            bytes: 16,
            time_ns: 1000,
        };
        a.0[Op::Allreduce as usize] = OpStat {
            calls: 1,
            bytes: 8,
            time_ns: 5000,
        };
        let mut b = Stats::default();
        b.0[Op::Send as usize] = OpStat {
            calls: 3,
            bytes: 24,
            time_ns: 2000,
        };
        let (text, json) = reports(&[(1_000_000, a), (1_000_000, b)]);
        let allreduce = text.find("MPI_Allreduce").unwrap();
        let send = text.find("MPI_Send").unwrap();
        assert!(allreduce < send, "{text}");
        assert!(
            text.contains("MPI_Send                                5             40"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["ranks"].as_array().unwrap().len(), 2);
        assert_eq!(v["ranks"][1]["ops"]["MPI_Send"]["calls"], 3);
        assert_eq!(v["ranks"][0]["ops"]["MPI_Allreduce"]["bytes"], 8);
    }
}
