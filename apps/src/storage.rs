//! Where a rank's distributed arrays live: in memory, or out of core in
//! per-rank files read and written with MPI-IO in ICLA-sized pieces
//! (MHETA section 3.1), with optional prefetching.
//!
//! # The out-of-core rule
//!
//! All of a rank's arrays compete for its memory budget `M` (`--mem-limit`
//! or the cluster spec's `mem_limit_mb`). Small per-rank data that every
//! kernel keeps in memory (vectors, ghost rows, row pointers) is `fixed`.
//! Then ([`plan`]):
//!
//! 1. If `fixed + Σ bytes(a) ≤ M`, every array stays in core: one pass.
//! 2. Otherwise a subset `S` of the arrays goes to disk. Each array of `S`
//!    is read once per sweep, and written back once if it is not
//!    read-only, in pieces. The rule prices a choice by the bytes it moves
//!    per sweep, each piece padded to 4 KiB for direct I/O, plus
//!    [`CALL_BYTES`] per call for the per-call overhead (O_r, O_w), plus
//!    the halo read of a stencil array's next piece:
//!    `Σ_{a∈S} (1 + written(a)) × Σ_k (pad(piece_k(a)) + CALL_BYTES)`,
//!    and takes the feasible `S` of least cost. This is where the paper's
//!    "simple heuristic" (spill what does not fit) goes wrong: spilling a
//!    written array costs twice what a read-only one of the same size does,
//!    and a spill that leaves room for only tiny pieces pays the per-call
//!    overhead thousands of times.
//! 3. The arrays of `S` are processed in lockstep, in pieces of whole rows;
//!    a piece's rows of all of them together take at most `B` bytes (each
//!    array's slot padded to 4 KiB for direct I/O). Memory left after the
//!    in-core arrays pays for `nbuf` piece buffers (`nbuf` = 2 with
//!    `--prefetch`: double buffering, else 1) and for the first row of
//!    every piece of a stencil array (its halo for the piece above). `B` is
//!    the largest that fits. The pieces are then the ICLAs: `M_i(m)` is
//!    array m's share of a piece, `N_L = ⌈M_β(m)/M_i(m)⌉` the number of
//!    pieces (passes).
//! 4. If even the smallest piece (one row of every array of `S`) does not
//!    fit, the limit is too small and the rank stops with an error that
//!    says how much one row needs.

use crate::mpiio::{ALIGN, AlignedBuf, File, IoError, Pending, round_up};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What one I/O call costs beyond its bytes, in bytes: about 0.15 ms of
/// per-call overhead at the default 100 MB/s throttle.
pub const CALL_BYTES: u64 = 16 << 10;

/// One distributed array as the memory rule sees it.
#[derive(Clone, Debug)]
pub struct Need {
    pub name: String,
    /// Bytes of each local row.
    pub row_bytes: Vec<usize>,
    pub read_only: bool,
    /// A stencil array: sweeps need the rows just above and below a piece.
    pub halo: bool,
}

impl Need {
    pub fn fixed(name: &str, rows: usize, bytes: usize, read_only: bool, halo: bool) -> Need {
        Need {
            name: name.into(),
            row_bytes: vec![bytes; rows],
            read_only,
            halo,
        }
    }

    fn total(&self) -> u64 {
        self.row_bytes.iter().map(|&b| b as u64).sum()
    }
}

/// The rule's decision for one rank.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MemPlan {
    /// Per array (in the order given): on disk?
    pub out_of_core: Vec<bool>,
    /// Local row ranges of the pieces; one piece `[0, rows)` when all is in core.
    pub pieces: Vec<Range<usize>>,
    /// Largest piece of all out-of-core arrays together, bytes (the ICLA).
    pub icla_bytes: u64,
    /// Piece buffers per out-of-core array (2 with prefetching).
    pub buffers: usize,
}

impl MemPlan {
    /// Everything in core, one piece.
    pub fn in_core(arrays: usize, rows: usize) -> MemPlan {
        MemPlan {
            out_of_core: vec![false; arrays],
            pieces: std::iter::once(0..rows).collect(),
            icla_bytes: 0,
            buffers: 0,
        }
    }

