//! The sense file (`mheta sense -o`; JSON, `"format": "mheta-sense"`,
//! `"version": 1`; docs/FORMATS.md): the settings, the samples and their
//! summaries per core and per bandwidth pair, the sensors' overhead, and
//! with `--ranks` a load description for `mheta predict --load`.

use super::bandwidth::BwPeer;
use super::cpu::Method;
use super::summary::Summary;
use super::{FORMAT, VERSION};
use mheta_model::slowdown::LoadSpec;
use mheta_model::stoch::Stoch;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

/// What to sense, how often, for how long.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub cores: Vec<usize>,
    pub duration_s: f64,
    pub interval_s: f64,
    /// Spin time of one CPU probe (method probe).
    pub probe_s: f64,
    pub method: Method,
    #[serde(default)]
    pub bw_peer: Option<BwPeer>,
    pub bw_bytes: usize,
    /// The `--ranks` map, as given.
    #[serde(default)]
    pub ranks: Option<String>,
}

/// The sensors' own cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Overhead {
    /// probe_s / interval_s: the share of a core the probe spins for; a
    /// co-runner of the core loses up to this (0 for passive).
    pub probe_duty: f64,
    /// Per sensed core, the CPU time the sensor thread used (probe spin,
    /// /proc scan, bandwidth client) over the time sensed.
    pub measured_cpu_duty: Vec<f64>,
    /// Mean time of one CPU sample, seconds (probe: its spin; passive:
    /// the /proc scan).
    pub cpu_sample_s: f64,
    /// Bytes per second the bandwidth probes put on the link on average
    /// (bw_bytes / interval), 0 without them.
    pub bw_probe_bps: f64,
    /// Mean time of one bandwidth probe, seconds; over interval_s it is
    /// the share of the link's time the probe occupies.
    pub bw_probe_s: f64,
    pub bw_probe_duty: f64,
}

/// One core's CPU availability series and its summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoreSense {
    pub core: usize,
    /// `[t, availability]`, t in seconds from the start.
    pub samples: Vec<[f64; 2]>,
    /// The scheduler's turn on this core: the median CPU a probe got a
    /// turn, over the probes that shared the core (absent where none
    /// did, or with `--method passive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_s: Option<f64>,
    #[serde(flatten)]
    pub summary: Summary,
}

/// One bandwidth pair's series and summaries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairSense {
    /// The core the client ran on.
    pub core: usize,
    pub peer: BwPeer,
    /// `[t, bytes/s]`.
    pub samples: Vec<[f64; 2]>,
    /// The best bandwidth seen, bytes/s: the dedicated figure.
    pub dedicated_bps: f64,
    /// The unit of `dist` and `mixture`: "GB/s" (1e9 bytes/s), to fit
    /// the histogram.
    pub unit: String,
    #[serde(flatten)]
    pub summary: Summary,
    /// Dedicated over available (Figueira and Berman eq. 3): mean ± sd over the
    /// samples.
    pub slowdown: Stoch,
}

/// A `mheta sense` file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SenseFile {
    pub format: String,
    pub version: u32,
    pub settings: Settings,
    /// Seconds actually sensed (shorter when interrupted).
    pub elapsed_s: f64,
    pub interrupted: bool,
    pub overhead: Overhead,
    pub cores: Vec<CoreSense>,
    #[serde(default)]
    pub pairs: Vec<PairSense>,
    /// Sensors that stopped early, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// With `--ranks`: the load for `mheta predict --load`, one node per
    /// sensed core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadSpec>,
}

/// Errors reading a sense file; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum SenseError {
    #[error("{path}: {err}")]
    Io { path: String, err: io::Error },
    #[error("{path}: not a JSON sense file: {msg}")]
    Json { path: String, msg: String },
    #[error("{path}: format {found:?}, expected {FORMAT:?}")]
    Format { path: String, found: String },
    #[error("{path}: version {found} of {FORMAT}, this mheta reads version {VERSION}")]
    Version { path: String, found: String },
}

