//! A rank's summary: what the model reads of its trace, made on the rank
//! itself, so that a job's planner receives P summaries instead of P
//! traces (`mheta-runtime`'s gather). The model takes from a trace only
//! its program ([`Program::from_trace`]: the steps with each compute gap
//! the median over the recorded iterations, the per-iteration figures the
//! calibration and the median-iteration check read, the file calls) and
//! its file names, so a model built from summaries is the model built
//! from the traces, bit for bit. What a summary drops: every event that
//! is not a step (a test that found nothing done is a wait, and only its
//! gaps' statistics stay), the events' times and every recorded
//! iteration beyond the per-step figures.
//!
//! The bytes: [`MAGIC`], the version ([`SUMMARY_VERSION`], little-endian
//! u32), then the bincode of [`RankSummary`] with variable-length
//! integers (`bincode::DefaultOptions`). Only processes of one build
//! exchange them, within one job.

use crate::model::Program;
use bincode::Options;
use mheta_trace::RankTrace;
use serde::{Deserialize, Serialize};

/// The first bytes of an encoded summary.
pub const MAGIC: [u8; 8] = *b"MHETASUM";
/// The encoding's version.
pub const SUMMARY_VERSION: u32 = 1;

/// What the model reads of one rank's trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    pub rank: u32,
    /// The rank's program ([`Program::from_trace`]).
    pub program: Program,
    /// The files the rank opened, by the trace's file index.
    pub files: Vec<String>,
}

impl RankSummary {
    pub fn from_trace(t: &RankTrace) -> RankSummary {
        RankSummary {
            rank: t.rank,
            program: Program::from_trace(t),
            files: t.files.clone(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + 48 * self.program.steps.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&SUMMARY_VERSION.to_le_bytes());
        // Serialising plain owned data into a Vec cannot fail.
        bincode::DefaultOptions::new()
            .serialize_into(&mut out, self)
            .expect("bincode into Vec");
        out
    }

    /// A summary from [`RankSummary::encode`]'s bytes; the error names
    /// what is wrong with them.
    pub fn decode(bytes: &[u8]) -> Result<RankSummary, String> {
        if bytes.len() < 12 || bytes[..8] != MAGIC {
            return Err("not a rank summary (bad magic)".into());
        }
        let v = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        if v != SUMMARY_VERSION {
            return Err(format!(
                "rank summary version {v}, this build reads {SUMMARY_VERSION}"
            ));
        }
        bincode::DefaultOptions::new()
            .deserialize(&bytes[12..])
            .map_err(|e| format!("rank summary: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{app, hetero_cluster, pipeline_trace, profile};
    use crate::{Dist, Model};

    /// Encoded and decoded, a summary is what it was; a model built
    /// from summaries predicts what the model built from the traces does.
    #[test]
    fn a_model_from_summaries_is_the_model_from_traces() {
        let (io, io_decl) = hetero_cluster(7, 6, 40);
        let pipe: Vec<_> = (0..5)
            .map(|r| pipeline_trace(r, 5, 4, 250_000 * (r as u64 + 1), 512))
            .collect();
        for (traces, decl) in [(io, io_decl), (pipe, app(vec![40; 5]))] {
            let p = traces.len() as u32;
            let sums: Vec<RankSummary> = traces
                .iter()
                .map(|t| RankSummary::decode(&RankSummary::from_trace(t).encode()).expect("decode"))
                .collect();
            // By their bytes: a program holds NaN for what was not measured.
            for (s, t) in sums.iter().zip(&traces) {
                assert_eq!(s.encode(), RankSummary::from_trace(t).encode());
            }
            let from_traces = Model::new(&traces, decl.clone(), &profile(p)).expect("model");
            let from_sums = Model::from_summaries(sums, decl.clone(), &profile(p)).expect("model");
            let mut d = decl.dist.clone();
            d[0] += 3;
            d[1] -= 3;
            for d in [Dist(decl.dist.clone()), Dist(d)] {
                assert_eq!(
                    from_sums.predict(&d).expect("predict"),
                    from_traces.predict(&d).expect("predict")
                );
            }
        }
    }

    #[test]
    fn summaries_out_of_rank_order_are_refused() {
        let traces: Vec<_> = (0..3).map(|r| pipeline_trace(r, 3, 2, 1000, 64)).collect();
        let mut sums: Vec<_> = traces.iter().map(RankSummary::from_trace).collect();
        sums.swap(1, 2);
        let e = Model::from_summaries(sums, app(vec![8; 3]), &profile(3)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "summary 1 is rank 2's; the summaries must come in rank order"
        );
    }

    #[test]
    fn bad_bytes_are_named() {
        assert!(
            RankSummary::decode(b"MHETATRC\x03\0\0\0")
                .unwrap_err()
                .contains("magic")
        );
        let mut b = RankSummary::from_trace(&pipeline_trace(0, 2, 1, 1, 1)).encode();
        b[8] = 9;
        assert!(RankSummary::decode(&b).unwrap_err().contains("version 9"));
        b[8] = 1;
        let mut longer = b.clone();
        longer.push(0);
        assert!(
            RankSummary::decode(&longer)
                .unwrap_err()
                .starts_with("rank summary:")
        );
        b.truncate(b.len() - 3);
        assert!(
            RankSummary::decode(&b)
                .unwrap_err()
                .starts_with("rank summary:")
        );
    }
}
