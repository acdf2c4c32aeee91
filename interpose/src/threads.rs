//! Per-thread buffers, so that threads under `MPI_THREAD_MULTIPLE` never
//! share a lock while recording. Each thread gets a [`Slot`] the first time
//! it records; its mutexes are only ever contended when a tool collects
//! (at the end of an instrumented iteration or at finalize), never between
//! two recording threads.

use crate::tools::summary::Stats;
use mheta_trace::Event;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One thread's buffers.
pub struct Slot {
    /// 0 for the first thread to register (the one that initialised MPI).
    pub id: u16,
    pub events: Mutex<Vec<Event>>,
    pub stats: Mutex<Stats>,
}

static ALL: Mutex<Vec<Arc<Slot>>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU16 = AtomicU16::new(0);

thread_local! {
    static MINE: Arc<Slot> = register();
}

fn register() -> Arc<Slot> {
    let slot = Arc::new(Slot {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        events: Mutex::new(Vec::with_capacity(256)),
        stats: Mutex::new(Stats::default()),
    });
    lock(&ALL).push(slot.clone());
    slot
}

/// Lock, ignoring poisoning: a panic elsewhere must not stop the program.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Run `f` with this thread's slot (registering it on first use).
#[inline]
pub fn with<R>(f: impl FnOnce(&Slot) -> R) -> Option<R> {
    MINE.try_with(|s| f(s)).ok()
}

/// Every registered slot.
pub fn all() -> Vec<Arc<Slot>> {
    lock(&ALL).clone()
}

/// Every registered slot, without blocking (for signal handlers); `None`
/// when the registry is busy.
pub fn try_all() -> Option<Vec<Arc<Slot>>> {
    ALL.try_lock().ok().map(|v| v.clone())
}