    pub fn passes(&self) -> usize {
        if self.out_of_core.iter().any(|&o| o) {
            self.pieces.len()
        } else {
            1
        }
    }
}

/// The memory limit cannot hold what the rule needs.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error(
    "memory limit {} MB is smaller than one row: the in-core data takes {fixed} bytes and one row of {rows} on disk needs {row} bytes more (at least {} MB in all)",
    *budget as f64 / 1e6, (*need as f64 / 1e6 * 1000.0).ceil() / 1000.0
)]
pub struct TooSmall {
    pub budget: u64,
    pub fixed: u64,
    pub rows: String,
    pub row: u64,
    pub need: u64,
}

/// Greedy pieces: consecutive rows whose padded bytes stay within `limit`.
fn pieces_within(row_bytes: &[usize], limit: usize) -> Option<Vec<Range<usize>>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut acc = 0usize;
    for (r, &b) in row_bytes.iter().enumerate() {
        if b > limit {
            return None;
        }
        if acc + b > limit {
            out.push(start..r);
            start = r;
            acc = 0;
        }
        acc += b;
    }
    if start < row_bytes.len() || out.is_empty() {
        out.push(start..row_bytes.len());
    }
    Some(out)
}

/// Apply the out-of-core rule (module docs) for one rank.
pub fn plan(
    budget: Option<u64>,
    fixed: u64,
    needs: &[Need],
    prefetch: bool,
) -> Result<MemPlan, TooSmall> {
    let rows = needs.first().map_or(0, |n| n.row_bytes.len());
    let all: u64 = needs.iter().map(Need::total).sum();
    let Some(m) = budget else {
        return Ok(MemPlan::in_core(needs.len(), rows));
    };
    if fixed + all <= m || rows == 0 {
        return Ok(MemPlan::in_core(needs.len(), rows));
    }
    let nbuf = if prefetch { 2 } else { 1 };
    let mut best: Option<(u64, usize, MemPlan)> = None;
    let mut smallest_row = u64::MAX;
    for mask in 1u32..(1 << needs.len()) {
        let s: Vec<usize> = (0..needs.len()).filter(|i| mask & (1 << i) != 0).collect();
        let in_core: u64 = (0..needs.len())
            .filter(|i| mask & (1 << i) == 0)
            .map(|i| needs[i].total())
            .sum();
        // Bytes of each row of all arrays of S, and of the halo arrays' rows.
        let row_sum: Vec<usize> = (0..rows)
            .map(|r| s.iter().map(|&i| needs[i].row_bytes[r]).sum())
            .collect();
        // A stencil array on disk keeps a few rows in memory: its first
        // and last rows, the carry, and the halo read of the next piece.
        let halo_rows: u64 = s
            .iter()
            .filter(|&&i| needs[i].halo)
            .map(|&i| {
                let b = needs[i].row_bytes.iter().copied().max().unwrap_or(0);
                (4 * b + round_up(b, ALIGN)) as u64
            })
            .sum();
        let pad = (s.len() * ALIGN) as u64;
        let max_row = row_sum.iter().copied().max().unwrap_or(0) as u64;
        let cost = |limit: u64, _npieces: u64| nbuf as u64 * (limit + pad) + halo_rows;
        smallest_row = smallest_row.min(in_core + cost(max_row, rows as u64));
        let Some(avail) = m.checked_sub(fixed + in_core) else {
            continue;
        };
        // Largest piece limit whose cost fits (bisection; cost grows with
        // the limit where it matters).
        let (mut lo, mut hi) = (
            max_row,
            row_sum.iter().map(|&b| b as u64).sum::<u64>().max(max_row),
        );
        let fits = |limit: u64| {
            pieces_within(&row_sum, limit as usize).filter(|p| cost(limit, p.len() as u64) <= avail)
        };
        let Some(mut pieces) = fits(lo) else {
            continue;
        };
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            match fits(mid) {
                Some(p) => {
                    lo = mid;
                    pieces = p;
                }
                None => hi = mid - 1,
            }
        }
        let icla = pieces
            .iter()
            .map(|p| row_sum[p.clone()].iter().map(|&b| b as u64).sum::<u64>())
            .max()
            .unwrap_or(0);
        let candidate = MemPlan {
            out_of_core: (0..needs.len()).map(|i| mask & (1 << i) != 0).collect(),
            pieces,
            icla_bytes: icla,
            buffers: nbuf,
        };
        // Estimated I/O per sweep, in bytes (module docs).
        let traffic: u64 = s
            .iter()
            .map(|&i| {
                let moved: u64 = candidate
                    .pieces
                    .iter()
                    .map(|p| {
                        let b: usize = needs[i].row_bytes[p.clone()].iter().sum();
                        round_up(b.max(1), ALIGN) as u64 + CALL_BYTES
                    })
                    .sum();
                let halo = if needs[i].halo {
                    candidate.pieces.len() as u64 * (ALIGN as u64 + CALL_BYTES)
                } else {
                    0
                };
                moved * if needs[i].read_only { 1 } else { 2 } + halo
            })
            .sum();
        let better = match &best {
            None => true,
            Some((t, n, _)) => traffic < *t || (traffic == *t && candidate.pieces.len() < *n),
        };
        if better {
            best = Some((traffic, candidate.pieces.len(), candidate));
        }
    }
    best.map(|(_, _, p)| p).ok_or_else(|| TooSmall {
        budget: m,
        fixed,
        rows: needs
            .iter()
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>()
            .join("+"),
        row: smallest_row.saturating_sub(0),
        need: fixed + smallest_row,
    })
}

