//! The hosts-and-links part of a cluster spec (`[[host]]` tables):
//!
//! ```toml
//! [lab]                     # optional
//! name = "net4"             # default: the file's stem
//! subnet = "10.77.4.0/24"   # optional: the lab's /24 (default: from the name)
//!
//! [[host]]
//! name = "h0"               # a hostname: letters, digits, '-'
//! ranks = 1                 # MPI ranks on this host (default 1), in host order
//! cpu_power = 1.0           # as a [[rank]]'s, for each rank of the host
//! mem_limit_mb = 512        # optional, per rank
//! io_factor = 1.0           # optional, per rank
//! rate = "1gbit"            # optional: the host's link, each direction
//! latency = "1ms"           # optional: one-way latency added on the link
//! to = { h2 = "100mbit" }   # optional: per-destination rates (both directions)
//! ```
//!
//! A pair's rate is the smaller of its two ends' (a host's per-destination
//! rate for the other end, else its link rate; a missing rate is an
//! unshaped link); a pair's added latency is the sum of its ends'.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One emulated host.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    pub name: String,
    #[serde(default = "one_rank")]
    pub ranks: usize,
    pub cpu_power: f64,
    #[serde(default)]
    pub mem_limit_mb: Option<f64>,
    #[serde(default = "one")]
    pub io_factor: f64,
    /// The link's rate, bits per second, in each direction.
    #[serde(default, deserialize_with = "opt_rate")]
    pub rate: Option<f64>,
    /// One-way latency added on the link, seconds.
    #[serde(default, deserialize_with = "opt_secs")]
    pub latency: Option<f64>,
    /// Per-destination rates, bits per second, by host name.
    #[serde(default, deserialize_with = "rate_map")]
    pub to: BTreeMap<String, f64>,
}

impl HostSpec {
    /// The bytes the shaper of this host's link lets through at once
    /// after it has been idle (its token bucket, [`crate::lab::burst_bytes`]);
    /// none for an unshaped link.
    pub fn shaper_burst_bytes(&self) -> Option<f64> {
        self.rate.map(|r| crate::lab::burst_bytes(r) as f64)
    }
}

fn one_rank() -> usize {
    1
}
fn one() -> f64 {
    1.0
}

/// The `[lab]` table.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct LabTable {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub subnet: Option<String>,
}

/// A set of emulated hosts and their links.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Lab {
    /// The lab's name: it prefixes every namespace and names its state.
    pub name: String,
    /// The first three octets of the lab's /24 (`[10, 77, 4]`).
    pub subnet: [u8; 3],
    pub hosts: Vec<HostSpec>,
}

/// A lab spec that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {detail}")]
pub struct SpecError {
    pub path: String,
    pub detail: String,
}

/// Split `t` into its leading number and the unit after it; errors name
/// the `what` and the original text `s`.
fn number_unit<'a>(
    t: &'a str,
    s: &str,
    what: &str,
    example: &str,
) -> Result<(f64, &'a str), String> {
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v = num
        .parse()
        .map_err(|_| format!("{what} {s:?}: expected a number with a unit, as \"{example}\""))?;
    Ok((v, unit.trim()))
}

/// Parse a rate: bits per second as a number, or with a unit (`kbit`,
/// `mbit`, `gbit`, as tc; `/s` and `bps` accepted; `KB`, `MB`, `GB` with
/// a capital B are bytes).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (v, unit) = number_unit(t.strip_suffix("/s").unwrap_or(t), s, "rate", "200mbit")?;
    let k = match unit {
        "" | "bit" | "bps" => 1.0,
        "kbit" | "Kbit" | "kbps" => 1e3,
        "mbit" | "Mbit" | "mbps" | "Mbps" => 1e6,
        "gbit" | "Gbit" | "gbps" | "Gbps" => 1e9,
        "KB" | "kB" => 8e3,
        "MB" => 8e6,
        "GB" => 8e9,
        u => {
            return Err(format!(
                "rate {s:?}: unknown unit {u:?} (use kbit, mbit, gbit)"
            ));
        }
    };
    let r = v * k;
    if !(r.is_finite() && r >= 8e3) {
        return Err(format!("rate {s:?}: must be at least 8kbit"));
    }
    Ok(r)
}

/// Parse a duration: `1ms`, `250us`, `0.5s` (a bare number is seconds).
pub fn parse_secs(s: &str) -> Result<f64, String> {
    let (v, unit) = number_unit(s.trim(), s, "latency", "1ms")?;
    let k = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        u => return Err(format!("latency {s:?}: unknown unit {u:?} (use s, ms, us)")),
    };
    let d = v * k;
    if !(d.is_finite() && (0.0..=1.0).contains(&d)) {
        return Err(format!("latency {s:?}: must be between 0 and 1 s"));
    }
    Ok(d)
}

/// A figure written as a number or as text with a unit.
#[derive(Deserialize)]
#[serde(untagged)]
enum Figure {
    Number(f64),
    Text(String),
}

