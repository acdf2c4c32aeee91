//! The load a prediction runs under ([`LoadSpec`], `mheta predict
//! --load FILE`), per node: its competing processes (Figueira and Berman
//! eq. 2, by the rule [`LocalRule`]) or its sensed CPU availability (a
//! stochastic value or a mixture of modes, Schopf and Berman), and what
//! [`LoadSpec::resolve`] turns it into: per-rank CPU and per-pair
//! communication slowdowns ([`Slowdowns`]).

use super::equations::{Competitor, DelayComm, local_slowdown};
use super::sharing::local_slowdown_shared_node;
use crate::stoch::{Mixture, ModeStat, Stoch};
use serde::{Deserialize, Serialize};

/// Which local-slowdown rule a load description uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalRule {
    /// Figueira and Berman eq. 2 as published ([`local_slowdown`]).
    Paper,
    /// Eq. 2's probabilities solved under processor sharing
    /// ([`local_slowdown_sharing`](super::local_slowdown_sharing)); the
    /// default.
    #[default]
    Sharing,
}

impl std::str::FromStr for LocalRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "paper" => Ok(LocalRule::Paper),
            "sharing" => Ok(LocalRule::Sharing),
            _ => Err(format!(
                "local slowdown rule {s:?}: expected paper or sharing"
            )),
        }
    }
}

/// What competes on one node, in a load description.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeLoad {
    /// The job's ranks on this node.
    pub ranks: Vec<usize>,
    /// CPUs (cores) the node's ranks and competitors share (default: one
    /// per listed rank). A node described as one core holding two ranks
    /// and a pinned competitor: `cpus = 1`.
    #[serde(default)]
    pub cpus: Option<f64>,
    /// Competing processes (Figueira and Berman eq. 2).
    #[serde(default)]
    pub competitors: Vec<Competitor>,
    /// Available bandwidth k of the competitors' links, for
    /// delay_comm^{i,k} (any unit the delay table was fitted in).
    #[serde(default)]
    pub competitor_bw: f64,
    /// Or the CPU share a CPU-bound process gets on the node, sensed
    /// (`mheta sense`): one value, or modes with shares and dwells.
    #[serde(default)]
    pub cpu_avail: Option<Mixture>,
    /// The mode the node is in now (index into `cpu_avail`'s modes), if
    /// known: a run shorter than that mode's dwell stays in it (Schopf and Berman
    /// section 3.1).
    #[serde(default)]
    pub current_mode: Option<usize>,
    /// Dedicated over available bandwidth of this node's links (eq. 3),
    /// applied to every message to or from its ranks (default 1).
    #[serde(default)]
    pub bw_slowdown: Option<Stoch>,
    /// Seconds of CPU the scheduler gives each runnable task on this
    /// node's cores before it moves on: a turn of its round (`mheta
    /// sense` measures it; about a tick). With it, a time-shared rank is
    /// replayed turn by turn: it runs in its turns only and takes
    /// what it waits for at its next one (`model/turns.rs`). Without it,
    /// every rank's work is stretched by its share, which is right only
    /// where an iteration spans many turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_s: Option<f64>,
}

/// The load a prediction runs under (`mheta predict --load FILE`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// The local-slowdown rule for nodes described by their competitors
    /// (default `sharing`; `paper` is eq. 2 as published).
    #[serde(default)]
    pub rule: LocalRule,
    /// delay_comm for eq. 2 (default 0: communicating competitors take no
    /// CPU from the job).
    #[serde(default)]
    pub delay_comm: DelayComm,
    #[serde(default, rename = "node")]
    pub nodes: Vec<NodeLoad>,
}

/// The slowdowns a run is priced with: per rank, its CPU slowdown over
/// the run (a stochastic value), and per node pair the communication
/// slowdown (`p x p`, row-major).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Slowdowns {
    pub cpu: Vec<Stoch>,
    /// Which node each rank is on (ranks on one node share its load:
    /// their slowdowns are related).
    pub node_of: Vec<usize>,
    pub net: Vec<Stoch>,
    /// Per node, how the CPU slowdown was formed: "dedicated",
    /// "competitors (eq. 2)", "single mode", "mixture over the run".
    pub how: Vec<String>,
    /// Per rank, the least and the greatest CPU slowdown the load can
    /// produce: a mixture's run average lies between its fastest and its
    /// slowest mode (each mode's value ±2σ), whatever the spread of the
    /// average says; a point slowdown is its own bounds.
    pub cpu_bounds: Vec<(f64, f64)>,
    /// Per rank, its node's link slowdown (eq. 3; 1 without one).
    pub bw: Vec<Stoch>,
    /// Per rank, the scheduler's turn on its node's cores, where the load
    /// gives one ([`NodeLoad::turn_s`]).
    pub turn_s: Vec<Option<f64>>,
}

