//! Cluster specs: the emulated heterogeneous cluster an app runs on
//! (`--cluster NAME|FILE`). A spec is TOML with one `[[rank]]` table per
//! MPI rank, in rank order:
//!
//! ```toml
//! [[rank]]
//! cpu_power = 1.0      # relative CPU power, 1.0 = one core of this machine
//! mem_limit_mb = 512   # optional: memory for local arrays (unlimited if absent)
//! io_factor = 1.0      # optional: disk slowdown (1.0 if absent)
//! ```
//!
//! A spec may instead describe hosts and their links (`[[host]]` tables,
//! see [`crate::spec`]): each host carries `ranks` ranks of its
//! CPU, memory and disk, in host order, and `mheta hosts` builds the hosts
//! and links on this machine. Such a spec's [`ClusterSpec::lab`] is set.
//!
//! Built-in names: `uniform` (every rank at power 1.0, any rank count), the
//! files shipped in the repository's `clusters/` folder by file stem
//! (`het2`, `het4`, `dc4`, `io8`, `hy1_4`, ...), and the MHETA paper's
//! table 1 configurations `DC`, `IO`, `HY1` and `HY2`, which pick the
//! file for the job's size (2, 4 or 8 ranks).

use crate::{HostSpec, Lab, LabTable};
use serde::Deserialize;
use std::path::Path;

/// One rank of a cluster spec.
#[derive(Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RankSpec {
    pub cpu_power: f64,
    #[serde(default)]
    pub mem_limit_mb: Option<f64>,
    #[serde(default = "one")]
    pub io_factor: f64,
}

fn one() -> f64 {
    1.0
}

/// A whole cluster spec: one entry per rank, and the hosts and links when
/// the spec has `[[host]]` tables.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSpec {
    pub rank: Vec<RankSpec>,
    /// Hosts and links (`[[host]]` specs), with rank `r` on host
    /// `lab.rank_hosts()[r]`.
    pub lab: Option<Lab>,
}

/// The file as written: `[[rank]]` tables, or `[[host]]` tables with an
/// optional `[lab]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    #[serde(default)]
    rank: Vec<RankSpec>,
    #[serde(default)]
    host: Vec<HostSpec>,
    #[serde(default)]
    lab: Option<LabTable>,
}

/// A cluster spec that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "--cluster {name}: no such file and not a built-in name (built-ins: uniform, DC, IO, HY1, HY2, {builtins})"
    )]
    Unknown { name: String, builtins: String },
    #[error("--cluster {name}: defined for 2, 4 and 8 ranks, but the job has {ranks}")]
    Size { name: String, ranks: usize },
    #[error(
        "--cluster {name}: its size comes from the job (--np); here a spec with its own ranks is needed (a file, or a built-in with hosts: net2, net4, netcpu4, netdc2, netuniform2, nethy1-2)"
    )]
    NeedsSize { name: String },
    #[error("{path}: {detail}")]
    Invalid { path: String, detail: String },
    #[error("{path}: describes {found} ranks but the job has {expected}")]
    Ranks {
        path: String,
        found: usize,
        expected: usize,
    },
}

/// Specs shipped with mheta, by name.
const BUILTINS: &[(&str, &str)] = &[
    ("het2", include_str!("../../clusters/het2.toml")),
    ("het4", include_str!("../../clusters/het4.toml")),
    ("dc2", include_str!("../../clusters/dc2.toml")),
    ("dc4", include_str!("../../clusters/dc4.toml")),
    ("dc8", include_str!("../../clusters/dc8.toml")),
    ("io2", include_str!("../../clusters/io2.toml")),
    ("io4", include_str!("../../clusters/io4.toml")),
    ("io8", include_str!("../../clusters/io8.toml")),
    ("hy1_2", include_str!("../../clusters/hy1_2.toml")),
    ("hy1_4", include_str!("../../clusters/hy1_4.toml")),
    ("hy1_8", include_str!("../../clusters/hy1_8.toml")),
    ("hy2_2", include_str!("../../clusters/hy2_2.toml")),
    ("hy2_4", include_str!("../../clusters/hy2_4.toml")),
    ("hy2_8", include_str!("../../clusters/hy2_8.toml")),
    ("net2", include_str!("../../clusters/net2.toml")),
    ("net4", include_str!("../../clusters/net4.toml")),
    ("netcpu4", include_str!("../../clusters/netcpu4.toml")),
    ("netdc2", include_str!("../../clusters/netdc2.toml")),
    (
        "netuniform2",
        include_str!("../../clusters/netuniform2.toml"),
    ),
    ("nethy1-2", include_str!("../../clusters/nethy1-2.toml")),
];

