//! Checkpoint and resume (`--checkpoint-every K`, `--checkpoint-dir DIR`,
//! `--resume DIR`), and the saved state an out-of-core move passes through.
//!
//! **Format.** A checkpoint directory holds one subdirectory per
//! checkpoint, `ckpt-<iterations done, 8 digits>-<tag>/`, with
//! - one file per distributed array, `<name>.f64`: the array's global rows
//!   in order, `width` native-endian f64 each, written with MPI-IO by the
//!   ranks that own them. Any number of ranks with any GEN_BLOCK
//!   distribution reads it back;
//! - `manifest.json` ([`Manifest`]): the app, its problem (rows and
//!   parameters), the iterations done, the distribution and rank count it
//!   was written on, each array's width, rows and bytes, and the scalars
//!   that carry over (norms, coefficients).
//!
//! **Atomic commit.** Every array file is written and `MPI_File_sync`ed,
//! then rank 0 writes `manifest.json.tmp`, fsyncs it, renames it to
//! `manifest.json` and fsyncs the directory. A subdirectory without
//! `manifest.json` is incomplete: resume ignores it. Only after a commit
//! are older checkpoints and incomplete leftovers removed (each one's
//! manifest first), so a kill at any point leaves the newest complete
//! checkpoint, old or new, intact.
//!
//! **Resume** picks the newest complete checkpoint (most iterations), checks
//! that it is this app's and this problem's, and reads every array into the
//! distribution in force (`--dist`, or equal blocks).
//!
//! **Kill points** (for the crash tests): `MHETA_KILL=POINT:RANK:N` makes
//! rank RANK send itself SIGKILL at POINT: `iteration` (in iteration N,
//! counted from 0 over the whole run, inside its first stage after the
//! work), `checkpoint` (in the N-th checkpoint this process writes, after
//! its first array file, before the commit) or `redistribute` (in the N-th
//! move, after the first array has moved; out of core, after the old files
//! are dropped).

use crate::Kernel;
use crate::mpiio::Shared;
use crate::storage::Rows;
use anyhow::{Context, Result, bail};
use mpi::collective::CommunicatorCollectives;
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// `format` of every manifest.
pub const FORMAT: &str = "mheta-checkpoint";
/// This layout's version.
pub const VERSION: u32 = 1;
/// The manifest's name inside a checkpoint.
pub const MANIFEST: &str = "manifest.json";

/// What a checkpoint holds (`manifest.json`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub app: String,
    /// The distributed rows (the problem size).
    pub rows: u64,
    /// The app's problem parameters beyond its rows; must match to resume.
    pub params: Value,
    /// Iterations done: a resumed run starts with this one.
    pub iteration: u64,
    /// The rank count and distribution it was written on (information:
    /// resume reads it into any).
    pub np: usize,
    pub dist: Vec<u64>,
    pub arrays: Vec<ArrayEntry>,
    pub scalars: Map<String, Value>,
}

/// One distributed array's file.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ArrayEntry {
    pub name: String,
    pub file: String,
    /// f64 per row.
    pub width: u64,
    pub rows: u64,
    pub bytes: u64,
}

/// The problem a run solves, which a checkpoint must match.
#[derive(Clone, Debug)]
pub struct Problem {
    pub app: String,
    pub rows: u64,
    pub params: Value,
}

/// Saving or loading a kernel's state: the kernel's
/// [`Kernel::state`] names its arrays and scalars the same way for both.
pub struct State<'a> {
    world: &'a SimpleCommunicator,
    dir: &'a Path,
    saving: bool,
    /// This rank's first global row and row count, and the global rows.
    first: usize,
    local: usize,
    total: u64,
    manifest: &'a mut Manifest,
    kill: bool,
}