impl Figure {
    fn parse(self, f: fn(&str) -> Result<f64, String>) -> Result<f64, String> {
        match self {
            Figure::Number(v) => f(&v.to_string()),
            Figure::Text(s) => f(&s),
        }
    }
}

fn opt_rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<Figure>::deserialize(d)?
        .map(|v| v.parse(parse_rate))
        .transpose()
        .map_err(serde::de::Error::custom)
}

fn opt_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<Figure>::deserialize(d)?
        .map(|v| v.parse(parse_secs))
        .transpose()
        .map_err(serde::de::Error::custom)
}

fn rate_map<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    BTreeMap::<String, Figure>::deserialize(d)?
        .into_iter()
        .map(|(k, v)| v.parse(parse_rate).map(|r| (k, r)))
        .collect::<Result<_, _>>()
        .map_err(serde::de::Error::custom)
}

/// FNV-1a of a name: the lab's short tag and default subnet come from it.
pub fn fnv(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 24
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !s.starts_with('-')
}

impl Lab {
    /// Check and complete the `[[host]]` tables of the spec at `path`.
    pub fn new(
        table: Option<LabTable>,
        hosts: Vec<HostSpec>,
        path: &str,
        stem: &str,
    ) -> Result<Lab, SpecError> {
        let bad = |detail: String| SpecError {
            path: path.into(),
            detail,
        };
        let table = table.unwrap_or_default();
        let name = table.name.clone().unwrap_or_else(|| stem.to_string());
        if !valid_name(&name) {
            return Err(bad(format!(
                "lab name {name:?}: use up to 24 letters, digits and '-' (set [lab] name)"
            )));
        }
        if hosts.is_empty() {
            return Err(bad("no [[host]] tables".into()));
        }
        for (i, h) in hosts.iter().enumerate() {
            let hb = |d: String| bad(format!("host {i} ({}): {d}", h.name));
            if !valid_name(&h.name) {
                return Err(hb("name: use up to 24 letters, digits and '-'".into()));
            }
            if hosts[..i].iter().any(|o| o.name == h.name) {
                return Err(hb("the name appears twice".into()));
            }
            if h.ranks == 0 {
                return Err(hb("ranks = 0: a host carries at least one rank".into()));
            }
            if !(h.cpu_power.is_finite() && h.cpu_power > 0.0) {
                return Err(hb(format!("cpu_power = {} must be > 0", h.cpu_power)));
            }
            if !(h.io_factor.is_finite() && h.io_factor > 0.0) {
                return Err(hb(format!("io_factor = {} must be > 0", h.io_factor)));
            }
            if let Some(m) = h.mem_limit_mb
                && !(m.is_finite() && m > 0.0)
            {
                return Err(hb(format!("mem_limit_mb = {m} must be > 0")));
            }
            for dst in h.to.keys() {
                if dst == &h.name || !hosts.iter().any(|o| &o.name == dst) {
                    return Err(hb(format!("to.{dst}: no other host has that name")));
                }
            }
        }
        if hosts.len() > 200 {
            return Err(bad(format!("{} hosts: at most 200", hosts.len())));
        }
        let subnet = match &table.subnet {
            Some(s) => parse_subnet(s).map_err(|d| bad(format!("[lab] subnet {s:?}: {d}")))?,
            None => [10, 77, (fnv(&name) % 200 + 20) as u8],
        };
        Ok(Lab {
            name,
            subnet,
            hosts,
        })
    }

    /// Ranks of the job: the sum of the hosts' ranks.
    pub fn ranks(&self) -> usize {
        self.hosts.iter().map(|h| h.ranks).sum()
    }

    /// The host index of each rank (hosts fill in order, as mpirun's
    /// `--map-by slot` over a hostfile with these slots).
    pub fn rank_hosts(&self) -> Vec<usize> {
        self.hosts
            .iter()
            .enumerate()
            .flat_map(|(i, h)| std::iter::repeat_n(i, h.ranks))
            .collect()
    }

    /// Index of the host named `name`.
    pub fn host_index(&self, name: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.name == name)
    }

    /// The rate host `a` sends to host `b` at, bits per second (`None`:
    /// unshaped).
    pub fn pair_rate(&self, a: usize, b: usize) -> Option<f64> {
        let (ha, hb) = (&self.hosts[a], &self.hosts[b]);
        let out = ha.to.get(&hb.name).copied().or(ha.rate);
        let inn = hb.to.get(&ha.name).copied().or(hb.rate);
        match (out, inn) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    /// One-way latency added between hosts `a` and `b`, seconds.
    pub fn pair_latency(&self, a: usize, b: usize) -> f64 {
        if a == b {
            return 0.0;
        }
        self.hosts[a].latency.unwrap_or(0.0) + self.hosts[b].latency.unwrap_or(0.0)
    }

    /// The lab's short tag (`mh` and 4 hex digits): every interface it
    /// makes starts with it (Linux allows 15 characters).
    pub fn tag(&self) -> String {
        format!("mh{:04x}", fnv(&self.name) & 0xffff)
    }

    /// The bridge's address (the root namespace's side of the lab).
    pub fn bridge_ip(&self) -> String {
        let [a, b, c] = self.subnet;
        format!("{a}.{b}.{c}.1")
    }

    /// Host `i`'s address.
    pub fn host_ip(&self, i: usize) -> String {
        let [a, b, c] = self.subnet;
        format!("{a}.{b}.{c}.{}", 10 + i)
    }

    /// The lab's subnet in CIDR form.
    pub fn cidr(&self) -> String {
        let [a, b, c] = self.subnet;
        format!("{a}.{b}.{c}.0/24")
    }

    /// Host `i`'s network namespace.
    pub fn netns(&self, i: usize) -> String {
        format!("mheta-{}-{}", self.name, self.hosts[i].name)
    }
}