/// How one rank stores its out-of-core arrays.
#[derive(Clone, Debug)]
pub struct Storage {
    /// Per-run scratch directory (created by the harness).
    pub dir: PathBuf,
    pub rank: usize,
    pub prefetch: bool,
    /// Scaled I/O (`--disk-emulation scaled`): every read and write moves
    /// this many times its bytes.
    pub io_scale: f64,
    /// Paced disk (`--disk-emulation paced`): seconds per byte of the MPI
    /// library's transfers (0: not paced).
    pub pace: f64,
}

impl Storage {
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.{:05}", self.rank))
    }
}

/// A per-rank file of pieces (slots), with one or two aligned buffers.
pub struct Disk {
    file: File,
    /// Offset and padded length of each piece's slot.
    slots: Vec<(u64, usize)>,
    /// Bytes actually moved per slot (padded length × I/O scale).
    moved: Vec<usize>,
    bufs: Vec<AlignedBuf>,
    cur: usize,
    /// Piece in `bufs[cur]`.
    loaded: Option<usize>,
    pending: Option<(usize, Pending)>,
    prefetch: bool,
}

impl Disk {
    /// A file for pieces of `bytes[k]` bytes each.
    pub fn create(st: &Storage, name: &str, bytes: &[usize]) -> Result<Disk, IoError> {
        let file = File::create(&st.file(name), st.pace)?;
        let scale = st.io_scale.max(1.0);
        let mut slots = Vec::with_capacity(bytes.len());
        let mut moved = Vec::with_capacity(bytes.len());
        let mut off = 0u64;
        for &b in bytes {
            let padded = round_up(b.max(1), ALIGN);
            let m = round_up((padded as f64 * scale).ceil() as usize, ALIGN);
            slots.push((off, padded));
            moved.push(m);
            off += m as u64;
        }
        let biggest = moved.iter().copied().max().unwrap_or(ALIGN);
        let nbuf = if st.prefetch { 2 } else { 1 };
        Ok(Disk {
            file,
            slots,
            moved,
            bufs: (0..nbuf).map(|_| AlignedBuf::new(biggest)).collect(),
            cur: 0,
            loaded: None,
            pending: None,
            prefetch: st.prefetch,
        })
    }