impl Slowdowns {
    pub fn dedicated(p: usize) -> Slowdowns {
        Slowdowns {
            cpu: vec![Stoch::point(1.0); p],
            node_of: (0..p).collect(),
            net: vec![Stoch::point(1.0); p * p],
            how: vec!["dedicated".into(); p],
            cpu_bounds: vec![(1.0, 1.0); p],
            bw: vec![Stoch::point(1.0); p],
            turn_s: vec![None; p],
        }
    }

    /// The same load with each rank's CPU slowdown `cpu[r]`, and every
    /// transfer's slowdown formed from it as [`LoadSpec::resolve`] forms it.
    pub fn with_cpu(&self, cpu: Vec<Stoch>) -> Slowdowns {
        let p = cpu.len();
        let mut s = self.clone();
        for a in 0..p {
            for b in 0..p {
                s.net[a * p + b] = transfer(self.bw[a], self.bw[b], cpu[a], cpu[b]);
            }
        }
        s.cpu = cpu;
        s
    }

    /// Rank `r`'s CPU slowdown as mean ± 2σ, clipped to what the load
    /// can produce ([`Slowdowns::cpu_bounds`]).
    pub fn cpu_range2(&self, r: usize) -> (f64, f64) {
        let (lo, hi) = self.cpu[r].range2();
        let (blo, bhi) = self.cpu_bounds[r];
        (lo.clamp(blo, bhi), hi.clamp(blo, bhi))
    }

    pub fn is_dedicated(&self) -> bool {
        self.cpu
            .iter()
            .chain(&self.net)
            .all(|s| *s == Stoch::point(1.0))
    }
}

/// Errors in a load description.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {msg}")]
    Parse { path: String, msg: String },
    #[error("{path}: rank {rank} is listed on two nodes")]
    Twice { path: String, rank: usize },
    #[error("{path}: rank {rank} is out of range (the job has {ranks} ranks)")]
    Range {
        path: String,
        rank: usize,
        ranks: usize,
    },
    #[error("{path}: node {node}: {msg}")]
    Node {
        path: String,
        node: usize,
        msg: String,
    },
}

impl LoadSpec {
    /// Parse TOML or JSON (by the first non-blank character), naming
    /// `path` in every error.
    pub fn parse(text: &str, path: &str) -> Result<LoadSpec, LoadError> {
        let err = |msg: String| LoadError::Parse {
            path: path.into(),
            msg,
        };
        let spec: LoadSpec = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| err(e.to_string()))?
        } else {
            toml::from_str(text).map_err(|e| err(e.to_string()))?
        };
        Ok(spec)
    }

    /// Per-rank and per-pair slowdowns for a job of `p` ranks whose run
    /// lasts about `run_s` seconds (dedicated): a node's sensed mixture
    /// becomes its single current mode when the run likely stays in it
    /// (probability ≥ 0.9 of no switch, from the mode's dwell), else its
    /// average over the run's window ([`Mixture::over_window`]).
    pub fn resolve(&self, p: usize, run_s: f64, path: &str) -> Result<Slowdowns, LoadError> {
        let mut s = Slowdowns::dedicated(p);
        let mut seen = vec![false; p];
        for (n, node) in self.nodes.iter().enumerate() {
            let bad = |msg: String| LoadError::Node {
                path: path.into(),
                node: n,
                msg,
            };
            if let Some(q) = node.turn_s
                && !(q > 0.0 && q < 10.0)
            {
                return Err(bad(format!(
                    "turn_s {q}: a turn of the scheduler is a positive number of seconds (milliseconds, about a tick)"
                )));
            }
            let (cpu, how, bounds) = self.node_cpu(node, run_s).map_err(bad)?;
            for &r in &node.ranks {
                if r >= p {
                    return Err(LoadError::Range {
                        path: path.into(),
                        rank: r,
                        ranks: p,
                    });
                }
                if std::mem::replace(&mut seen[r], true) {
                    return Err(LoadError::Twice {
                        path: path.into(),
                        rank: r,
                    });
                }
                s.cpu[r] = cpu;
                s.turn_s[r] = node.turn_s;
                s.cpu_bounds[r] = bounds;
                s.node_of[r] = p + n;
                s.how[r] = how.clone();
            }
        }
        for r in 0..p {
            s.bw[r] = self.bw_of(s.node_of[r], p);
        }
        for a in 0..p {
            for b in 0..p {
                s.net[a * p + b] = transfer(s.bw[a], s.bw[b], s.cpu[a], s.cpu[b]);
            }
        }
        Ok(s)
    }

    fn bw_of(&self, node: usize, p: usize) -> Stoch {
        node.checked_sub(p)
            .and_then(|n| self.nodes.get(n))
            .and_then(|n| n.bw_slowdown)
            .unwrap_or(Stoch::point(1.0))
    }

    /// A node's CPU slowdown over a run of `run_s` seconds, how it was
    /// formed, and the least and greatest the load can produce.
    fn node_cpu(&self, node: &NodeLoad, run_s: f64) -> Result<(Stoch, String, (f64, f64)), String> {
        let (s, how) = self.node_cpu_value(node, run_s)?;
        let bounds = match &node.cpu_avail {
            Some(mx) if !mx.modes.is_empty() => mixture_bounds(mx),
            _ => (s.mean, s.mean),
        };
        Ok((s, how, bounds))
    }

    fn node_cpu_value(&self, node: &NodeLoad, run_s: f64) -> Result<(Stoch, String), String> {
        match (&node.cpu_avail, node.competitors.is_empty()) {
            (Some(_), false) => Err("give competitors or cpu_avail, not both".into()),
            (None, true) => Ok((Stoch::point(1.0), "dedicated".into())),
            (None, false) => {
                let (sd, how) = match self.rule {
                    LocalRule::Paper => (
                        local_slowdown(&node.competitors, &self.delay_comm, node.competitor_bw),
                        "competitors (eq. 2)",
                    ),
                    LocalRule::Sharing => (
                        local_slowdown_shared_node(
                            &node.competitors,
                            &self.delay_comm,
                            node.competitor_bw,
                            node.ranks.len().max(1),
                            node.cpus.unwrap_or(node.ranks.len().max(1) as f64),
                        ),
                        "competitors (eq. 2, shared CPU)",
                    ),
                };
                Ok((Stoch::point(sd), how.into()))
            }
            (Some(mx), true) => avail_slowdown(mx, node.current_mode, run_s),
        }
    }
}

