//! [`RowBuf`]: the memory a rank's in-core GEN_BLOCK rows live in.
//!
//! A `RowBuf` is its own anonymous mapping, 2 MiB aligned, with room
//! reserved beyond its length. Growth within the room backs the new pages
//! in one `MADV_POPULATE_WRITE` (not a fault per page); growth beyond it
//! moves the mapping whole with `mremap` to a 2 MiB-aligned place, which
//! moves page-table entries, not data. Shrinking returns the pages past
//! the length with `MADV_DONTNEED` and keeps the addresses.
//!
//! **Huge pages** (`MHETA_HUGE_PAGES=1`, or [`set_huge_pages`]) advise the
//! mapping `MADV_HUGEPAGE`. On one node an MPI message of 8 MiB or more is
//! a single cross-process copy (Open MPI's CMA `process_vm_readv`), which
//! pins the *sender's* pages one at a time, so the copy runs much faster
//! from huge pages (`scripts/copy-rates.sh`, `cargo bench -p
//! mheta-runtime --bench redistribute`; docs/design/runtime.md has the
//! rates). A `Vec` could not keep them: its growth reallocates, and
//! glibc's `mremap` of a chunk to an address of another 2 MiB phase split
//! every huge page. They are off by default because first touching them
//! can cost more than it saves on a VM whose free-page reporting hands
//! freed memory back to the host. Where huge pages are cheap to fault
//! (bare metal), turn them on.
//! The advice is a hint: where the kernel refuses it (THP `never`) the
//! buffer is backed by small pages and works the same.
//!
//! All of the module's `unsafe` is here: the mapping's life, and the slice
//! over it.

use crate::Switch;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// Huge-page size the mapping is aligned to (x86-64 and aarch64 with 4 KiB
/// base pages).
const HUGE: usize = 2 << 20;
const PAGE: usize = 4096;

static HUGE_PAGES: Switch = Switch::new("MHETA_HUGE_PAGES", false);

/// Whether new row buffers are advised to be huge pages: as
/// [`set_huge_pages`] said, else when the environment says
/// `MHETA_HUGE_PAGES=1` (or `on`, `yes`, `true`). Off by default: see the
/// module doc for what they gain and, on some machines, cost.
pub fn huge_pages_wanted() -> bool {
    HUGE_PAGES.get()
}

/// Advise (or not) huge pages for row buffers mapped from now on,
/// whatever the environment says.
pub fn set_huge_pages(on: bool) {
    HUGE_PAGES.set(on);
}

/// A growable buffer of `T` in its own huge-page-advised mapping. Reads as
/// the slice of its `len` values.
pub struct RowBuf<T> {
    /// Start of the mapping (dangling when `map_bytes` is 0).
    ptr: NonNull<T>,
    len: usize,
    /// Bytes mapped (a multiple of [`HUGE`]).
    map_bytes: usize,
    /// Bytes from the start that may hold something other than zeros;
    /// past it the mapping reads as zeros.
    touched: usize,
    _own: PhantomData<T>,
}

// SAFETY: a RowBuf owns its mapping and its values like a Vec does.
unsafe impl<T: Send> Send for RowBuf<T> {}
// SAFETY: shared access only reads, as for a Vec.
unsafe impl<T: Sync> Sync for RowBuf<T> {}

impl<T: Copy + Default> RowBuf<T> {
    /// An empty buffer that maps nothing.
    pub const fn new() -> RowBuf<T> {
        RowBuf {
            ptr: NonNull::dangling(),
            len: 0,
            map_bytes: 0,
            touched: 0,
            _own: PhantomData,
        }
    }

    /// `len` values of `T::default()`, their pages backed now.
    pub fn zeroed(len: usize) -> RowBuf<T> {
        let mut b = RowBuf::new();
        b.resize(len);
        b
    }