/// The paper's table 1 names and the job sizes they are defined for.
const TABLE1: &[(&str, &str)] = &[("dc", "dc"), ("io", "io"), ("hy1", "hy1_"), ("hy2", "hy2_")];
const TABLE1_SIZES: &[usize] = &[2, 4, 8];

impl ClusterSpec {
    /// Every rank at power 1.0.
    pub fn uniform(ranks: usize) -> Self {
        ClusterSpec {
            rank: vec![
                RankSpec {
                    cpu_power: 1.0,
                    mem_limit_mb: None,
                    io_factor: 1.0,
                };
                ranks
            ],
            lab: None,
        }
    }

    /// Parse TOML text; `path` names the source in errors (and its file
    /// stem names a lab that has no `[lab] name`).
    pub fn parse(text: &str, path: &str) -> Result<Self, ClusterError> {
        let file: SpecFile = toml::from_str(text).map_err(|e| ClusterError::Invalid {
            path: path.into(),
            detail: e.to_string().replace('\n', " "),
        })?;
        let spec = match (file.rank.is_empty(), file.host.is_empty()) {
            (false, false) => {
                return Err(ClusterError::Invalid {
                    path: path.into(),
                    detail: "has both [[rank]] and [[host]] tables: use one (a host carries `ranks` ranks)".into(),
                });
            }
            (_, false) => {
                let stem = Path::new(path)
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("lab");
                let lab = Lab::new(file.lab, file.host, path, stem).map_err(|e| {
                    ClusterError::Invalid {
                        path: e.path,
                        detail: e.detail,
                    }
                })?;
                let rank = lab
                    .rank_hosts()
                    .into_iter()
                    .map(|h| {
                        let h = &lab.hosts[h];
                        RankSpec {
                            cpu_power: h.cpu_power,
                            mem_limit_mb: h.mem_limit_mb,
                            io_factor: h.io_factor,
                        }
                    })
                    .collect();
                ClusterSpec {
                    rank,
                    lab: Some(lab),
                }
            }
            _ => {
                if file.lab.is_some() {
                    return Err(ClusterError::Invalid {
                        path: path.into(),
                        detail: "[lab] needs [[host]] tables".into(),
                    });
                }
                ClusterSpec {
                    rank: file.rank,
                    lab: None,
                }
            }
        };
        for (i, r) in spec.rank.iter().enumerate() {
            let bad = |detail: String| ClusterError::Invalid {
                path: path.into(),
                detail: format!("rank {i}: {detail}"),
            };
            if !(r.cpu_power.is_finite() && r.cpu_power > 0.0) {
                return Err(bad(format!("cpu_power = {} must be > 0", r.cpu_power)));
            }
            if !(r.io_factor.is_finite() && r.io_factor > 0.0) {
                return Err(bad(format!("io_factor = {} must be > 0", r.io_factor)));
            }
            if let Some(m) = r.mem_limit_mb
                && !(m.is_finite() && m > 0.0)
            {
                return Err(bad(format!("mem_limit_mb = {m} must be > 0")));
            }
        }
        if spec.rank.is_empty() {
            return Err(ClusterError::Invalid {
                path: path.into(),
                detail: "no [[rank]] or [[host]] tables".into(),
            });
        }
        Ok(spec)
    }

    /// Resolve `--cluster NAME|FILE` for a job of `ranks` ranks.
    pub fn resolve(name: &str, ranks: usize) -> Result<Self, ClusterError> {
        let spec = Self::lookup(name, Some(ranks))?;
        if spec.rank.len() != ranks {
            return Err(ClusterError::Ranks {
                path: name.into(),
                found: spec.rank.len(),
                expected: ranks,
            });
        }
        Ok(spec)
    }

    /// Load `NAME|FILE` whatever its rank count (`mheta hosts`, and a
    /// job that takes its size from the spec). `uniform` and the paper's
    /// table 1 names need a size: they are refused here.
    pub fn load(name: &str) -> Result<Self, ClusterError> {
        Self::lookup(name, None)
    }