    pub fn direct(&self) -> bool {
        self.file.direct
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Make piece `k` current: wait for its prefetch or read it now; then,
    /// with prefetching, start reading piece `k + 1` into the other buffer.
    pub fn fetch(&mut self, k: usize, read: bool) -> Result<(), IoError> {
        let t = std::time::Instant::now();
        let r = self.fetch_inner(k, read);
        crate::READ_NS.fetch_add(
            t.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        r
    }

    fn fetch_inner(&mut self, k: usize, read: bool) -> Result<(), IoError> {
        if self.loaded != Some(k) {
            match self.pending.take() {
                Some((p, req)) if p == k => {
                    self.file.wait(req, self.moved[k])?;
                    self.cur = 1 - self.cur;
                }
                other => {
                    if let Some((p, req)) = other {
                        self.file.wait(req, self.moved[p])?;
                    }
                    if read {
                        let (off, _) = self.slots[k];
                        let n = self.moved[k];
                        self.file
                            .read_at(off, &mut self.bufs[self.cur].bytes_mut()[..n])?;
                    }
                }
            }
            self.loaded = Some(k);
        }
        if read && self.prefetch && k + 1 < self.slots.len() && self.pending.is_none() {
            let other = 1 - self.cur;
            let (off, _) = self.slots[k + 1];
            let n = self.moved[k + 1];
            let req = self
                .file
                .iread_at(off, &mut self.bufs[other].bytes_mut()[..n])?;
            self.pending = Some((k + 1, req));
        }
        Ok(())
    }

    /// Read the first `bytes` of piece `k`'s slot into `into` (a small
    /// aligned buffer): the halo row below the current piece.
    pub fn read_head(&mut self, k: usize, into: &mut AlignedBuf) -> Result<(), IoError> {
        let t = std::time::Instant::now();
        let (off, _) = self.slots[k];
        let n = into.len().min(self.moved[k]);
        let r = self.file.read_at(off, &mut into.bytes_mut()[..n]);
        crate::READ_NS.fetch_add(
            t.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        r
    }

    /// The current piece's buffer.
    pub fn buf(&mut self) -> &mut AlignedBuf {
        &mut self.bufs[self.cur]
    }

    /// Write the current buffer to piece `k`'s slot.
    pub fn store(&mut self, k: usize) -> Result<(), IoError> {
        let t = std::time::Instant::now();
        let (off, _) = self.slots[k];
        let n = self.moved[k];
        let r = self.file.write_at(off, &self.bufs[self.cur].bytes()[..n]);
        crate::WRITE_NS.fetch_add(
            t.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        r
    }

    /// Finish any outstanding prefetch (end of a sweep).
    pub fn settle(&mut self) -> Result<(), IoError> {
        if let Some((p, req)) = self.pending.take() {
            self.file.wait(req, self.moved[p])?;
            // The prefetched piece is in the other buffer; forget it.
            self.loaded = None;
        }
        Ok(())
    }
}

/// How a sweep uses an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
}

impl Access {
    fn reads(self) -> bool {
        self != Access::Write
    }
    fn writes(self) -> bool {
        self != Access::Read
    }
}

enum Mem {
    Core(Vec<f64>),
    Disk(Box<Disk>),
}

/// A row-distributed array of `width` f64 per row, in core or on disk,
/// with ghost rows above and below for stencils.
pub struct Rows {
    pub name: String,
    pub width: usize,
    pub rows: usize,
    /// Ghost row above the first local row (filled by halo exchanges).
    pub top: Vec<f64>,
    /// Ghost row below the last local row.
    pub bottom: Vec<f64>,
    mem: Mem,
    pieces: Vec<Range<usize>>,
    /// Stencil array: sweeps need the old rows just outside each piece.
    halo: bool,
    /// First and last local rows as last written (disk): what halo
    /// exchanges send.
    first_row: Vec<f64>,
    last_row: Vec<f64>,
    /// The old first row of the next piece (disk, stencil), read with a
    /// small aligned read into `head`.
    below: Vec<f64>,
    head: Option<AlignedBuf>,
    /// The old last row of the previous piece, and of the current one.
    carry: Vec<f64>,
    next_carry: Vec<f64>,
    /// The last row of the previous piece as this sweep left it.
    new_carry: Vec<f64>,
}

/// One array's rows of the current piece, with the old rows just outside it.
pub struct View<'a> {
    pub data: &'a mut [f64],
    /// Row `start - 1` as it was before this sweep (the ghost for the first piece).
    pub above: &'a [f64],
    /// Row `end` as it was before this sweep (the ghost for the last piece).
    pub below: &'a [f64],
    /// Row `start - 1` as this sweep left it (the top ghost for the first
    /// piece): what a lexicographic (Gauss–Seidel) sweep reads.
    pub above_new: &'a [f64],
}

impl Rows {
    /// A new array of `rows` local rows, filled row by row by `init(local_row, row)`,
    /// on disk when `on_disk` (pieces from the plan).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        width: usize,
        rows: usize,
        halo: bool,
        pieces: &[Range<usize>],
        on_disk: Option<&Storage>,
        mut init: impl FnMut(usize, &mut [f64]),
    ) -> Result<Rows, IoError> {
        let mut a = Rows {
            name: name.into(),
            width,
            rows,
            top: vec![0.0; width],
            bottom: vec![0.0; width],
            mem: Mem::Core(Vec::new()),
            pieces: pieces.to_vec(),
            halo,
            first_row: vec![0.0; width],
            last_row: vec![0.0; width],
            below: vec![0.0; width],
            head: None,
            carry: vec![0.0; width],
            next_carry: vec![0.0; width],
            new_carry: vec![0.0; width],
        };
        match on_disk {
            None => {
                let mut v = crate::zeroed(rows * width);
                for (r, row) in v.chunks_exact_mut(width.max(1)).enumerate() {
                    init(r, row);
                }
                a.mem = Mem::Core(v);
            }
            Some(st) => {
                let bytes: Vec<usize> = pieces.iter().map(|p| p.len() * width * 8).collect();
                let mut d = Disk::create(st, name, &bytes)?;
                for (k, p) in pieces.iter().enumerate() {
                    d.fetch(k, false)?;
                    let data = d.buf().f64s_mut(0, p.len() * width);
                    for (i, row) in data.chunks_exact_mut(width).enumerate() {
                        init(p.start + i, row);
                    }
                    if p.start == 0 {
                        a.first_row.copy_from_slice(&data[..width]);
                    }
                    if p.end == rows {
                        a.last_row.copy_from_slice(&data[data.len() - width..]);
                    }
                    d.store(k)?;
                }
                a.mem = Mem::Disk(Box::new(d));
                if halo {
                    a.head = Some(AlignedBuf::new(8 * width));
                }
            }
        }
        Ok(a)
    }

    pub fn on_disk(&self) -> bool {
        matches!(self.mem, Mem::Disk(_))
    }

    /// The direct-I/O state of the file (None: in core).
    pub fn direct(&self) -> Option<bool> {
        match &self.mem {
            Mem::Disk(d) => Some(d.direct()),
            Mem::Core(_) => None,
        }
    }

    /// The in-core rows (None when out of core).
    pub fn core(&self) -> Option<&Vec<f64>> {
        match &self.mem {
            Mem::Core(v) => Some(v),
            Mem::Disk(_) => None,
        }
    }

    pub fn core_mut(&mut self) -> Option<&mut Vec<f64>> {
        match &mut self.mem {
            Mem::Core(v) => Some(v),
            Mem::Disk(_) => None,
        }
    }

    /// Move this in-core array from GEN_BLOCK `old` to `new` (collective
    /// over `world`); ghost rows become zero until an exchange fills them.
    pub fn redistribute(
        &mut self,
        world: &mpi::topology::SimpleCommunicator,
        old: &mheta_runtime::Dist,
        new: &mheta_runtime::Dist,
        me: usize,
    ) -> Result<(), String> {
        let Some(v) = self.core() else {
            return Err(format!(
                "{} is out of core; --auto moves in-core arrays only",
                self.name
            ));
        };
        let moved = mheta_live::redistribute(world, old, new, self.width, v);
        self.set_core(new.0[me] as usize, moved);
        self.top.fill(0.0);
        self.bottom.fill(0.0);
        Ok(())
    }

    /// Replace the in-core rows (after a redistribution).
    pub fn set_core(&mut self, rows: usize, v: Vec<f64>) {
        assert_eq!(v.len(), rows * self.width);
        self.rows = rows;
        self.pieces = std::iter::once(0..rows).collect();
        self.mem = Mem::Core(v);
    }

    /// First local row (current values).
    pub fn first_row(&self) -> &[f64] {
        match &self.mem {
            Mem::Core(v) => &v[..self.width],
            Mem::Disk(_) => &self.first_row,
        }
    }

    /// Last local row (current values).
    pub fn last_row(&self) -> &[f64] {
        match &self.mem {
            Mem::Core(v) => &v[v.len() - self.width..],
            Mem::Disk(_) => &self.last_row,
        }
    }

    fn fetch(&mut self, k: usize, acc: Access) -> Result<(), IoError> {
        let w = self.width;
        let p = self.pieces[k].clone();
        if let Mem::Disk(d) = &mut self.mem {
            d.fetch(k, acc.reads())?;
            if self.halo
                && acc.reads()
                && k + 1 < self.pieces.len()
                && let Some(head) = self.head.as_mut()
            {
                d.read_head(k + 1, head)?;
                self.below.copy_from_slice(head.f64s_mut(0, w));
            }
        }
        if acc.reads() && !p.is_empty() {
            let data: &[f64] = match &mut self.mem {
                Mem::Core(v) => &v[p.start * w..p.end * w],
                Mem::Disk(d) => d.buf().f64s_mut(0, p.len() * w),
            };
            self.next_carry.copy_from_slice(&data[data.len() - w..]);
        }
        Ok(())
    }

    fn view(&mut self, k: usize) -> View<'_> {
        let w = self.width;
        let p = self.pieces[k].clone();
        let last = k + 1 == self.pieces.len();
        let above: &[f64] = if k == 0 { &self.top } else { &self.carry };
        let above_new: &[f64] = if k == 0 { &self.top } else { &self.new_carry };
        match &mut self.mem {
            Mem::Core(v) => {
                let (head, tail) = v.split_at_mut(p.end * w);
                let below: &[f64] = if last { &self.bottom } else { &tail[..w] };
                View {
                    data: &mut head[p.start * w..],
                    above,
                    below,
                    above_new,
                }
            }
            Mem::Disk(d) => {
                let below: &[f64] = if last { &self.bottom } else { &self.below };
                View {
                    data: d.buf().f64s_mut(0, p.len() * w),
                    above,
                    below,
                    above_new,
                }
            }
        }
    }