fn parse_subnet(s: &str) -> Result<[u8; 3], String> {
    let (ip, len) = s.split_once('/').unwrap_or((s, "24"));
    if len != "24" {
        return Err("a lab is one /24".into());
    }
    let o: Vec<u8> = ip
        .split('.')
        .map(|x| x.parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| "not an IPv4 address".to_string())?;
    if o.len() != 4 || o[3] != 0 {
        return Err("write it as A.B.C.0/24".into());
    }
    Ok([o[0], o[1], o[2]])
}

/// A host of power 1 with no shaping, for tests.
#[cfg(test)]
pub(crate) fn plain_host(name: &str, ranks: usize) -> HostSpec {
    HostSpec {
        name: name.into(),
        ranks,
        cpu_power: 1.0,
        mem_limit_mb: None,
        io_factor: 1.0,
        rate: None,
        latency: None,
        to: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab(text: &str) -> Result<Lab, SpecError> {
        #[derive(Deserialize)]
        struct F {
            lab: Option<LabTable>,
            host: Vec<HostSpec>,
        }
        let f: F = toml::from_str(text).map_err(|e| SpecError {
            path: "t.toml".into(),
            detail: e.to_string(),
        })?;
        Lab::new(f.lab, f.host, "t.toml", "t")
    }

    #[test]
    fn units() {
        assert_eq!(parse_rate("1gbit").unwrap(), 1e9);
        assert_eq!(parse_rate("200mbit").unwrap(), 200e6);
        assert_eq!(parse_rate("25MB/s").unwrap(), 200e6);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("3parsec").is_err());
        assert!((parse_secs("1ms").unwrap() - 1e-3).abs() < 1e-15);
        assert!((parse_secs("250us").unwrap() - 250e-6).abs() < 1e-15);
        assert!(parse_secs("2s").is_err());
    }

    #[test]
    fn pairs_take_the_slower_end_and_add_latencies() {
        let l = lab(r#"
[[host]]
name = "a"
cpu_power = 1.0
rate = "1gbit"
to = { c = "100mbit" }
[[host]]
name = "b"
cpu_power = 1.0
rate = "200mbit"
latency = "1ms"
[[host]]
name = "c"
cpu_power = 1.0
ranks = 2
latency = "0.5ms"
"#)
        .unwrap();
        assert_eq!(l.pair_rate(0, 1), Some(200e6));
        assert_eq!(l.pair_rate(1, 0), Some(200e6));
        assert_eq!(l.pair_rate(0, 2), Some(100e6));
        // a's per-destination rate shapes both directions at a's end.
        assert_eq!(l.pair_rate(2, 0), Some(100e6));
        assert_eq!(l.pair_rate(1, 2), Some(200e6));
        assert!((l.pair_latency(1, 2) - 1.5e-3).abs() < 1e-12);
        assert_eq!(l.pair_latency(0, 0), 0.0);
        assert_eq!(l.rank_hosts(), vec![0, 1, 2, 2]);
        assert_eq!(l.ranks(), 4);
        assert!(l.tag().len() == 6 && l.tag().starts_with("mh"));
    }

    #[test]
    fn bad_labs_name_the_culprit() {
        let e = lab("[[host]]\nname = \"a\"\ncpu_power = 1.0\nto = { z = \"1gbit\" }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.toml") && e.contains("to.z"), "{e}");
        let e = lab(
            "[[host]]\nname = \"a\"\ncpu_power = 1.0\n[[host]]\nname = \"a\"\ncpu_power = 1.0\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("host 1 (a)") && e.contains("twice"), "{e}");
        let e = lab("[[host]]\nname = \"a b\"\ncpu_power = 1.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("host 0"), "{e}");
        let e = lab("[lab]\nsubnet = \"10.1.2.3/16\"\n[[host]]\nname = \"a\"\ncpu_power = 1.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("subnet"), "{e}");
        let e = lab("[[host]]\nname = \"a\"\ncpu_power = 1.0\nrate = \"9 furlongs\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("furlongs"), "{e}");
    }
}