    fn lookup(name: &str, ranks: Option<usize>) -> Result<Self, ClusterError> {
        if name == "uniform" {
            return match ranks {
                Some(r) => Ok(Self::uniform(r)),
                None => Err(ClusterError::NeedsSize { name: name.into() }),
            };
        }
        if Path::new(name).is_file() {
            let text = std::fs::read_to_string(name).map_err(|e| ClusterError::Invalid {
                path: name.into(),
                detail: e.to_string(),
            })?;
            return Self::parse(&text, name);
        }
        if let Some((_, stem)) = TABLE1.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            let Some(ranks) = ranks else {
                return Err(ClusterError::NeedsSize { name: name.into() });
            };
            if !TABLE1_SIZES.contains(&ranks) {
                return Err(ClusterError::Size {
                    name: name.into(),
                    ranks,
                });
            }
            let file = format!("{stem}{ranks}");
            let text = BUILTINS
                .iter()
                .find(|(n, _)| *n == file)
                .map(|(_, t)| *t)
                .unwrap_or_default();
            return Self::parse(text, name);
        }
        if let Some((n, text)) = BUILTINS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return Self::parse(text, n);
        }
        Err(ClusterError::Unknown {
            name: name.into(),
            builtins: BUILTINS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_defaults() {
        let s = ClusterSpec::parse(
            "[[rank]]\ncpu_power = 1.0\n[[rank]]\ncpu_power = 0.5\nmem_limit_mb = 64\n",
            "x",
        )
        .unwrap();
        assert_eq!(s.rank.len(), 2);
        assert_eq!(s.rank[1].cpu_power, 0.5);
        assert_eq!(s.rank[1].mem_limit_mb, Some(64.0));
        assert_eq!(s.rank[0].io_factor, 1.0);
    }

    #[test]
    fn rejects_bad_values_naming_rank() {
        let e = ClusterSpec::parse("[[rank]]\ncpu_power = 0\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.toml") && e.contains("rank 0"), "{e}");
        let e = ClusterSpec::parse("[[rank]]\ncpu = 1\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.toml"), "{e}");
    }

    #[test]
    fn table1_names_follow_the_job_size() {
        for np in [2, 4, 8] {
            for name in ["DC", "IO", "HY1", "hy2"] {
                let s = ClusterSpec::resolve(name, np).unwrap();
                assert_eq!(s.rank.len(), np, "{name} at {np}");
            }
        }
        let io = ClusterSpec::resolve("IO", 4).unwrap();
        assert_eq!(io.rank.iter().filter(|r| r.io_factor == 4.0).count(), 2);
        assert!(io.rank.iter().all(|r| r.cpu_power == 1.0));
        assert!(matches!(
            ClusterSpec::resolve("DC", 3),
            Err(ClusterError::Size { ranks: 3, .. })
        ));
    }

    #[test]
    fn builtin_and_rank_count() {
        assert_eq!(
            ClusterSpec::resolve("het2", 2).unwrap().rank[1].cpu_power,
            0.5
        );
        assert!(matches!(
            ClusterSpec::resolve("het2", 4),
            Err(ClusterError::Ranks { .. })
        ));
        assert!(matches!(
            ClusterSpec::resolve("nope", 2),
            Err(ClusterError::Unknown { .. })
        ));
    }

    #[test]
    fn hosts_give_each_rank_its_hosts_figures() {
        let s = ClusterSpec::resolve("netcpu4", 4).unwrap();
        let lab = s.lab.as_ref().unwrap();
        assert_eq!(lab.name, "netcpu4");
        assert_eq!(
            s.rank.iter().map(|r| r.cpu_power).collect::<Vec<_>>(),
            vec![1.0, 1.0, 0.75, 0.5]
        );
        assert_eq!(lab.pair_rate(0, 3), Some(100e6));
        assert_eq!(lab.pair_rate(1, 2), Some(200e6));
        let two = ClusterSpec::parse(
            "[[host]]\nname = \"a\"\nranks = 3\ncpu_power = 0.5\n[[host]]\nname = \"b\"\ncpu_power = 1.0\n",
            "dir/two.toml",
        )
        .unwrap();
        assert_eq!(two.rank.len(), 4);
        assert_eq!(two.rank[2].cpu_power, 0.5);
        assert_eq!(two.rank[3].cpu_power, 1.0);
        assert_eq!(two.lab.unwrap().name, "two");
        assert!(matches!(
            ClusterSpec::resolve("net4", 2),
            Err(ClusterError::Ranks { found: 4, .. })
        ));
        assert_eq!(ClusterSpec::load("net2").unwrap().rank.len(), 2);
        assert!(ClusterSpec::load("DC").is_err());
        let e = ClusterSpec::parse(
            "[[rank]]\ncpu_power = 1.0\n[[host]]\nname = \"a\"\ncpu_power = 1.0\n",
            "m.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("m.toml") && e.contains("both"), "{e}");
    }
}
