//! The cgroups (v1) of a rank's emulation: a group of one controller made
//! or joined with its settings (removed on drop), and the `blkio`
//! throttle of the disk under the scratch directory.

use std::path::{Path, PathBuf};

/// One controller's group for this rank; removed on drop (the rank
/// moves itself back to the parent first).
pub(super) struct Group {
    dir: PathBuf,
    parent: PathBuf,
}

impl Drop for Group {
    fn drop(&mut self) {
        let pid = std::process::id().to_string();
        let _ = std::fs::write(self.parent.join("cgroup.procs"), &pid);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

impl Group {
    /// Write `value` into the group's `file` (a setting of its controller).
    pub(super) fn set(&self, file: &str, value: &str) -> Result<(), String> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| format!("{}: {e}", self.dir.join(file).display()))
    }
}

/// The mount point of a v1 controller plus this process's path in it.
fn own_cgroup(controller: &str) -> Option<PathBuf> {
    let mount = Path::new("/sys/fs/cgroup").join(controller);
    if !mount.join("cgroup.procs").exists() {
        return None;
    }
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        ctrls
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })?;
    Some(mount.join(rel.trim_start_matches('/')))
}

fn pid_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// A new group `mheta-<pid>` under this process's own group of
/// `controller`, after removing empty groups of dead mheta processes.
pub(super) fn make_group(controller: &str, settings: &[(&str, String)]) -> Result<Group, String> {
    join_group(
        controller,
        &format!("mheta-{}", std::process::id()),
        settings,
    )
}

/// Join group `name` under this process's own group of `controller`,
/// made (with `settings`) if it is not there yet, after removing empty
/// groups of dead mheta processes (`mheta-PID`, `mheta-job-PID`). The
/// last member to leave removes it ([`Group`]'s drop).
pub(super) fn join_group(
    controller: &str,
    name: &str,
    settings: &[(&str, String)],
) -> Result<Group, String> {
    let parent =
        own_cgroup(controller).ok_or_else(|| format!("cgroup v1 {controller} not mounted"))?;
    if let Ok(rd) = std::fs::read_dir(&parent) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name
                .strip_prefix("mheta-")
                .map(|p| p.strip_prefix("job-").unwrap_or(p))
                .and_then(|p| p.parse::<u32>().ok())
                && !pid_alive(pid)
            {
                let _ = std::fs::remove_dir(e.path());
            }
        }
    }
    let dir = parent.join(name);
    let g = Group {
        dir: dir.clone(),
        parent,
    };
    // Twice: a member of another job may remove an empty group between
    // its making and the joining.
    let mut last = String::new();
    for _ in 0..2 {
        let joined = std::fs::create_dir_all(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))
            .and_then(|()| {
                for (file, value) in settings {
                    std::fs::write(dir.join(file), value)
                        .map_err(|e| format!("{}: {e}", dir.join(file).display()))?;
                }
                std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
                    .map_err(|e| format!("{}: {e}", dir.join("cgroup.procs").display()))
            });
        match joined {
            Ok(()) => return Ok(g),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Block device (major:minor) holding `dir`; partitions map to their disk.
fn block_device(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.exists() {
        return None;
    }
    // A partition's parent directory in sysfs is its disk.
    if sys.join("partition").exists() {
        let disk = std::fs::canonicalize(&sys).ok()?.parent()?.join("dev");
        return std::fs::read_to_string(disk)
            .ok()
            .map(|s| s.trim().to_string());
    }
    Some(format!("{major}:{minor}"))
}

/// A blkio cgroup throttling reads and writes on the block device under
/// `scratch` to `bps` bytes a second.
pub(super) fn throttle(scratch: &Path, bps: u64) -> Result<Group, String> {
    let dev = block_device(scratch)
        .ok_or_else(|| format!("no block device under {}", scratch.display()))?;
    make_group(
        "blkio",
        &[
            ("blkio.throttle.read_bps_device", format!("{dev} {bps}")),
            ("blkio.throttle.write_bps_device", format!("{dev} {bps}")),
        ],
    )
}
