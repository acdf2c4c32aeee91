//! The pair figures host by host: which ranks share a host, the link
//! matrices (the median over the rank pairs between two hosts) and the
//! tables the tools print of them beside the cluster spec's links.

use crate::format::{ClusterProfile, PairCost, SpecLink};
use mheta_base::median;

impl ClusterProfile {
    /// The hosts the ranks sit on, each once, in the order of their first
    /// rank ([`ClusterProfile::hosts`]), with their ranks.
    pub fn host_ranks(&self) -> Vec<(String, Vec<u32>)> {
        let mut out: Vec<(String, Vec<u32>)> = Vec::new();
        for (r, h) in self.hosts.iter().enumerate() {
            match out.iter_mut().find(|(name, _)| name == h) {
                Some((_, ranks)) => ranks.push(r as u32),
                None => out.push((h.clone(), vec![r as u32])),
            }
        }
        out
    }

    /// A pair figure host by host: cell `[i][j]` is the median of `f`
    /// over the measured pairs from a rank on host `i` to a rank on host
    /// `j` ([`ClusterProfile::host_ranks`] order; the mean of the middle
    /// two for an even count), `None` where there is no such pair (the
    /// diagonal of a host with one rank).
    pub fn link_matrix(&self, f: impl Fn(&PairCost) -> f64) -> Vec<Vec<Option<f64>>> {
        let hosts = self.host_ranks();
        let index = |r: u32| {
            self.hosts
                .get(r as usize)
                .and_then(|h| hosts.iter().position(|(name, _)| name == h))
        };
        let n = hosts.len();
        let mut cells: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n]; n];
        for c in &self.pairs {
            if let (Some(i), Some(j)) = (index(c.src), index(c.dst)) {
                let v = f(c);
                if v.is_finite() {
                    cells[i][j].push(v);
                }
            }
        }
        cells
            .into_iter()
            .map(|row| row.into_iter().map(|mut v| median(&mut v)).collect())
            .collect()
    }

    /// A figure of the spec's links, host by host (None where the spec
    /// has no such link or `f` no figure).
    fn spec_matrix(
        &self,
        hosts: &[(String, Vec<u32>)],
        f: &dyn Fn(&SpecLink) -> Option<f64>,
    ) -> Vec<Vec<Option<f64>>> {
        hosts
            .iter()
            .map(|(a, _)| {
                hosts
                    .iter()
                    .map(|(b, _)| {
                        self.links
                            .iter()
                            .find(|l| &l.src == a && &l.dst == b)
                            .and_then(f)
                    })
                    .collect()
            })
            .collect()
    }

    /// The link matrices as the tools print them, when the ranks sit on
    /// more than one host (empty otherwise): the streaming bandwidth at
    /// 1 MiB (MB/s) and the 8-byte one-way time (median, µs), rows the
    /// source host and columns the destination, each cell the median over
    /// the rank pairs between the two hosts ([`ClusterProfile::link_matrix`]).
    pub fn link_tables(&self) -> String {
        use std::fmt::Write as _;
        let hosts = self.host_ranks();
        if hosts.len() < 2 || self.hosts.len() != self.np as usize {
            return String::new();
        }
        let mut out = String::new();
        let ranks: Vec<String> = hosts
            .iter()
            .map(|(h, r)| {
                let r: Vec<String> = r.iter().map(u32::to_string).collect();
                format!("{h}: {}", r.join(","))
            })
            .collect();
        let _ = writeln!(out, "# Hosts (ranks): {}", ranks.join("; "));
        let table = |out: &mut String, title: &str, m: Vec<Vec<Option<f64>>>| {
            link_table(out, &hosts, title, &m)
        };
        table(
            &mut out,
            "bandwidth at 1 MiB (MB/s)",
            self.link_matrix(|c| c.bandwidth_bps / 1e6),
        );
        table(
            &mut out,
            "latency, 8 B one-way (us)",
            self.link_matrix(|c| c.one_way_small.p50 * 1e6),
        );
        if !self.links.is_empty() {
            let spec = |f: &dyn Fn(&SpecLink) -> Option<f64>| self.spec_matrix(&hosts, f);
            table(
                &mut out,
                "the spec's rate (MB/s = Mbit/s / 8; '-' unshaped)",
                spec(&|l| l.rate_bps.map(|r| r / 8e6)),
            );
            let measured = self.link_matrix(|c| c.bandwidth_bps);
            let nominal = spec(&|l| l.rate_bps);
            let ratio = measured
                .iter()
                .zip(&nominal)
                .map(|(m, n)| {
                    m.iter()
                        .zip(n)
                        .map(|(m, n)| Some((*m)? / (*n)? * 8.0))
                        .collect()
                })
                .collect();
            table(&mut out, "measured bandwidth over the spec's rate", ratio);
            table(
                &mut out,
                "the spec's added one-way latency (us)",
                spec(&|l| (l.src != l.dst).then_some(l.added_latency_s * 1e6)),
            );
        }
        out
    }
}

