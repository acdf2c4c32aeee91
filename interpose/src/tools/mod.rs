//! Tools: small modules that observe MPI calls through hooks, like PnMPI's
//! modules or Caliper's services. Every wrapper calls [`pre`] before and
//! [`post`] after its `PMPI_*` call, but only while some tool is
//! [`active`]: the fast path is one relaxed atomic load.
//!
//! Tools are chosen with `MHETA_TOOLS` (comma-separated, default
//! `recorder`): [`recorder`] writes the trace of the instrumented
//! iterations; [`summary`] counts calls, bytes and time per MPI function.

use mheta_trace::{Op, What};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

pub mod recorder;
pub mod summary;

/// One completed MPI call as tools see it.
pub struct Call<'a> {
    pub op: Op,
    /// Clock at entry and exit, in ticks ([`crate::clock::now`]).
    pub t0: u64,
    pub t1: u64,
    pub what: &'a What,
}

/// A tool's hooks. All default to doing nothing.
pub trait Tool: Sync {
    /// Its name in `MHETA_TOOLS`.
    fn name(&self) -> &'static str;
    /// After `PMPI_Init*` succeeded.
    fn init(&self, _rank: u32, _size: u32) {}
    /// Before the `PMPI_*` call (only while the tool is active).
    fn pre(&self, _op: Op) {}
    /// After a successful `PMPI_*` call (only while the tool is active).
    fn post(&self, _call: &Call) {}
    /// `MPI_Pcontrol(level)`.
    fn pcontrol(&self, _level: i32) {}
    /// Before `PMPI_Finalize`: MPI still works.
    fn finalize(&self) {}
    /// Before `PMPI_Abort`, or on SIGTERM/SIGINT: write what can be
    /// written without communicating. `in_signal` is true in a signal
    /// handler, where a tool must not block.
    fn emergency(&self, _in_signal: bool) {}
}

/// Bit of each tool in `ACTIVE`.
pub const RECORDER: u32 = 1;
pub const SUMMARY: u32 = 2;

/// Which tools want calls right now.
static ACTIVE: AtomicU32 = AtomicU32::new(0);
static TOOLS: OnceLock<Vec<&'static dyn Tool>> = OnceLock::new();

/// Is any tool listening? The wrappers' fast-path test.
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// Is this tool's bit on?
#[inline(always)]
pub fn is_active(bit: u32) -> bool {
    ACTIVE.load(Ordering::Relaxed) & bit != 0
}

/// Switch a tool's bit on or off.
pub fn set_active(bit: u32, on: bool) {
    if on {
        ACTIVE.fetch_or(bit, Ordering::Relaxed);
    } else {
        ACTIVE.fetch_and(!bit, Ordering::Relaxed);
    }
}

/// The enabled tools (from `MHETA_TOOLS`, read once).
pub fn tools() -> &'static [&'static dyn Tool] {
    TOOLS.get_or_init(|| {
        let all: [&'static dyn Tool; 2] = [&recorder::RECORDER_TOOL, &summary::SUMMARY_TOOL];
        let spec = std::env::var("MHETA_TOOLS").unwrap_or_else(|_| "recorder".into());
        let mut out = Vec::new();
        for name in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match all.iter().find(|t| t.name() == name) {
                Some(t) => out.push(*t),
                None => crate::warn(format!(
                    "mheta: MHETA_TOOLS: unknown tool {name:?} (known: recorder, summary); ignored"
                )),
            }
        }
        out
    })
}

/// Run the pre hooks of the active tools.
#[inline]
pub fn pre(op: Op) {
    for t in tools() {
        t.pre(op);
    }
}

/// Run the post hooks of the active tools.
#[inline]
pub fn post(call: &Call) {
    for t in tools() {
        t.post(call);
    }
}