    fn finish(&mut self, k: usize, acc: Access) -> Result<(), IoError> {
        let w = self.width;
        std::mem::swap(&mut self.carry, &mut self.next_carry);
        if self.halo && self.pieces.len() > 1 && !self.pieces[k].is_empty() {
            let p = self.pieces[k].clone();
            let data: &[f64] = match &mut self.mem {
                Mem::Core(v) => &v[(p.end - 1) * w..p.end * w],
                Mem::Disk(d) => &d.buf().f64s_mut(0, p.len() * w)[(p.len() - 1) * w..],
            };
            self.new_carry.copy_from_slice(data);
        }
        if let Mem::Disk(d) = &mut self.mem
            && acc.writes()
        {
            let p = self.pieces[k].clone();
            let data = d.buf().f64s_mut(0, p.len() * w);
            if !data.is_empty() {
                if p.start == 0 {
                    self.first_row.copy_from_slice(&data[..w]);
                }
                if p.end == self.rows {
                    self.last_row.copy_from_slice(&data[data.len() - w..]);
                }
            }
            d.store(k)?;
        }
        Ok(())
    }

    fn settle(&mut self) -> Result<(), IoError> {
        if let Mem::Disk(d) = &mut self.mem {
            d.settle()?;
        }
        Ok(())
    }
}