/// One link matrix `m` over `hosts` under `title`: rows the source
/// host, columns the destination, '-' where a cell has no figure.
fn link_table(out: &mut String, hosts: &[(String, Vec<u32>)], title: &str, m: &[Vec<Option<f64>>]) {
    use std::fmt::Write as _;
    let lw = hosts.iter().map(|h| h.0.len()).max().unwrap_or(0).max(6);
    let cw = (lw + 2).max(10);
    let _ = writeln!(
        out,
        "# Link matrix: {title} (rows: source host, columns: destination; median over the rank pairs between the hosts)"
    );
    let _ = write!(out, "{:<lw$}", "#");
    for (h, _) in hosts {
        let _ = write!(out, "{h:>cw$}");
    }
    let _ = writeln!(out);
    for (i, (h, _)) in hosts.iter().enumerate() {
        let _ = write!(out, "{h:<lw$}");
        for cell in &m[i] {
            match cell {
                Some(v) => {
                    let _ = write!(out, "{v:>cw$.2}");
                }
                None => {
                    let _ = write!(out, "{:>cw$}", "-");
                }
            }
        }
        let _ = writeln!(out);
    }
}

#[cfg(test)]
mod tests {
    use crate::format::tests::two;
    use crate::format::{ClusterProfile, PairCost, SpecLink};
    use crate::samples::SampleStats;

    #[test]
    fn the_spec_links_print_beside_the_measured_ones() {
        let mut p = two();
        assert!(!p.link_tables().contains("spec"));
        p.links = vec![
            SpecLink {
                src: "a".into(),
                dst: "b".into(),
                rate_bps: Some(200e6),
                added_latency_s: 1e-3,
            },
            SpecLink {
                src: "b".into(),
                dst: "a".into(),
                rate_bps: Some(200e6),
                added_latency_s: 1e-3,
            },
        ];
        let t = p.link_tables();
        assert!(t.contains("the spec's rate"), "{t}");
        // 200 Mbit/s is 25 MB/s; the latency is 1000 us.
        assert!(t.contains("25.00") && t.contains("1000.00"), "{t}");
        let back: ClusterProfile = serde_json::from_str(&p.to_json()).unwrap();
        assert_eq!(back.links, p.links);
    }

    #[test]
    fn the_link_matrix_takes_the_median_over_the_rank_pairs_between_hosts() {
        // Ranks 0, 2 on host a; 1, 3 on host b; 4 alone on host c.
        let hosts: Vec<String> = ["a", "b", "a", "b", "c"].map(String::from).to_vec();
        let mut p = ClusterProfile::new(5, hosts, "test");
        let host = |r: u32| ["a", "b", "a", "b", "c"][r as usize];
        for s in 0..5u32 {
            for d in 0..5u32 {
                if s == d {
                    continue;
                }
                let mut c = PairCost::logp(s, d, 1e-6, 1e-10, 1e-7, 1e-7);
                // Bandwidth (MB/s) by host pair, the rank pair's numbers
                // spread around it; a-a 1000, a-b 100, with c 25.
                let base = match (host(s), host(d)) {
                    ("a", "a") | ("b", "b") => 1000.0,
                    ("c", _) | (_, "c") => 25.0,
                    _ => 100.0,
                };
                c.bandwidth_bps = (base + (s + d) as f64) * 1e6;
                c.one_way_small = SampleStats::point(if base == 25.0 { 80e-6 } else { 20e-6 });
                p.pairs.push(c);
            }
        }
        p.validate().unwrap();
        assert_eq!(
            p.host_ranks(),
            vec![
                ("a".to_string(), vec![0, 2]),
                ("b".to_string(), vec![1, 3]),
                ("c".to_string(), vec![4])
            ]
        );
        let m = p.link_matrix(|c| c.bandwidth_bps / 1e6);
        // a -> a: pairs 0->2 and 2->0, both 1002: 1002.
        assert_eq!(m[0][0], Some(1002.0));
        // a -> b: 0->1 101, 0->3 103, 2->1 103, 2->3 105: median 103.
        assert_eq!(m[0][1], Some(103.0));
        // c -> a: 4->0 29, 4->2 31: the mean of the middle two, 30.
        assert_eq!(m[2][0], Some(30.0));
        // c has one rank: no pair within it.
        assert_eq!(m[2][2], None);
        let text = p.link_tables();
        assert!(
            text.contains("# Hosts (ranks): a: 0,2; b: 1,3; c: 4"),
            "{text}"
        );
        assert!(text.contains("bandwidth at 1 MiB (MB/s)") && text.contains("8 B one-way"));
        let row_c = text
            .lines()
            .filter(|l| l.starts_with('c'))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .collect::<Vec<_>>();
        assert_eq!(row_c[0], vec!["c", "30.00", "31.00", "-"], "{text}");
        assert_eq!(row_c[1], vec!["c", "80.00", "80.00", "-"], "{text}");
        // One host: no link tables.
        let one = ClusterProfile::new(2, vec!["h".into(), "h".into()], "t");
        assert_eq!(one.link_tables(), "");
    }
}
