//! A sense file turned into the model's load description
//! ([`LoadSpec`], what `mheta predict --load` reads): the job's ranks on
//! the sensed cores (`--ranks CORE:RANKS;...`), one node per mapped core
//! with its availability mixture, its current mode, the scheduler's turn
//! there and its bandwidth slowdown.

use super::file::SenseFile;
use mheta_model::slowdown::{LoadSpec, NodeLoad};

/// Parse a rank map `CORE:RANKS;CORE:RANKS`, RANKS a comma list of ranks
/// or ranges `a-b`, e.g. `0:0,1;1:2-3`. Every core must be one of
/// `cores`, and no core or rank may appear twice.
pub fn parse_ranks(s: &str, cores: &[usize]) -> Result<Vec<(usize, Vec<usize>)>, String> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (c, rs) = part
            .split_once(':')
            .ok_or_else(|| format!("{part:?}: expected CORE:RANKS (e.g. 0:0,1)"))?;
        let core: usize = c
            .trim()
            .parse()
            .map_err(|_| format!("{part:?}: core {c:?} is not a number"))?;
        if !cores.contains(&core) {
            return Err(format!(
                "{part:?}: core {core} is not sensed (--cores {cores:?})"
            ));
        }
        if out.iter().any(|o| o.0 == core) {
            return Err(format!("{part:?}: core {core} is listed twice"));
        }
        let mut ranks = Vec::new();
        for r in rs.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            let num = |x: &str| {
                x.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("{part:?}: rank {x:?} is not a number"))
            };
            let (a, b) = match r.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(r)?, num(r)?),
            };
            if b < a {
                return Err(format!("{part:?}: empty range {r:?}"));
            }
            for x in a..=b {
                if !seen.insert(x) {
                    return Err(format!("{part:?}: rank {x} is listed twice"));
                }
                ranks.push(x);
            }
        }
        if ranks.is_empty() {
            return Err(format!("{part:?}: no ranks"));
        }
        out.push((core, ranks));
    }
    if out.is_empty() {
        return Err(format!("{s:?}: no CORE:RANKS entries"));
    }
    Ok(out)
}

/// The load a job with `map` (core → its ranks) runs under, one node per
/// mapped core: its availability mixture and current mode, and the
/// slowdown of its bandwidth pair if measured.
pub fn load_spec(file: &SenseFile, map: &[(usize, Vec<usize>)]) -> LoadSpec {
    let nodes = map
        .iter()
        .map(|(core, ranks)| {
            let c = file.cores.iter().find(|c| c.core == *core);
            let p = file
                .pairs
                .iter()
                .find(|p| p.core == *core && !p.samples.is_empty());
            NodeLoad {
                ranks: ranks.clone(),
                cpu_avail: c
                    .map(|c| c.summary.mixture.clone())
                    .filter(|m| !m.modes.is_empty()),
                current_mode: c.and_then(|c| c.summary.current_mode),
                bw_slowdown: p.map(|p| p.slowdown),
                turn_s: c.and_then(|c| c.turn_s),
                ..NodeLoad::default()
            }
        })
        .collect();
    LoadSpec {
        nodes,
        ..LoadSpec::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_parse_and_reject() {
        let m = parse_ranks("0:0,1;1:2-3", &[0, 1]).expect("valid");
        assert_eq!(m, vec![(0, vec![0, 1]), (1, vec![2, 3])]);
        for bad in ["0:0;0:1", "2:0", "0:0,0", "x:1", "0:a", "0", "", "0:3-1"] {
            assert!(parse_ranks(bad, &[0, 1]).is_err(), "{bad}");
        }
    }
}