/// A transfer between ranks whose nodes' links are slowed by `bwa`, `bwb`
/// and whose CPUs by `ca`, `cb`. A message is moved by its ends' CPUs as
/// well as the link (shared-memory copies, protocol processing, and a rank
/// that is not running does not take its message): it runs at the slower
/// of the two ends' CPU slowdowns and the links' (eq. 3), whichever is
/// larger. A sensed bandwidth already includes the CPU's part, so the
/// larger, not the product.
fn transfer(bwa: Stoch, bwb: Stoch, ca: Stoch, cb: Stoch) -> Stoch {
    bwa.max_corr(bwb, 1.0).max_corr(ca, 1.0).max_corr(cb, 1.0)
}

/// The least and greatest slowdown a node whose CPU availability is the
/// mixture `mx` can give a run: 1 over its fastest mode's value + 2σ
/// (at most 1), and over its slowest mode's value − 2σ.
fn mixture_bounds(mx: &Mixture) -> (f64, f64) {
    let hi_avail = mx
        .modes
        .iter()
        .map(|m| m.value.range2().1)
        .fold(f64::MIN, f64::max);
    let lo_avail = mx
        .modes
        .iter()
        .map(|m| m.value.range2().0)
        .fold(f64::MAX, f64::min);
    let lo = 1.0 / hi_avail.clamp(1e-3, 1.0);
    let hi = 1.0 / lo_avail.clamp(1e-3, 1.0);
    (lo.min(hi), hi.max(lo))
}

