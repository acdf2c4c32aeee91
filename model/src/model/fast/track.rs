//! Which operation each one's clock followed in a compiled replay
//! ([`super::Evaluator::critical`]): the critical path, walked back from
//! the last rank to finish.

use super::Compiled;
use super::replay::NONE;

/// What [`super::Evaluator::critical`] follows in a compiled replay: for each
/// operation, the one its clock came from. [`NoTrack`] for plain
/// evaluations costs nothing.
pub(super) trait Track {
    /// Operation `x` of rank `i` starts from the rank's last one.
    fn begin(&mut self, x: u32, i: usize);
    /// Its clock waited for the message of send `g`.
    fn waited_for_mail(&mut self, x: u32, g: u32);
    /// Its clock waited for send `g`'s completion.
    fn waited_for_done(&mut self, x: u32, g: usize);
    /// Operation `x` posted send `g`.
    fn sent(&mut self, g: usize, x: u32);
    /// Operation `x` completed send `g`.
    fn done(&mut self, g: usize, x: u32);
    /// Rank `i` arrived at a collective in operation `x`.
    fn arrived(&mut self, i: usize, x: u32);
    /// Operation `x` completed a collective whose last arrival was rank
    /// `last`'s: every rank's clock now follows it.
    fn completed(&mut self, x: u32, last: usize);
    /// Operation `x` of rank `i` ended.
    fn end(&mut self, x: u32, i: usize);
}

pub(super) struct NoTrack;

impl Track for NoTrack {
    #[inline(always)]
    fn begin(&mut self, _: u32, _: usize) {}
    #[inline(always)]
    fn waited_for_mail(&mut self, _: u32, _: u32) {}
    #[inline(always)]
    fn waited_for_done(&mut self, _: u32, _: usize) {}
    #[inline(always)]
    fn sent(&mut self, _: usize, _: u32) {}
    #[inline(always)]
    fn done(&mut self, _: usize, _: u32) {}
    #[inline(always)]
    fn arrived(&mut self, _: usize, _: u32) {}
    #[inline(always)]
    fn completed(&mut self, _: u32, _: usize) {}
    #[inline(always)]
    fn end(&mut self, _: u32, _: usize) {}
}

/// Each operation's predecessor on the clock (NONE: the start).
pub(super) struct PathTrack {
    pub(super) pred: Vec<u32>,
    /// Each rank's last operation.
    pub(super) last: Vec<u32>,
    sent: Vec<u32>,
    done: Vec<u32>,
    arrived: Vec<u32>,
    /// A collective completed: every rank's next operation follows it.
    all: u32,
    all_at: Vec<u32>,
}

impl PathTrack {
    pub(super) fn new(c: &Compiled, p: usize) -> PathTrack {
        PathTrack {
            pred: vec![NONE; c.ops.len()],
            last: vec![NONE; p],
            sent: vec![NONE; c.sends],
            done: vec![NONE; c.sends],
            arrived: vec![NONE; p],
            all: NONE,
            all_at: vec![NONE; p],
        }
    }
}

impl Track for PathTrack {
    fn begin(&mut self, x: u32, i: usize) {
        // A rank whose clock a collective set since its last operation
        // goes on from that collective.
        if self.all != NONE && self.all_at[i] != self.all {
            self.all_at[i] = self.all;
            self.last[i] = self.all;
        }
        self.pred[x as usize] = self.last[i];
    }
    fn waited_for_mail(&mut self, x: u32, g: u32) {
        if g != NONE {
            self.pred[x as usize] = self.sent[g as usize];
        }
    }
    fn waited_for_done(&mut self, x: u32, g: usize) {
        self.pred[x as usize] = self.done[g];
    }
    fn sent(&mut self, g: usize, x: u32) {
        self.sent[g] = x;
    }
    fn done(&mut self, g: usize, x: u32) {
        self.done[g] = x;
    }
    fn arrived(&mut self, i: usize, x: u32) {
        self.arrived[i] = x;
    }
    fn completed(&mut self, x: u32, last: usize) {
        // The completing rank arrived last: it goes on from itself.
        if self.arrived[last] != x {
            self.pred[x as usize] = self.arrived[last];
        }
        self.all = x;
    }
    fn end(&mut self, x: u32, i: usize) {
        self.last[i] = x;
        if self.all == x {
            self.all_at[i] = x;
        }
    }
}