impl State<'_> {
    /// True while saving, false while loading.
    pub fn saving(&self) -> bool {
        self.saving
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.f64"))
    }

    fn entry(&self, name: &str, width: usize) -> Result<&ArrayEntry> {
        let e = self
            .manifest
            .arrays
            .iter()
            .find(|e| e.name == name)
            .with_context(|| format!("{}: no array {name}", self.dir.display()))?;
        if e.width != width as u64 || e.rows != self.total {
            bail!(
                "{}: array {name} has {} rows of {} values; this run needs {} of {width}",
                self.dir.display(),
                e.rows,
                e.width,
                self.total
            );
        }
        Ok(e)
    }

    fn saved(&mut self, name: &str, width: usize) {
        let bytes = self.total * width as u64 * 8;
        self.manifest.arrays.push(ArrayEntry {
            name: name.into(),
            file: format!("{name}.f64"),
            width: width as u64,
            rows: self.total,
            bytes,
        });
        if self.kill {
            self.kill = false;
            kill_point("checkpoint", self.world.rank() as usize);
        }
    }

    /// Save or load array `name` of `width` values per row through its
    /// shared file (collective): `io` writes this rank's rows when saving
    /// and reads them when loading; every rank's outcome is agreed on.
    fn array(
        &mut self,
        name: &str,
        width: usize,
        io: impl FnOnce(&Shared, bool) -> Result<(), crate::mpiio::IoError>,
    ) -> Result<()> {
        let path = self.path(name);
        if !self.saving {
            self.entry(name, width)?;
        }
        let opened = if self.saving {
            Shared::create(self.world, &path)
        } else {
            Shared::open_read(self.world, &path)
        };
        let f = crate::agree(self.world, opened.map_err(Into::into))?;
        let mut r = io(&f, self.saving);
        if self.saving {
            r = r.and_then(|_| f.sync());
        }
        let c = f.close();
        crate::agree(self.world, r.and(c).map_err(Into::into))?;
        if self.saving {
            self.saved(name, width);
        }
        Ok(())
    }

    /// A distributed array of the storage layer (in core or out of core).
    pub fn rows(&mut self, name: &str, a: &mut Rows) -> Result<()> {
        let first = self.first;
        self.array(name, a.width, |f, saving| {
            if saving {
                a.save_to(f, first)
            } else {
                a.load_from(f, first)
            }
        })
    }

    /// A plain vector of this rank's rows, `width` values each.
    pub fn local(&mut self, name: &str, width: usize, v: &mut [f64]) -> Result<()> {
        assert_eq!(v.len(), self.local * width, "{name}: not the local rows");
        let off = (self.first * width * 8) as u64;
        self.array(name, width, |f, saving| {
            if saving {
                f.write_at(off, crate::mpiio::as_bytes(v))
            } else {
                f.read_at(off, crate::mpiio::as_bytes_mut(v))
            }
        })
    }

    /// A value the same on every rank (a norm, a list of coefficients).
    pub fn scalar<T: Serialize + serde::de::DeserializeOwned>(
        &mut self,
        name: &str,
        v: &mut T,
    ) -> Result<()> {
        if self.saving {
            self.manifest
                .scalars
                .insert(name.into(), serde_json::to_value(&*v)?);
        } else {
            let x = self
                .manifest
                .scalars
                .get(name)
                .with_context(|| format!("{}: no value {name}", self.dir.display()))?;
            *v = serde_json::from_value(x.clone())
                .with_context(|| format!("{}: value {name}", self.dir.display()))?;
        }
        Ok(())
    }
}

/// The iteration the run is in (from 0, counting iterations done before
/// a resume), for the `iteration` kill point.
pub static ITERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `MHETA_KILL=POINT:RANK:N`: SIGKILL this process the N-th time rank
/// `rank` reaches `point`, or for `iteration`, in iteration N (module docs).
pub fn kill_point(point: &str, rank: usize) {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static SPEC: OnceLock<Option<(String, usize, u64)>> = OnceLock::new();
    static SEEN: AtomicU64 = AtomicU64::new(0);
    let spec = SPEC.get_or_init(|| {
        let v = std::env::var("MHETA_KILL").ok()?;
        let mut it = v.split(':');
        let p = it.next()?.to_string();
        let r = it.next()?.parse().ok()?;
        let n = it.next().map_or(Some(1), |n| n.parse().ok())?;
        Some((p, r, n))
    });
    let hit = |n: u64| {
        if point == "iteration" {
            // The N-th iteration of the run (from 0, counting those done
            // before a resume), once.
            ITERATION.load(Ordering::Relaxed) == n && SEEN.swap(1, Ordering::Relaxed) == 0
        } else {
            SEEN.fetch_add(1, Ordering::Relaxed) + 1 == n
        }
    };
    if let Some((p, r, n)) = spec
        && p == point
        && *r == rank
        && hit(*n)
    {
        eprintln!("mheta: MHETA_KILL: rank {rank} kills itself at {point} #{n}");
        // SAFETY: signals this process.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
}

/// Create `dir` if needed and check that files can be made in it.
pub fn prepare_dir(dir: &Path, what: &str) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("{what} {}: cannot create it", dir.display()))?;
    let probe = dir.join(format!(".probe.{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("{what} {}: not writable", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

fn read_manifest(dir: &Path) -> Result<Manifest> {
    let p = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&p).with_context(|| format!("{}", p.display()))?;
    let m: Manifest =
        serde_json::from_str(&text).with_context(|| format!("{}: not a manifest", p.display()))?;
    if m.format != FORMAT || m.version != VERSION {
        bail!(
            "{}: format {} version {}, not {FORMAT} version {VERSION}",
            p.display(),
            m.format,
            m.version
        );
    }
    Ok(m)
}

/// The checkpoints in `dir`: (iterations, path, manifest or why not).
fn scan(dir: &Path) -> Result<Vec<(u64, PathBuf, Result<Manifest>)>> {
    let rd = std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))?;
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("ckpt-") else {
            continue;
        };
        let Some(iter) = rest.split('-').next().and_then(|s| s.parse::<u64>().ok()) else {
            continue;
        };
        let m = read_manifest(&e.path());
        out.push((iter, e.path(), m));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    Ok(out)
}

