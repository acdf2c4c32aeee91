//! The options of a microbenchmark session, shared by `mheta-microbench`
//! (which measures) and `mheta bench` (which launches it and passes them
//! on), so that both take the same flags with the same help.

use std::ffi::OsString;
use std::path::PathBuf;

/// What to measure and where to write it.
#[derive(clap::Args, Debug, Clone)]
pub struct Measure {
    /// Fewer sizes and repetitions. Pairs are measured one at a time, so
    /// the time grows with their count and their links: 4 ranks on one host
    /// (12 pairs) take 15-18 s, 4 hosts across 1 Gbit/s and 200 Mbit/s
    /// links about 100 s (8.5 s a pair).
    #[arg(long)]
    pub quick: bool,
    /// Where to write the cluster profile (JSON).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "PROFILE.json",
        required_unless_present = "osu_only"
    )]
    pub output: Option<PathBuf>,
    /// Print the profile as JSON on stdout instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Also run OSU's osu_latency and osu_bw loops (pair 0 -> 1) and print
    /// them in OSU's format, in the same processes after the rest; for
    /// figures to set beside OSU's own, `--osu-only` runs each test alone.
    #[arg(long)]
    pub osu_compat: bool,
    /// Run only OSU's osu_latency and osu_bw loops (pair 0 -> 1), in a
    /// process that measures nothing else, as OSU's own programs do; print
    /// them in OSU's format and write no profile.
    #[arg(long, conflicts_with_all = ["json", "osu_compat", "output"])]
    pub osu_only: bool,
    /// With `--osu-only`, run only this one of OSU's tests. OSU's
    /// osu_latency and osu_bw are two programs, each measured in a fresh
    /// process; run after the latency loops in the same one, the
    /// bandwidth loops read 2-17% faster than osu_bw at 64 KiB-4 MiB on
    /// Open MPI (docs/design/microbench.md). `mheta bench --osu-only`
    /// therefore launches the two tests one after the other, each alone;
    /// `mheta-microbench --osu-only` without this runs both in its one
    /// process.
    #[arg(long, value_enum, value_name = "TEST")]
    pub osu_test: Option<OsuTest>,
    /// Directory whose disk is measured (default: $TMPDIR or /tmp).
    #[arg(long, value_name = "DIR")]
    pub disk_dir: Option<PathBuf>,
    /// Do not measure disks.
    #[arg(long)]
    pub no_disk: bool,
    /// Do not measure what a byte costs by the time since its last sweep
    /// (`reuse_by`, about 6 s a machine with `--quick`, 15 s without).
    /// A model given that curve prices a rank's rows by the length of its
    /// iterations and the age and size of the arrays each stage sweeps
    /// (the reuse term, `model/src/reuse.rs`): on a machine whose caches
    /// others share, rows recorded in long iterations cost less in short
    /// ones (docs/design/fidelity.md). Without it the model prices a row
    /// as recorded, as the MHETA paper does.
    #[arg(long)]
    pub no_reuse: bool,
    /// Largest message of the sweep and of the OSU loops, as OSU's `-m`
    /// (bytes, or with K, M, G: `128M`; 64K to 1G). Default 4M, OSU's.
    /// A redistribution moves tens of megabytes of rows that are not in
    /// the cache; past the last-level cache a pair streams slower than at
    /// 1 MiB, and this measures by how much.
    #[arg(long, value_name = "SIZE", value_parser = crate::parse_max_size)]
    pub max_size: Option<u64>,
}

/// One of OSU's point-to-point tests (`--osu-test`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsuTest {
    /// osu_latency's loops.
    Latency,
    /// osu_bw's loops.
    Bandwidth,
}

impl OsuTest {
    /// Its word on the command line.
    pub fn word(self) -> &'static str {
        match self {
            OsuTest::Latency => "latency",
            OsuTest::Bandwidth => "bandwidth",
        }
    }
}

impl Measure {
    /// What clap does not check: `--osu-test` only with `--osu-only`.
    pub fn check(&self) -> Result<(), String> {
        match self.osu_test {
            Some(t) if !self.osu_only => {
                Err(format!("--osu-test {}: only with --osu-only", t.word()))
            }
            _ => Ok(()),
        }
    }

    /// The same options as command-line words, for the microbench that
    /// `mheta bench` launches.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut v: Vec<OsString> = [
            (self.quick, "--quick"),
            (self.json, "--json"),
            (self.osu_compat, "--osu-compat"),
            (self.osu_only, "--osu-only"),
            (self.no_disk, "--no-disk"),
            (self.no_reuse, "--no-reuse"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, flag)| flag.into())
        .collect();
        if let Some(d) = &self.disk_dir {
            v.extend(["--disk-dir".into(), d.into()]);
        }
        if let Some(m) = self.max_size {
            v.extend(["--max-size".into(), m.to_string().into()]);
        }
        if let Some(out) = &self.output {
            v.extend(["-o".into(), out.into()]);
        }
        if let Some(t) = self.osu_test {
            v.extend(["--osu-test".into(), t.word().into()]);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::Measure;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        m: Measure,
    }

    /// What `mheta bench` passes on parses back to the same options.
    #[test]
    fn to_args_round_trips() {
        let words = [
            "x",
            "--quick",
            "--no-disk",
            "--no-reuse",
            "--max-size",
            "8M",
            "-o",
            "p.json",
        ];
        let a = Cli::try_parse_from(words).unwrap().m;
        let again = std::iter::once("x".into()).chain(a.to_args());
        let b = Cli::try_parse_from(again).unwrap().m;
        assert!(b.quick && b.no_disk && b.no_reuse && !b.json && !b.osu_only);
        assert_eq!(b.max_size, Some(8 << 20));
        assert_eq!(b.output.as_deref(), Some(std::path::Path::new("p.json")));
        assert!(Cli::try_parse_from(["x", "--osu-only", "-o", "p.json"]).is_err());
        let a = Cli::try_parse_from(["x", "--osu-only", "--osu-test", "bandwidth"])
            .unwrap()
            .m;
        let again = std::iter::once("x".into()).chain(a.to_args());
        let b = Cli::try_parse_from(again).unwrap().m;
        assert!(b.osu_only && b.osu_test == Some(super::OsuTest::Bandwidth));
        assert!(b.check().is_ok());
        // Only with --osu-only.
        let c = Cli::try_parse_from(["x", "-o", "p.json", "--osu-test", "latency"])
            .unwrap()
            .m;
        assert!(c.check().unwrap_err().contains("--osu-test latency"));
        assert!(Cli::try_parse_from(["x", "--quick"]).is_err());
    }
}
