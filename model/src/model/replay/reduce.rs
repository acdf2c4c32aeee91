//! The replay's collectives ([`Replay::reduce`]): every rank waits for
//! the last to arrive, then leaves as the collective's messages say
//! (MHETA eq. 3 over each pair), plus what the recorded iteration spent
//! there beyond that.

use super::{LogEvent, Replay};
use crate::model::{Shape, Step, collective};

impl Replay<'_> {
    /// A collective over all ranks: each waits for the last to arrive; an
    /// all-reduce's ranks then leave as its messages over each pair say
    /// ([`Replay::exits`]), every other collective's together after one
    /// cost; both plus what the recorded iteration spent there beyond
    /// that ([`Replay::measured_collective`]). False while some rank is
    /// not there yet.
    pub(super) fn reduce(&mut self, i: usize, bytes: f64, shape: Shape) -> bool {
        if self.at_reduce[i].is_none() {
            self.at_reduce[i] = Some(self.clock[i]);
            self.n_at_reduce += 1;
            if self.n_at_reduce < self.p
                && let Some(l) = &mut self.log
            {
                l.events.push(LogEvent::Arrive(i as u32));
            }
        }
        if self.n_at_reduce < self.p {
            return false;
        }
        self.n_at_reduce = 0;
        let arrive: Vec<f64> = self.at_reduce.iter().map(|a| a.unwrap_or(0.0)).collect();
        let entry = arrive.iter().fold(0.0f64, |a, &b| a.max(b));
        let exits = self.exits(shape, &arrive, bytes, entry);
        let extra = if self.calib.is_some() {
            let c = self.measured_collective(entry, &exits);
            if let Some(cal) = self.calib.as_deref_mut() {
                cal.collectives.push(c);
            }
            c
        } else {
            let costs = &self.m.collective_s;
            costs
                .get(self.nth_collective % costs.len().max(1))
                .copied()
                .unwrap_or(0.0)
        };
        self.nth_collective += 1;
        for j in 0..self.p {
            let done = (exits[j] + extra).max(entry);
            self.at_reduce[j] = None;
            self.out[j].wait_s += entry - arrive[j];
            self.out[j].overhead_s += done - entry;
            self.clock[j] = done;
            self.after_wait(j, arrive[j], done - arrive[j]);
            self.quiet[j] = self.clock[j];
            if j != i {
                self.pc[j] += 1;
            }
        }
        true
    }

    /// Each rank's exit from a collective of `shape` whose ranks arrived
    /// at `arrive` (the last at `entry`), before what the recorded
    /// iteration adds: an all-reduce's from its messages, each priced by
    /// its pair's o_s, transfer (MHETA eq. 3, under the link's slowdown)
    /// and o_r; any other's the last arrival plus the profile's mean
    /// pairwise figures for ⌈log₂P⌉ exchanges.
    fn exits(&self, shape: Shape, arrive: &[f64], bytes: f64, entry: f64) -> Vec<f64> {
        // Every rank's message: the collective's bytes, or for an
        // all-gather its own block.
        let (recorded, block) = match shape {
            Shape::Linear | Shape::Gather => self.blocks(),
            _ => (Vec::new(), Vec::new()),
        };
        collective::priced_exits(self.m, shape, arrive, bytes, entry, (&block, &recorded))
    }

    /// Each rank's block in the all-gather every rank's program is at, as
    /// recorded and under the distribution replayed
    /// ([`collective::Blocks`]).
    fn blocks(&self) -> (Vec<f64>, Vec<f64>) {
        let recorded: Vec<f64> = (0..self.p)
            .map(|j| match self.steps[j].get(self.at(j)) {
                Some(Step::Reduce { bytes, .. }) => *bytes,
                _ => 0.0,
            })
            .collect();
        let mut out = Vec::new();
        let b = collective::Blocks::new(self.m, recorded);
        b.fill(self.d, &mut out);
        (b.recorded().to_vec(), out)
    }

    /// What a collective cost in the recorded iteration beyond its
    /// messages: each rank's time inside it past the last arrival, less
    /// its exit from `exits` past that arrival, averaged over the ranks.
    ///
    /// Wake-ups and progress make it positive. It is negative where the
    /// pairs' figures overprice the collective's messages (a far pair's
    /// o_r measured by the microbench carries part of the wire's time),
    /// and it is then the mean over the ranks whose recorded time in the
    /// collective is at least half their replayed exit (`SEEN`): a rank
    /// that was in it for less (its completion found after overlapped
    /// work, or a synthetic trace) did not time it. With no such rank
    /// the pairs' figures stand.
    /// (Why a negative residual is kept: docs/design/model.md.)
    ///
    /// The last to arrive waited for no one: its time there is the
    /// collective's. Another rank can leave later, by its messages and by
    /// the wake-ups of its rounds, but not by more than 4 sleeps a round
    /// past the later of its messages and the last arriver's time: beyond
    /// that the replay got its arrival wrong, and that error is not the
    /// collective's cost. The replay's last arrivers come from median
    /// iterations; in each recorded iteration the last arriver can be
    /// another rank ([`Model::last_arrival_s`]).
    fn measured_collective(&self, entry: f64, exits: &[f64]) -> f64 {
        const SEEN: f64 = 0.5;
        let (m, p) = (self.m, self.p);
        // Every rank's `pc` is at this collective.
        let took = |j: usize| match self.steps[j].get(self.at(j)) {
            Some(Step::Reduce { took, .. }) => *took,
            _ => 0.0,
        };
        let last = (0..p)
            .filter(|&j| self.at_reduce[j].is_none_or(|a| a >= entry))
            .map(took)
            .fold(f64::INFINITY, f64::min)
            .min(
                m.last_arrival_s
                    .get(self.nth_collective)
                    .copied()
                    .unwrap_or(f64::INFINITY),
            );
        let rounds = (p as f64).log2().ceil().max(1.0);
        // Per rank: its recorded time inside past its wait, and its exit.
        let (inside, own): (Vec<f64>, Vec<f64>) = (0..p)
            .map(|j| {
                let waited = entry - self.at_reduce[j].unwrap_or(entry);
                let own = exits[j] - entry;
                let cap = last.max(own) + 4.0 * rounds * m.programs[j].sleep_s;
                ((took(j) - waited).clamp(0.0, cap), own)
            })
            .unzip();
        let past = inside.iter().zip(&own).map(|(t, o)| t - o).sum::<f64>() / p as f64;
        if past >= 0.0 {
            return past;
        }
        // Below the messages: from the ranks that timed it only.
        let seen: Vec<f64> = (0..p)
            .filter(|&j| took(j) >= SEEN * own[j])
            .map(|j| inside[j] - own[j])
            .collect();
        if seen.is_empty() {
            0.0
        } else {
            (seen.iter().sum::<f64>() / seen.len() as f64).min(0.0)
        }
    }
}