/// The CPU slowdown of a run of `run_s` dedicated seconds on a node whose
/// CPU availability is the mixture `mx`: 1 / (the availability averaged
/// over the run), its spread by the delta method. The run's own length
/// under load is the window (one fixed-point step: T = run_s · sd).
fn avail_slowdown(
    mx: &Mixture,
    current: Option<usize>,
    run_s: f64,
) -> Result<(Stoch, String), String> {
    if mx.modes.is_empty() {
        return Err("cpu_avail has no modes".into());
    }
    if mx
        .modes
        .iter()
        .any(|m| !(m.value.mean > 0.0 && m.value.mean <= 1.5))
    {
        return Err("cpu_avail values must be CPU shares in (0, 1]".into());
    }
    let stays = current
        .and_then(|c| mx.modes.get(c))
        .filter(|m: &&ModeStat| {
            m.mean_dwell_s <= 0.0 || (-run_s / (m.value.mean * m.mean_dwell_s)).exp() >= 0.9
        });
    if let Some(m) = stays.filter(|_| mx.modes.len() > 1) {
        return Ok((
            m.value.recip(),
            "single mode (Schopf and Berman sec. 3.1)".into(),
        ));
    }
    let rough = mx.moments().mean;
    let window = run_s / rough.max(1e-3);
    let avg = mx.over_window(window);
    let how = if mx.modes.len() > 1 {
        format!("mixture over a {window:.1} s run")
    } else {
        "one mode".into()
    };
    Ok((avg.recip(), how))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_spec_parses_and_resolves() {
        let text = r#"
            rule = "paper"
            delay_comm = 0.25
            [[node]]
            ranks = [0]
            competitors = [{ comm = 0.24 }, { comm = 0.24 }]
            [[node]]
            ranks = [1]
            cpu_avail = { modes = [{ value = { mean = 0.5, sd = 0.02 }, share = 1.0 }] }
            bw_slowdown = { mean = 2.0, sd = 0.0 }
        "#;
        let spec = LoadSpec::parse(text, "l.toml").expect("parses");
        let s = spec.resolve(3, 10.0, "l.toml").expect("resolves");
        assert!((s.cpu[0].mean - 2.6256).abs() < 1e-4);
        assert!((s.cpu[1].mean - 2.0).abs() < 0.01 && s.cpu[1].sd > 0.0);
        assert_eq!(s.cpu[2], Stoch::point(1.0));
        // 1 -> 2: its link's 2.0, or its CPU's about 2.0, whichever larger.
        assert!(s.net[3 + 2].mean >= 2.0 && s.net[3 + 2].mean < 2.2);
        // 0 -> 2: a dedicated link, but rank 0's CPU runs 2.63 times slower.
        assert!((s.net[2].mean - 2.6256).abs() < 1e-4);
        assert_eq!(s.net[2 * 3 + 2], Stoch::point(1.0));
        let bad = "[[node]]\nranks = [5]\n";
        let e = LoadSpec::parse(bad, "b.toml")
            .expect("parses")
            .resolve(2, 1.0, "b.toml")
            .expect_err("rank 5 of 2");
        assert!(e.to_string().contains("b.toml") && e.to_string().contains("rank 5"));
        let e = LoadSpec::parse("[[node]]\nrank = [0]\n", "c.toml").expect_err("unknown field");
        assert!(e.to_string().contains("c.toml"));
    }

    #[test]
    fn single_mode_when_the_run_stays() {
        let mx = Mixture {
            modes: vec![
                ModeStat {
                    value: Stoch::new(1.0, 0.02),
                    share: 0.5,
                    mean_dwell_s: 100.0,
                },
                ModeStat {
                    value: Stoch::new(0.5, 0.02),
                    share: 0.5,
                    mean_dwell_s: 100.0,
                },
            ],
        };
        let (s, how) = avail_slowdown(&mx, Some(1), 2.0).expect("ok");
        assert!((s.mean - 2.0).abs() < 1e-9 && how.contains("single"));
        // A long run switches: the mixture's mean, 1/0.75.
        let (s, how) = avail_slowdown(&mx, Some(1), 2000.0).expect("ok");
        assert!(
            (s.mean - 1.0 / 0.75).abs() < 1e-9 && how.contains("mixture"),
            "{how}"
        );
    }

    #[test]
    fn a_mixtures_range_stays_within_its_modes() {
        // A hog on and off, each for a few seconds: a short run's average
        // may be anything from dedicated to time-shared, never beyond.
        let spec = LoadSpec::parse(
            r#"{"node": [{"ranks": [0], "cpu_avail": {"modes": [
                {"value": {"mean": 1.0, "sd": 0.01}, "share": 0.5, "mean_dwell_s": 1.0},
                {"value": {"mean": 0.5, "sd": 0.01}, "share": 0.5, "mean_dwell_s": 1.0}]}}]}"#,
            "t.json",
        )
        .expect("parses");
        let s = spec.resolve(2, 0.5, "t.json").expect("resolves");
        let (blo, bhi) = s.cpu_bounds[0];
        assert!(
            (blo - 1.0).abs() < 1e-12 && (bhi - 1.0 / 0.48).abs() < 1e-9,
            "{blo} {bhi}"
        );
        let (lo, hi) = s.cpu[0].range2();
        assert!(
            lo < blo || hi > bhi,
            "the unclipped band is wider: {lo} {hi}"
        );
        let (clo, chi) = s.cpu_range2(0);
        assert!(clo >= blo && chi <= bhi && clo < chi, "{clo} {chi}");
        // A rank without load is its own bounds.
        assert_eq!(s.cpu_bounds[1], (1.0, 1.0));
        assert_eq!(s.cpu_range2(1), (1.0, 1.0));
    }
}
