//! The language of competing processes (`--proc` specs): a CPU-bound
//! `hog`, or a `cycle` process that alternates computation and
//! communication (Figueira and Berman's competing applications), and the
//! units its parameters and the core lists take.

use crate::error::{Context, Result, bail, config};

/// One competing process.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Spins forever.
    Hog,
    /// Alternates computation and communication.
    Cycle {
        /// Fraction of the cycle spent communicating, 0..=1.
        comm: f64,
        /// Cycle length in seconds.
        cycle_s: f64,
        /// Messages per burst.
        msgs: u32,
        /// Bytes per message.
        bytes: u64,
    },
}

/// One competing process and the spec it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcSpec {
    pub kind: Kind,
    /// The spec as given (without the repeat count).
    pub text: String,
}

/// The largest message of a cycle process.
const MAX_BYTES: u64 = 256 << 20;

/// Parse one `--proc` value (possibly with a repeat count) into processes.
pub fn parse_proc_spec(spec: &str) -> Result<Vec<ProcSpec>> {
    parse_proc_inner(spec).with_context(|| format!("bad --proc spec {spec:?}"))
}

fn parse_proc_inner(spec: &str) -> Result<Vec<ProcSpec>> {
    let s = spec.trim();
    let (head, params) = match s.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    let (name, count) = match head.split_once('*') {
        Some((n, c)) => {
            let c: usize = c
                .trim()
                .parse()
                .map_err(|_| config(format!("repeat count {c:?} is not a number")))?;
            if c == 0 || c > 4096 {
                bail!("repeat count {c} must be within 1..=4096");
            }
            (n.trim(), c)
        }
        None => (head.trim(), 1),
    };
    let kind = match name {
        "hog" => {
            if params.is_some_and(|p| !p.trim().is_empty()) {
                bail!("`hog` takes no parameters");
            }
            Kind::Hog
        }
        "cycle" => parse_cycle(params.unwrap_or(""))?,
        "" => bail!("empty process kind (expected `hog` or `cycle`)"),
        other => bail!("unknown process kind {other:?} (expected `hog` or `cycle`)"),
    };
    let text = match params {
        Some(p) if !p.trim().is_empty() => format!("{name}:{}", p.trim()),
        _ => name.to_string(),
    };
    Ok(vec![ProcSpec { kind, text }; count])
}

/// A cycle process's `KEY=VALUE,...`: comm (fraction), cycle
/// (duration), msgs and bytes, each at most once, with their defaults.
fn parse_cycle(params: &str) -> Result<Kind> {
    let (mut comm, mut cycle_s, mut msgs, mut bytes) = (None, None, None, None);
    for kv in params.split(',').map(str::trim) {
        if kv.is_empty() {
            continue;
        }
        let Some((k, v)) = kv.split_once('=') else {
            bail!("{kv:?} is not KEY=VALUE");
        };
        let (k, v) = (k.trim(), v.trim());
        let dup = match k {
            "comm" => {
                let c: f64 = v
                    .parse()
                    .map_err(|_| config(format!("comm={v:?} is not a number")))?;
                if !(0.0..=1.0).contains(&c) {
                    bail!("comm={v} must be within 0..1");
                }
                comm.replace(c).is_some()
            }
            "cycle" => {
                let d = parse_duration(v).with_context(|| format!("cycle={v:?}"))?;
                if !(d > 0.0 && d <= 3600.0) {
                    bail!("cycle={v} must be more than 0 and at most 1 hour");
                }
                cycle_s.replace(d).is_some()
            }
            "msgs" => {
                let n: u32 = v
                    .parse()
                    .map_err(|_| config(format!("msgs={v:?} is not a whole number")))?;
                if n == 0 || n > 1_000_000 {
                    bail!("msgs={v} must be within 1..=1000000");
                }
                msgs.replace(n).is_some()
            }
            "bytes" => {
                let b = mheta_base::parse_bytes(v).map_err(|e| config(format!("bytes: {e}")))?;
                if b == 0 || b > MAX_BYTES {
                    bail!("bytes={v} must be within 1 and 256M");
                }
                bytes.replace(b).is_some()
            }
            _ => bail!("unknown key {k:?} (keys: comm, cycle, msgs, bytes)"),
        };
        if dup {
            bail!("key {k:?} given twice");
        }
    }
    Ok(Kind::Cycle {
        comm: comm.unwrap_or(0.5),
        cycle_s: cycle_s.unwrap_or(0.1),
        msgs: msgs.unwrap_or(1),
        bytes: bytes.unwrap_or(1024),
    })
}