/// The newest complete checkpoint in `dir`, with its files checked.
pub fn find(dir: &Path) -> Result<(PathBuf, Manifest)> {
    let what = format!("--resume {}", dir.display());
    if !dir.is_dir() {
        bail!("{what}: no such directory");
    }
    let all = scan(dir)?;
    if all.is_empty() {
        let empty = std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none());
        if empty {
            bail!("{what}: empty, no checkpoint to resume from");
        }
        bail!("{what}: not a checkpoint directory (no ckpt-* checkpoint in it)");
    }
    let Some((_, path, m)) = all.iter().rev().find(|(_, _, m)| m.is_ok()) else {
        let (_, p, e) = &all[all.len() - 1];
        let why = e
            .as_ref()
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        bail!(
            "{what}: no complete checkpoint ({} partial; newest {}: {why})",
            all.len(),
            p.display()
        );
    };
    let m = m.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?.clone();
    for a in &m.arrays {
        let f = path.join(&a.file);
        let len = std::fs::metadata(&f)
            .with_context(|| format!("{what}: checkpoint {} is damaged", path.display()))?
            .len();
        if len != a.bytes || a.bytes != a.rows * a.width * 8 {
            bail!(
                "{what}: checkpoint {} is damaged: {} has {len} bytes, the manifest says {}",
                path.display(),
                f.display(),
                a.bytes
            );
        }
    }
    Ok((path.clone(), m))
}

/// Is checkpoint `m` this run's problem, with iterations left to do?
pub fn matches(m: &Manifest, p: &Problem, iters: u64, path: &Path) -> Result<()> {
    let what = format!("--resume: checkpoint {}", path.display());
    if m.app != p.app {
        bail!("{what} is of app {}, not {}", m.app, p.app);
    }
    if m.rows != p.rows || m.params != p.params {
        let show = |rows: u64, params: &Value| match params.as_object() {
            Some(o) if !o.is_empty() => format!("{rows} rows, {params}"),
            _ => format!("{rows} rows"),
        };
        bail!(
            "{what} is of a different problem: {}; this run has {}",
            show(m.rows, &m.params),
            show(p.rows, &p.params)
        );
    }
    if m.iteration >= iters {
        bail!(
            "{what} has {} iterations done; --iters {iters} leaves none to run",
            m.iteration
        );
    }
    Ok(())
}

fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Save the kernel's state as a checkpoint of `iteration` iterations in
/// `dir`, commit it, and remove the older ones (collective). Returns the
/// new checkpoint's path and manifest.
pub fn save<K: Kernel>(
    world: &SimpleCommunicator,
    kernel: &mut K,
    ctx: &crate::Ctx,
    dir: &Path,
    problem: &Problem,
    iteration: u64,
    tag: u32,
) -> Result<(PathBuf, Manifest)> {
    let rank = ctx.rank;
    let path = dir.join(format!("ckpt-{iteration:08}-{tag}"));
    let made = if rank == 0 {
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).with_context(|| format!("cannot create {}", path.display()))
    } else {
        Ok(())
    };
    crate::agree(world, made)?;
    let mut m = Manifest {
        format: FORMAT.into(),
        version: VERSION,
        app: problem.app.clone(),
        rows: problem.rows,
        params: problem.params.clone(),
        iteration,
        np: ctx.np,
        dist: ctx.dist.0.clone(),
        arrays: Vec::new(),
        scalars: Map::new(),
    };
    let (first, local) = ctx.my_rows();
    let mut st = State {
        world,
        dir: &path,
        saving: true,
        first,
        local,
        total: problem.rows,
        manifest: &mut m,
        kill: true,
    };
    kernel.state(&mut st)?;
    let committed = if rank == 0 { commit(&path, &m) } else { Ok(()) };
    crate::agree(world, committed)?;
    if rank == 0 {
        prune(dir, &path);
    }
    world.barrier();
    Ok((path, m))
}

fn commit(path: &Path, m: &Manifest) -> Result<()> {
    let tmp = path.join(format!("{MANIFEST}.tmp"));
    let fin = path.join(MANIFEST);
    let text = serde_json::to_string_pretty(m)?;
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, &fin).with_context(|| format!("cannot commit {}", fin.display()))?;
    fsync_dir(path).with_context(|| format!("cannot sync {}", path.display()))?;
    if let Some(parent) = path.parent() {
        let _ = fsync_dir(parent);
    }
    Ok(())
}

/// Remove every checkpoint in `dir` but `keep`: manifest first, so that a
/// kill half-way leaves an incomplete one, never a damaged complete one.
fn prune(dir: &Path, keep: &Path) {
    let Ok(all) = scan(dir) else { return };
    for (_, p, _) in all {
        if p != keep {
            let _ = std::fs::remove_file(p.join(MANIFEST));
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// Load the kernel's state from checkpoint `path` (its manifest `m`) into
/// the distribution in force (collective).
pub fn load<K: Kernel>(
    world: &SimpleCommunicator,
    kernel: &mut K,
    ctx: &crate::Ctx,
    path: &Path,
    m: &Manifest,
) -> Result<()> {
    let (first, local) = ctx.my_rows();
    let mut m = m.clone();
    let mut st = State {
        world,
        dir: path,
        saving: false,
        first,
        local,
        total: m.rows,
        manifest: &mut m,
        kill: false,
    };
    kernel.state(&mut st)
}
