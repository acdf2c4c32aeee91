//! Where a rank's distributed arrays live: in memory, or out of core in
//! per-rank files read and written with MPI-IO in ICLA-sized pieces
//! (MHETA section 3.1), with optional prefetching.
//!
//! Which arrays go out of core, and in which pieces, is decided by the
//! out-of-core rule in [`mheta_model::ooc`], shared with the model.

use crate::mpiio::{ALIGN, AlignedBuf, File, IoError, Pending, as_bytes, as_bytes_mut, round_up};
pub use mheta_model::ooc::{CALL_BYTES, MemPlan, Need, RowBytes, TooSmall, plan};
use mheta_runtime::RowBlock;
use std::ops::Range;
use std::path::{Path, PathBuf};

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
    Core(RowBlock<f64>),
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
            mem: Mem::Core(RowBlock::default()),
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
                let mut v = RowBlock::zeroed(rows * width);
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
    pub fn core(&self) -> Option<&[f64]> {
        match &self.mem {
            Mem::Core(v) => Some(v),
            Mem::Disk(_) => None,
        }
    }

    pub fn core_mut(&mut self) -> Option<&mut [f64]> {
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
        old: &mheta_model::Dist,
        new: &mheta_model::Dist,
        me: usize,
    ) -> Result<(), String> {
        let width = self.width;
        let Mem::Core(block) = &mut self.mem else {
            return Err(format!(
                "{} is out of core; --auto moves in-core arrays only",
                self.name
            ));
        };
        // Kept rows stay where they are (no shift of the whole block).
        block.redistribute(world, old, new, width);
        crate::checkpoint::kill_point("redistribute", me);
        self.rows = new.0[me] as usize;
        self.pieces = std::iter::once(0..self.rows).collect();
        self.top.fill(0.0);
        self.bottom.fill(0.0);
        Ok(())
    }

    /// Replace the in-core rows (after a redistribution).
    pub fn set_core(&mut self, rows: usize, v: RowBlock<f64>) {
        assert_eq!(v.len(), rows * self.width);
        self.rows = rows;
        self.pieces = std::iter::once(0..rows).collect();
        self.mem = Mem::Core(v);
    }

    /// Write the local rows to `file` at global row `first` (rows of
    /// `width` f64, row-major): every piece once, read from disk when out
    /// of core. Ghost rows are not part of it.
    pub fn save_to(&mut self, file: &crate::mpiio::Shared, first: usize) -> Result<(), IoError> {
        let w = self.width;
        let mut res = Ok(());
        sweep(&mut [(self, Access::Read)], |rows, v| {
            if res.is_ok() {
                res = file.write_at(
                    (first + rows.start) as u64 * 8 * w as u64,
                    as_bytes(v[0].data),
                );
            }
        })?;
        res
    }

    /// Read the local rows from `file` at global row `first` (the layout
    /// [`Rows::save_to`] writes), writing pieces back to disk when out of
    /// core.
    pub fn load_from(&mut self, file: &crate::mpiio::Shared, first: usize) -> Result<(), IoError> {
        let w = self.width;
        let mut res = Ok(());
        sweep(&mut [(self, Access::Write)], |rows, v| {
            if res.is_ok() {
                res = file.read_at(
                    (first + rows.start) as u64 * 8 * w as u64,
                    as_bytes_mut(v[0].data),
                );
            }
        })?;
        res
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
    for (a, acc) in arrays.iter() {
        crate::touches::note(&a.name, acc.reads(), acc.writes());
    }
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
    name: String,
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
            name: name.into(),
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
        crate::touches::note(&self.name, true, false);
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