    /// A copy of `v` in a new buffer.
    pub fn from_slice(v: &[T]) -> RowBuf<T> {
        let mut b = RowBuf::zeroed(v.len());
        b.copy_from_slice(v);
        b
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Values the mapping holds room for.
    pub fn capacity(&self) -> usize {
        match std::mem::size_of::<T>() {
            0 => usize::MAX,
            s => self.map_bytes / s,
        }
    }

    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` values are initialised and mapped.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Grow or shrink to `len` values; new ones are `T::default()`. A
    /// growth past the room moves the mapping (see the module doc) and
    /// backs the new pages in one call. A shrink keeps the memory (see
    /// [`RowBuf::release`]).
    pub fn resize(&mut self, len: usize) {
        let mut fresh = self.resize_unbacked(len);
        while fresh.step(usize::MAX) {}
    }

    /// [`RowBuf::resize`], leaving the new pages to be backed by the
    /// returned [`Prefault`] (or by the first write to each). A move posts
    /// its receives first and backs the pages while it waits, so that the
    /// sender is not held up by the page faults.
    pub(crate) fn resize_unbacked(&mut self, len: usize) -> Prefault {
        let size = std::mem::size_of::<T>();
        if len <= self.len {
            self.len = len;
            return Prefault::NONE;
        }
        let need = len.checked_mul(size).expect("RowBuf: size overflows");
        if need > self.map_bytes {
            // A quarter more than asked, so that a run of small growths
            // does not remap each time.
            self.reserve_bytes(need.saturating_add(need / 4));
        }
        // Bytes up to here may hold old values; past it, zeros.
        let dirty = self.touched.max(self.len * size);
        // Pages past `touched` are zeros and not yet backed: the whole
        // pages among them are the ones to back in one call each, so that
        // no later write (an instrumented iteration's, a receive's) pays a
        // fault per page.
        let (a, e) = (dirty.next_multiple_of(PAGE), need / PAGE * PAGE);
        let base = self.ptr.as_ptr();
        let fresh_from = if default_is_zero::<T>() {
            // Values past `touched` already read as T::default().
            dirty.div_ceil(size.max(1)).min(len)
        } else {
            len
        };
        for i in self.len..fresh_from {
            // SAFETY: i < len ≤ capacity: inside the mapping.
            unsafe { base.add(i).write(T::default()) };
        }
        self.len = len;
        self.touched = self.touched.max(need);
        Prefault {
            at: base as usize + a,
            end: base as usize + e.max(a),
        }
    }

    /// Give the pages wholly past the buffer's values back to the system
    /// (they read as zeros again); the addresses stay reserved.
    pub fn release(&mut self) {
        let from = (self.len * std::mem::size_of::<T>()).next_multiple_of(PAGE);
        if from < self.touched {
            // SAFETY: [from, touched) lies inside the mapping and holds no
            // value the buffer still reads.
            unsafe {
                libc::madvise(
                    self.ptr.as_ptr().cast::<u8>().add(from).cast(),
                    self.touched - from,
                    libc::MADV_DONTNEED,
                );
            }
            self.touched = from;
        }
    }

    /// Make the mapping at least `bytes` long, moving it if it must.
    fn reserve_bytes(&mut self, bytes: usize) {
        let bytes = bytes.next_multiple_of(HUGE);
        if bytes <= self.map_bytes {
            return;
        }
        if self.map_bytes == 0 {
            self.ptr = map_aligned(bytes).cast();
        } else {
            // SAFETY: the old mapping is ours; the kernel extends it in
            // place or moves its pages (page-table entries, huge pages
            // too) to a new address of its choice, 2 MiB aligned for a
            // mapping of whole huge pages on kernels since 6.7. Not
            // MREMAP_FIXED onto a mapping of our own: an mremap hook may
            // drop that fifth argument (UCX's memory events, under
            // MPICH's ch4:ucx, did, and the rows went astray).
            let moved = unsafe {
                libc::mremap(
                    self.ptr.as_ptr().cast(),
                    self.map_bytes,
                    bytes,
                    libc::MREMAP_MAYMOVE,
                )
            };
            if moved == libc::MAP_FAILED {
                panic!(
                    "RowBuf: mremap of {} to {bytes} bytes failed: {}",
                    self.map_bytes,
                    std::io::Error::last_os_error()
                );
            }
            // SAFETY: mremap succeeded: a mapping of `bytes` at `moved`.
            self.ptr = unsafe { NonNull::new_unchecked(moved.cast()) };
        }
        self.map_bytes = bytes;
        if huge_pages_wanted() {
            // SAFETY: advice over our own mapping; contents unchanged.
            unsafe {
                libc::madvise(self.ptr.as_ptr().cast(), bytes, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// Pages of a [`RowBuf`] still to back ([`RowBuf::resize_unbacked`]):
/// backing them is only faster than faulting them in one by one, never
/// needed, so a `Prefault` may be dropped half done.
#[derive(Debug)]
pub(crate) struct Prefault {
    at: usize,
    end: usize,
}

impl Prefault {
    /// Nothing to back.
    pub(crate) const NONE: Prefault = Prefault { at: 0, end: 0 };

    /// Back up to `bytes` more (whole pages, at least one); false once
    /// nothing is left. The buffer must not have moved or shrunk since
    /// the resize that made this (the move holds it borrowed meanwhile).
    pub(crate) fn step(&mut self, bytes: usize) -> bool {
        if self.at >= self.end {
            return false;
        }
        let n = (self.end - self.at).min(bytes.max(PAGE) / PAGE * PAGE);
        // SAFETY: populating backs pages without reading or writing their
        // values, so pages a receive has written keep their data; [at,
        // at + n) lies inside the buffer's mapping (see the doc above),
        // and on any other range the call would fail, not write.
        unsafe {
            libc::madvise(self.at as *mut libc::c_void, n, libc::MADV_POPULATE_WRITE);
        }
        self.at += n;
        self.at < self.end
    }

    /// Back every page still to back that lies below address `end`: the
    /// ones a copy is about to write (a fault per page otherwise).
    pub(crate) fn back_below(&mut self, end: usize) {
        let upto = end.min(self.end);
        if upto > self.at {
            self.step(upto - self.at);
        }
    }
}

/// A fresh anonymous mapping of `bytes` (a multiple of [`HUGE`]) at a
/// 2 MiB-aligned address.
fn map_aligned(bytes: usize) -> NonNull<u8> {
    mheta_base::os::map_aligned(bytes, HUGE)
        .unwrap_or_else(|e| panic!("RowBuf: cannot map {bytes} bytes: {e}"))
}

/// Is `T::default()` all zero bytes (as for numbers), so that fresh
/// anonymous memory already holds it?
fn default_is_zero<T: Copy + Default>() -> bool {
    let d = T::default();
    // SAFETY: reading the bytes of a `Copy` value we own.
    let bytes = unsafe {
        std::slice::from_raw_parts((&d as *const T).cast::<u8>(), std::mem::size_of::<T>())
    };
    bytes.iter().all(|&b| b == 0)
}

impl<T> Drop for RowBuf<T> {
    fn drop(&mut self) {
        if self.map_bytes > 0 {
            // SAFETY: the mapping is ours and nothing refers to it after
            // drop; T is Copy in every constructor, so nothing to drop.
            unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), self.map_bytes);
            }
        }
    }
}

impl<T: Copy + Default> Default for RowBuf<T> {
    fn default() -> Self {
        RowBuf::new()
    }
}

impl<T: Copy + Default> Clone for RowBuf<T> {
    fn clone(&self) -> Self {
        RowBuf::from_slice(self.as_slice())
    }
}

impl<T: Copy + Default + std::fmt::Debug> std::fmt::Debug for RowBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowBuf")
            .field("len", &self.len)
            .field("map_bytes", &self.map_bytes)
            .finish()
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for RowBuf<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Default> std::ops::Deref for RowBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy + Default> std::ops::DerefMut for RowBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_in_place_then_moves_keeping_every_value() {
        let mut b: RowBuf<f64> = RowBuf::zeroed(1000);
        assert!(b.iter().all(|&x| x == 0.0));
        for (i, x) in b.iter_mut().enumerate() {
            *x = i as f64;
        }
        let start = b.as_ptr();
        // Within the room: same place, new values are zero.
        let room = b.capacity();
        b.resize(room);
        assert_eq!(b.as_ptr(), start);
        assert!(b[1000..].iter().all(|&x| x == 0.0));
        // Past it: the mapping moves (2 MiB aligned) and keeps the values.
        b.resize(room + 5 * (HUGE / 8));
        assert_eq!(b.as_ptr() as usize % HUGE, 0);
        assert!((0..1000).all(|i| b[i] == i as f64));
        assert!(b[1000..].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn shrink_release_and_regrow_read_zeros_not_old_values() {
        let n = 3 * HUGE / 8;
        let mut b: RowBuf<f64> = RowBuf::zeroed(n);
        b.fill(7.0);
        b.resize(10);
        b.release();
        b.resize(n);
        assert!(b[..10].iter().all(|&x| x == 7.0));
        assert!(b[10..].iter().all(|&x| x == 0.0), "regrown values are zero");
        // Without a release, the shrunk values are overwritten too.
        b.fill(3.0);
        b.resize(5);
        b.resize(n);
        assert!(b[5..].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn non_zero_defaults_are_written() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        struct One(u32);
        impl Default for One {
            fn default() -> Self {
                One(1)
            }
        }
        let mut b: RowBuf<One> = RowBuf::zeroed(HUGE);
        assert!(b.iter().all(|&x| x == One(1)));
        b.resize(3 * HUGE);
        assert!(b.iter().all(|&x| x == One(1)));
        let c = b.clone();
        assert_eq!(b, c);
        let e: RowBuf<One> = RowBuf::default();
        assert!(e.is_empty());
    }
}
