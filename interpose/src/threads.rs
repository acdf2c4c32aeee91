//! Per-thread buffers, so that threads under `MPI_THREAD_MULTIPLE` record
//! without any lock. Each thread gets a [`Slot`] the first time it records.
//! A writer marks its slot busy, writes, and unmarks it; a collector (end
//! of an instrumented iteration, a report) raises a flag that makes new
//! writers wait, waits until no slot is busy, reads, and lowers the flag.
//! Nothing is dropped: a writer that meets the flag waits for the
//! collection to finish (a few microseconds).

use crate::tools::summary::Stats;
use mheta_trace::Event;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One thread's buffers.
pub struct Slot {
    /// 0 for the first thread to register (the one that initialised MPI).
    pub id: u16,
    busy: AtomicBool,
    events: UnsafeCell<Vec<Event>>,
    stats: UnsafeCell<Stats>,
}

// SAFETY: the buffers are written only by the owning thread while `busy`
// is set, and read only by a collector after it saw `busy` clear with
// COLLECTING raised (see `with` and `collect`).
unsafe impl Sync for Slot {}
// SAFETY: as above; the buffers hold plain owned data.
unsafe impl Send for Slot {}

static ALL: Mutex<Vec<Arc<Slot>>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU16 = AtomicU16::new(0);
static COLLECTING: AtomicBool = AtomicBool::new(false);
static COLLECTOR: Mutex<()> = Mutex::new(());

thread_local! {
    static MINE: Arc<Slot> = register();
}

fn register() -> Arc<Slot> {
    let slot = Arc::new(Slot {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        busy: AtomicBool::new(false),
        events: UnsafeCell::new(Vec::with_capacity(1024)),
        stats: UnsafeCell::new(Stats::default()),
    });
    lock(&ALL).push(slot.clone());
    slot
}

/// Lock, ignoring poisoning: a panic elsewhere must not stop the program.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Register the calling thread now (MPI_Init's thread becomes thread 0).
pub fn register_this_thread() {
    let _ = MINE.try_with(|_| ());
}

/// Run `f` on this thread's buffers and its thread id.
#[inline]
pub fn with<R>(f: impl FnOnce(&mut Vec<Event>, &mut Stats, u16) -> R) -> Option<R> {
    MINE.try_with(|s| {
        loop {
            s.busy.store(true, Ordering::SeqCst);
            if !COLLECTING.load(Ordering::SeqCst) {
                break;
            }
            s.busy.store(false, Ordering::SeqCst);
            while COLLECTING.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
        }
        // SAFETY: only this thread writes its slot, and no collector reads
        // it while `busy` is set (collectors raise COLLECTING first, then
        // wait for `busy` to clear).
        let r = f(
            unsafe { &mut *s.events.get() },
            unsafe { &mut *s.stats.get() },
            s.id,
        );
        s.busy.store(false, Ordering::Release);
        r
    })
    .ok()
}

/// Visit every slot's buffers with the writers held off.
pub fn collect(mut f: impl FnMut(&mut Vec<Event>, &mut Stats)) {
    let _one = lock(&COLLECTOR);
    COLLECTING.store(true, Ordering::SeqCst);
    for s in lock(&ALL).iter() {
        while s.busy.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        // SAFETY: COLLECTING is raised and `busy` is clear: the owner is
        // not writing and will wait until we lower the flag.
        f(unsafe { &mut *s.events.get() }, unsafe {
            &mut *s.stats.get()
        });
    }
    COLLECTING.store(false, Ordering::SeqCst);
}

/// [`collect`] for a signal handler: gives up (returns false) instead of
/// waiting when a collection is running or a slot is being written (the
/// interrupted code may be that writer).
pub fn try_collect(mut f: impl FnMut(&Stats)) -> bool {
    let Ok(_one) = COLLECTOR.try_lock() else {
        return false;
    };
    let Ok(all) = ALL.try_lock() else {
        return false;
    };
    COLLECTING.store(true, Ordering::SeqCst);
    let ok = all.iter().all(|s| !s.busy.load(Ordering::SeqCst));
    if ok {
        for s in all.iter() {
            // SAFETY: as in `collect`: no slot is busy and COLLECTING holds
            // new writers off.
            f(unsafe { &*s.stats.get() });
        }
    }
    COLLECTING.store(false, Ordering::SeqCst);
    ok
}