/// `100ms`, `0.5s`, `250us` -> seconds. A unit is required.
pub fn parse_duration(v: &str) -> Result<f64> {
    let v = v.trim();
    let (num, mul) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix("us").or_else(|| v.strip_suffix("µs")) {
        (n, 1e-6)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else {
        bail!("give a unit: us, ms or s");
    };
    let x: f64 = num
        .trim()
        .parse()
        .map_err(|_| config(format!("{num:?} is not a number")))?;
    if !x.is_finite() || x < 0.0 {
        bail!("must be a non-negative number");
    }
    Ok(x * mul)
}

/// `0`, `0,1`, `0-3,6` -> cores.
pub fn parse_core_list(v: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim) {
        if part.is_empty() {
            continue;
        }
        let bad = || {
            config(format!(
                "bad --cores {v:?}: {part:?} is not a core or a range A-B"
            ))
        };
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b {
                return Err(bad());
            }
            out.extend(a..=b);
        } else {
            out.push(part.parse().map_err(|_| bad())?);
        }
    }
    if out.is_empty() {
        bail!("bad --cores {v:?}: no core given");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_hog_and_repeat() {
        let v = parse_proc_spec("hog").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].kind, Kind::Hog);
        let v = parse_proc_spec("hog*3").unwrap();
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|p| p.kind == Kind::Hog && p.text == "hog"));
    }

    #[test]
    fn parses_cycle() {
        let v = parse_proc_spec("cycle:comm=0.3,cycle=100ms,msgs=4,bytes=64K").unwrap();
        assert_eq!(
            v[0].kind,
            Kind::Cycle {
                comm: 0.3,
                cycle_s: 0.1,
                msgs: 4,
                bytes: 65536
            }
        );
        let v = parse_proc_spec("cycle*2:bytes=1M,cycle=2s").unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[1].kind,
            Kind::Cycle {
                comm: 0.5,
                cycle_s: 2.0,
                msgs: 1,
                bytes: 1 << 20
            }
        );
        assert_eq!(v[1].text, "cycle:bytes=1M,cycle=2s");
        let v = parse_proc_spec("cycle").unwrap();
        assert!(matches!(v[0].kind, Kind::Cycle { comm, .. } if comm == 0.5));
        let v = parse_proc_spec("cycle:cycle=250us,comm=1").unwrap();
        assert!(
            matches!(v[0].kind, Kind::Cycle { comm, cycle_s, .. } if comm == 1.0 && (cycle_s - 250e-6).abs() < 1e-12)
        );
    }

    #[test]
    fn rejects_bad_specs_naming_them() {
        for bad in [
            "hogg",
            "",
            "hog:comm=0.1",
            "hog*0",
            "hog*x",
            "cycle:comm=1.5",
            "cycle:comm=-0.1",
            "cycle:comm=abc",
            "cycle:cycle=100",
            "cycle:cycle=0ms",
            "cycle:msgs=0",
            "cycle:bytes=0",
            "cycle:bytes=12Q",
            "cycle:bytes=1G",
            "cycle:foo=1",
            "cycle:comm",
            "cycle:comm=0.1,comm=0.2",
        ] {
            let e = parse_proc_spec(bad).unwrap_err();
            let msg = format!("{e:#}");
            assert!(msg.contains(&format!("{bad:?}")), "{bad}: {msg}");
        }
    }

    #[test]
    fn parses_units_and_cores() {
        assert_eq!(parse_duration("100ms").unwrap(), 0.1);
        assert_eq!(parse_duration("2s").unwrap(), 2.0);
        assert!((parse_duration("50us").unwrap() - 50e-6).abs() < 1e-15);
        assert!(parse_duration("5").is_err());
        assert_eq!(parse_core_list("0").unwrap(), vec![0]);
        assert_eq!(parse_core_list("0,1").unwrap(), vec![0, 1]);
        assert_eq!(parse_core_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_core_list("2-1").is_err());
        assert!(parse_core_list("a").is_err());
    }
}
