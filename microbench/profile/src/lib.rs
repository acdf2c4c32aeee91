//! The cluster profile: what one microbenchmark session (`mheta bench`,
//! crate `mheta-microbench`) measured of a cluster, stored as versioned JSON.
//! This crate owns the format and is the one typed API through which the
//! runtime reads it; it is MPI-free.
//!
//! Costs are in seconds. For an ordered pair (src, dst) a message of `b`
//! bytes costs the sender `o_send_s`, travels `latency_s + b * per_byte_s`,
//! and costs the receiver `o_recv_s` (LogP's o, L and G).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` field of every profile.
pub const FORMAT: &str = "mheta-cluster-profile";
/// Version of the profile layout; bump on incompatible change.
pub const VERSION: u32 = 1;

/// Costs of messages from `src` to `dst` (MPI_COMM_WORLD ranks).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PairCost {
    pub src: u32,
    pub dst: u32,
    /// Wire latency L, with the overheads taken out.
    pub latency_s: f64,
    /// Cost per byte (1 / bandwidth) fitted over the size sweep.
    pub per_byte_s: f64,
    /// Sender overhead o_s of a small message.
    pub o_send_s: f64,
    /// Receiver overhead o_r of a small message that has already arrived.
    pub o_recv_s: f64,
    /// Median round trip of a small message (8 B) ping-pong.
    pub rtt_small_s: f64,
    /// Bandwidth at the largest size measured, bytes per second.
    pub bandwidth_bps: f64,
}

/// A measured cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ClusterProfile {
    pub format: String,
    pub version: u32,
    /// Ranks measured.
    pub np: u32,
    /// Host of each rank.
    pub hosts: Vec<String>,
    /// How overheads were separated from latency.
    pub method: String,
    /// Every ordered pair (src != dst), in any order.
    pub pairs: Vec<PairCost>,
}

/// Errors loading a profile; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a valid cluster profile: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{path}: profile version {found}, this mheta reads version {expected}; re-run `mheta bench`"
    )]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{path}: {detail}")]
    Invalid { path: PathBuf, detail: String },
}

impl ClusterProfile {
    /// A profile with no pairs yet.
    pub fn new(np: u32, hosts: Vec<String>, method: &str) -> Self {
        ClusterProfile {
            format: FORMAT.into(),
            version: VERSION,
            np,
            hosts,
            method: method.into(),
            pairs: Vec::new(),
        }
    }

    /// Read, version-check and validate a profile file.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.into(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parse profile JSON; `path` only names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ProfileError> {
        let corrupt = |detail: String| ProfileError::Corrupt {
            path: path.into(),
            detail,
        };
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
        if v.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(corrupt(format!("missing \"format\": \"{FORMAT}\"")));
        }
        let found = v
            .get("version")
            .and_then(|x| x.as_u64())
            .ok_or_else(|| corrupt("missing \"version\"".into()))?;
        if found != VERSION as u64 {
            return Err(ProfileError::Version {
                path: path.into(),
                found: found as u32,
                expected: VERSION,
            });
        }
        let p: ClusterProfile = serde_json::from_value(v).map_err(|e| corrupt(e.to_string()))?;
        p.validate().map_err(|detail| ProfileError::Invalid {
            path: path.into(),
            detail,
        })?;
        Ok(p)
    }

    /// Check that every ordered pair is present once with sane costs.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.np as usize;
        if n == 0 {
            return Err("np is 0".into());
        }
        let mut seen = vec![false; n * n];
        for c in &self.pairs {
            let (s, d) = (c.src as usize, c.dst as usize);
            if s >= n || d >= n || s == d {
                return Err(format!(
                    "pair {s}->{d} is not an ordered pair of distinct ranks below np={n}"
                ));
            }
            if std::mem::replace(&mut seen[s * n + d], true) {
                return Err(format!("pair {s}->{d} appears twice"));
            }
            for (name, x) in [
                ("latency_s", c.latency_s),
                ("per_byte_s", c.per_byte_s),
                ("o_send_s", c.o_send_s),
                ("o_recv_s", c.o_recv_s),
            ] {
                if !x.is_finite() || x < 0.0 {
                    return Err(format!(
                        "pair {s}->{d}: {name} = {x} is not a finite non-negative time"
                    ));
                }
            }
        }
        for s in 0..n {
            for d in 0..n {
                if s != d && !seen[s * n + d] {
                    return Err(format!("pair {s}->{d} is missing"));
                }
            }
        }
        Ok(())
    }

    /// Costs from `src` to `dst`. Panics if the pair is absent, which a
    /// validated profile rules out for `src != dst < np`.
    pub fn pair(&self, src: u32, dst: u32) -> &PairCost {
        self.pairs
            .iter()
            .find(|c| c.src == src && c.dst == dst)
            .unwrap_or_else(|| panic!("profile has no pair {src}->{dst}"))
    }

    /// Serialise to pretty JSON.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("profile serialises");
        s.push('\n');
        s
    }

    /// Write to `path` through a temporary file and a rename.
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let io = |source| ProfileError::Io {
            path: path.into(),
            source,
        };
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        std::fs::write(&tmp, self.to_json()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> ClusterProfile {
        let mut p = ClusterProfile::new(2, vec!["a".into(), "b".into()], "test");
        for (s, d) in [(0, 1), (1, 0)] {
            p.pairs.push(PairCost {
                src: s,
                dst: d,
                latency_s: 1e-6,
                per_byte_s: 1e-10,
                o_send_s: 2e-7,
                o_recv_s: 3e-7,
                rtt_small_s: 3e-6,
                bandwidth_bps: 1e10,
            });
        }
        p
    }

    #[test]
    fn round_trip() {
        let p = two();
        assert_eq!(
            ClusterProfile::parse(&p.to_json(), Path::new("p")).unwrap(),
            p
        );
    }

    #[test]
    fn wrong_version_named() {
        let s = two().to_json().replace("\"version\": 1", "\"version\": 7");
        let e = ClusterProfile::parse(&s, Path::new("prof.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("prof.json") && e.contains("version 7"), "{e}");
    }

    #[test]
    fn missing_pair_named() {
        let mut p = two();
        p.pairs.pop();
        let e = ClusterProfile::parse(&p.to_json(), Path::new("p"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("pair 1->0 is missing"), "{e}");
    }

    #[test]
    fn garbage_is_corrupt() {
        let e = ClusterProfile::parse("{not json", Path::new("p")).unwrap_err();
        assert!(matches!(e, ProfileError::Corrupt { .. }));
    }
}