/// Visit the pieces of `arrays` in lockstep (they share the rank's piece
/// partition): fetch each piece (reading what `Access` says, prefetching
/// the next), call `f(rows, views)` with one [`View`] per array, then
/// write back what the sweep changes. In core this is one call on the
/// whole local block, without copies.
pub fn sweep(
    arrays: &mut [(&mut Rows, Access)],
    mut f: impl FnMut(Range<usize>, &mut [View<'_>]),
) -> Result<(), IoError> {
    let Some(first) = arrays.first() else {
        return Ok(());
    };
    let pieces = first.0.pieces.clone();
    if first.0.rows == 0 {
        return Ok(());
    }
    for (k, p) in pieces.iter().enumerate() {
        for (a, acc) in arrays.iter_mut() {
            a.fetch(k, *acc)?;
        }
        {
            let mut views: Vec<View<'_>> = arrays.iter_mut().map(|(a, _)| a.view(k)).collect();
            f(p.clone(), &mut views);
        }
        for (a, acc) in arrays.iter_mut() {
            a.finish(k, *acc)?;
        }
    }
    for (a, _) in arrays.iter_mut() {
        a.settle()?;
    }
    Ok(())
}

/// A row-distributed sparse matrix (CSR, uneven rows), read-only, in core
/// or on disk. On disk each piece's slot holds its values (f64) then its
/// column indices (u32); the row pointers stay in core.
pub struct Csr {
    pub rows: usize,
    /// Row pointers of the local rows (len rows + 1).
    pub rowptr: Vec<usize>,
    mem: CsrMem,
    pieces: Vec<Range<usize>>,
}

enum CsrMem {
    Core { vals: Vec<f64>, cols: Vec<u32> },
    Disk(Box<Disk>),
}

/// Bytes of one nonzero on disk and in memory (value + column index).
pub const NZ_BYTES: usize = 12;

impl Csr {
    pub fn new(
        name: &str,
        rowptr: Vec<usize>,
        vals: Vec<f64>,
        cols: Vec<u32>,
        pieces: &[Range<usize>],
        on_disk: Option<&Storage>,
    ) -> Result<Csr, IoError> {
        let rows = rowptr.len() - 1;
        let mem = match on_disk {
            None => CsrMem::Core { vals, cols },
            Some(st) => {
                let bytes: Vec<usize> = pieces
                    .iter()
                    .map(|p| {
                        let nz = rowptr[p.end] - rowptr[p.start];
                        round_up(8 * nz, ALIGN) + 4 * nz
                    })
                    .collect();
                let mut d = Disk::create(st, name, &bytes)?;
                for (k, p) in pieces.iter().enumerate() {
                    let (a, b) = (rowptr[p.start], rowptr[p.end]);
                    d.fetch(k, false)?;
                    let at = round_up(8 * (b - a), ALIGN);
                    let (v, c) = d.buf().f64s_and_u32s(b - a, at);
                    v.copy_from_slice(&vals[a..b]);
                    c.copy_from_slice(&cols[a..b]);
                    d.store(k)?;
                }
                CsrMem::Disk(Box::new(d))
            }
        };
        Ok(Csr {
            rows,
            rowptr,
            mem,
            pieces: pieces.to_vec(),
        })
    }

    pub fn on_disk(&self) -> bool {
        matches!(self.mem, CsrMem::Disk(_))
    }

    pub fn direct(&self) -> Option<bool> {
        match &self.mem {
            CsrMem::Disk(d) => Some(d.direct()),
            CsrMem::Core { .. } => None,
        }
    }

    /// The in-core arrays (values, columns).
    pub fn core_mut(&mut self) -> Option<(&mut Vec<f64>, &mut Vec<u32>)> {
        match &mut self.mem {
            CsrMem::Core { vals, cols } => Some((vals, cols)),
            CsrMem::Disk(_) => None,
        }
    }

    /// Replace the in-core matrix (after a redistribution).
    pub fn set_core(&mut self, rowptr: Vec<usize>, vals: Vec<f64>, cols: Vec<u32>) {
        self.rows = rowptr.len() - 1;
        self.pieces = std::iter::once(0..self.rows).collect();
        self.rowptr = rowptr;
        self.mem = CsrMem::Core { vals, cols };
    }

    /// Visit the pieces: `f(rows, rowptr of those rows (absolute), values,
    /// columns)`, where values and columns start at the piece's first
    /// nonzero (subtract `rowptr[0]`).
    pub fn sweep(
        &mut self,
        mut f: impl FnMut(Range<usize>, &[usize], &[f64], &[u32]),
    ) -> Result<(), IoError> {
        if self.rows == 0 {
            return Ok(());
        }
        for (k, p) in self.pieces.iter().enumerate() {
            let rp = &self.rowptr[p.start..=p.end];
            let (a, b) = (rp[0], rp[rp.len() - 1]);
            match &mut self.mem {
                CsrMem::Core { vals, cols } => f(p.clone(), rp, &vals[a..b], &cols[a..b]),
                CsrMem::Disk(d) => {
                    d.fetch(k, true)?;
                    let at = round_up(8 * (b - a), ALIGN);
                    let (v, c) = d.buf().f64s_and_u32s(b - a, at);
                    f(p.clone(), rp, v, c);
                }
            }
        }
        if let CsrMem::Disk(d) = &mut self.mem {
            d.settle()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_in_core_when_it_fits_or_no_limit() {
        let n = [Need::fixed("u", 100, 800, false, true)];
        assert_eq!(plan(None, 0, &n, false).unwrap().passes(), 1);
        assert_eq!(plan(Some(80_000), 0, &n, false).unwrap().passes(), 1);
    }

    #[test]
    fn passes_follow_the_limit() {
        // 100 rows of 4096 bytes, one buffer: 10 rows + pad per piece.
        let n = [Need::fixed("a", 100, 4096, true, false)];
        let p = plan(Some(10 * 4096 + 4096), 0, &n, false).unwrap();
        assert_eq!(p.out_of_core, vec![true]);
        assert_eq!(p.passes(), 10);
        assert!(p.pieces.iter().all(|r| r.len() == 10));
        // Prefetching doubles the buffers: 2 * (B + 4096) <= 45056 leaves
        // B = 18432, 4 rows a piece.
        let q = plan(Some(10 * 4096 + 4096), 0, &n, true).unwrap();
        assert_eq!(q.passes(), 25);
        assert_eq!(q.buffers, 2);
    }

    #[test]
    fn spills_the_read_only_array_when_traffic_is_lower() {
        // u (written) and f (read-only), same size; room for one of them:
        // spilling f costs half the I/O of spilling u.
        let n = [
            Need::fixed("u", 100, 1000, false, true),
            Need::fixed("f", 100, 1000, true, false),
        ];
        let p = plan(Some(100_000 + 30_000), 0, &n, false).unwrap();
        assert_eq!(p.out_of_core, vec![false, true]);
    }

    #[test]
    fn too_small_names_the_row() {
        let n = [Need::fixed("u", 10, 100_000, false, true)];
        let e = plan(Some(50_000), 1000, &n, false).unwrap_err();
        assert!(e.to_string().contains("smaller than one row"), "{e}");
    }

    #[test]
    fn uneven_rows_are_cut_by_bytes() {
        let n = [Need {
            name: "a".into(),
            row_bytes: vec![100, 5000, 100, 100, 5000, 100],
            read_only: true,
            halo: false,
        }];
        let p = plan(Some(5200 + 4096), 0, &n, false).unwrap();
        for r in &p.pieces {
            let b: usize = n[0].row_bytes[r.clone()].iter().sum();
            assert!(b <= 5200, "{r:?}");
        }
        assert_eq!(p.pieces.iter().map(|r| r.len()).sum::<usize>(), 6);
    }
}