impl SenseFile {
    /// Parse the text of a sense file, naming `path` in errors.
    pub fn parse(text: &str, path: &str) -> Result<SenseFile, SenseError> {
        let json = |msg: String| SenseError::Json {
            path: path.into(),
            msg,
        };
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| json(e.to_string()))?;
        let format = v.get("format").and_then(|f| f.as_str());
        if format != Some(FORMAT) {
            return Err(SenseError::Format {
                path: path.into(),
                found: v.get("format").map_or("(none)".into(), |f| f.to_string()),
            });
        }
        if v.get("version").and_then(|f| f.as_u64()) != Some(VERSION as u64) {
            return Err(SenseError::Version {
                path: path.into(),
                found: v.get("version").map_or("(none)".into(), |f| f.to_string()),
            });
        }
        serde_json::from_value(v).map_err(|e| json(e.to_string()))
    }

    /// The file as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Write atomically ([`mheta_base::write_atomic`]); the error names
    /// `path`.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        mheta_base::write_atomic(path, (self.to_json() + "\n").as_bytes())
    }
}

/// Read and check a sense file ([`SenseFile::parse`]).
pub fn read_sense_file(path: &Path) -> Result<SenseFile, SenseError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|err| SenseError::Io {
        path: p.clone(),
        err,
    })?;
    SenseFile::parse(&text, &p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sense::DEFAULT_BW_BYTES;
    use crate::sense::summary::summarize;
    use crate::sense::summary::tests::levels;
    use crate::sense::to_load::{load_spec, parse_ranks};

    #[test]
    fn file_round_trip_and_errors() {
        let s = levels(&[(1.0, 2.0), (0.5, 1.0)], 10, 0.1);
        let f = SenseFile {
            format: FORMAT.into(),
            version: VERSION,
            settings: Settings {
                cores: vec![0],
                duration_s: 30.0,
                interval_s: 0.1,
                probe_s: 0.01,
                method: Method::Probe,
                bw_peer: Some(BwPeer::Core(1)),
                bw_bytes: DEFAULT_BW_BYTES,
                ranks: Some("0:0,1".into()),
            },
            elapsed_s: 30.0,
            interrupted: false,
            overhead: Overhead::default(),
            cores: vec![CoreSense {
                core: 0,
                samples: s.iter().map(|&(t, v)| [t, v]).collect(),
                summary: summarize(&s, 0.1),
                turn_s: Some(4e-3),
            }],
            pairs: Vec::new(),
            warnings: Vec::new(),
            load: None,
        };
        let mut f2 = f.clone();
        f2.load = Some(load_spec(&f, &parse_ranks("0:0,1", &[0]).expect("map")));
        let back = SenseFile::parse(&f2.to_json(), "x.json").expect("round trip");
        // serde_json's float parsing may move the last bit: compare shapes.
        assert_eq!(back.settings, f2.settings);
        assert_eq!(back.cores[0].samples.len(), 300);
        let (a, b) = (&back.cores[0].summary.mixture, &f2.cores[0].summary.mixture);
        assert_eq!(a.modes.len(), 2);
        for (x, y) in a.modes.iter().zip(&b.modes) {
            assert!(
                (x.share - y.share).abs() < 1e-12 && (x.value.mean - y.value.mean).abs() < 1e-12
            );
        }
        assert_eq!(back.cores[0].summary.dist.modes.len(), 2);
        assert!(back.load.is_some());
        // The load object is a LoadSpec that resolves.
        let v: serde_json::Value = serde_json::from_str(&f2.to_json()).expect("json");
        let load = LoadSpec::parse(&v["load"].to_string(), "x.json").expect("LoadSpec");
        let sl = load.resolve(2, 1.0, "x.json").expect("resolve");
        assert!(sl.cpu[0].mean > 1.0 && sl.cpu[1] == sl.cpu[0]);
        let e = SenseFile::parse("{", "bad.json").expect_err("garbled");
        assert!(e.to_string().starts_with("bad.json: not a JSON"), "{e}");
        let e = SenseFile::parse(r#"{"format":"other","version":1}"#, "o.json").expect_err("fmt");
        assert!(
            e.to_string().contains("o.json") && e.to_string().contains("format"),
            "{e}"
        );
        let e =
            SenseFile::parse(r#"{"format":"mheta-sense","version":9}"#, "v.json").expect_err("v");
        assert!(e.to_string().contains("version 9"), "{e}");
        let e = read_sense_file(Path::new("/nonexistent/s.json")).expect_err("missing");
        assert!(e.to_string().starts_with("/nonexistent/s.json:"), "{e}");
    }
}
