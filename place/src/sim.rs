//! An event-driven simulator of the task farm (Shao et al. section 5
//! uses one to predict a placement's time from the model's inputs).
//!
//! It replays the farm's protocol: at start-up the master sends
//! `window` tasks to each worker; a worker computes its tasks in order
//! (T_SlaveCPU / Avail_CPU each) and sends each result back; the master
//! takes results one at a time in arrival order, sends that worker its
//! next task, then spends T_MasterCPU / Avail_CPU on the result. The run
//! ends when the last result is absorbed, so the tail (workers idle
//! while the last tasks finish) is in the time. Transfers take their
//! path's latency plus their bytes at the path's rate; results into the
//! master share its link max-min fairly (each also capped by its own
//! worker's link and pair rate), the way TCP flows share a tbf. A result
//! above the MPI eager limit ([`EAGER_LIMIT_BYTES`]) goes
//! by rendezvous instead: its data moves only once the master posts the
//! receive, so the master takes such results one at a time (a handshake
//! round trip, then the bytes at the pair's rate, then the absorb) and
//! the worker stays blocked in its send until its data is in. Events
//! live in a binary heap; the shared link's transfers are a fluid whose
//! next completion is compared with the heap's top.

use crate::rates::PAYLOAD_FRACTION;
use crate::{Inputs, PlaceError};
use mheta_base::Total;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Messages above this many bytes go by rendezvous: Open MPI's TCP
/// transport's default eager limit (`ompi_info --all`: btl_tcp_eager_limit).
pub const EAGER_LIMIT_BYTES: f64 = 65536.0;

/// A simulated run.
#[derive(Clone, Debug, PartialEq)]
pub struct SimRun {
    /// Start-up plus the farm's time, seconds.
    pub elapsed_s: f64,
    /// Tasks each worker computed, in the order of the workers given.
    pub tasks: Vec<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A request reached worker `w`.
    Request(usize),
    /// Worker `w` finished computing a task.
    Computed(usize),
    /// A result from worker `w` reached the master.
    Arrived(usize),
    /// Worker `w`'s rendezvous request for a result reached the master.
    Rts(usize),
    /// The master has received worker `w`'s rendezvous result.
    Received(usize),
    /// The master finished absorbing a result.
    Absorbed,
}

/// The farm's state during a simulation.
struct Farm<'a> {
    inputs: &'a Inputs,
    m: usize,
    ws: &'a [usize],
    heap: BinaryHeap<Reverse<(Total, u64, Ev)>>,
    seq: u64,
    now: f64,
    /// Tasks not yet sent.
    unsent: u64,
    absorbed: u64,
    /// Per worker: tasks waiting, busy computing, tasks done.
    queued: Vec<u32>,
    busy: Vec<bool>,
    done: Vec<u64>,
    /// Results waiting for the master, and whether it is busy.
    inbox: VecDeque<usize>,
    master_busy: bool,
    /// Results in flight on the master's link: (worker, bytes left).
    flows: Vec<(usize, f64)>,
}

/// Simulate the farm with master `m` and workers `ws` (host indices).
pub fn simulate(inputs: &Inputs, m: usize, ws: &[usize]) -> Result<SimRun, PlaceError> {
    if ws.is_empty() || ws.contains(&m) || ws.iter().any(|&w| w >= inputs.hosts.len()) {
        return Err(PlaceError::Input(format!(
            "workers {ws:?} must be other hosts than the master {m}, at least one, each < {}",
            inputs.hosts.len()
        )));
    }
    let mut f = Farm {
        inputs,
        m,
        ws,
        heap: BinaryHeap::new(),
        seq: 0,
        now: inputs.startup_s,
        unsent: inputs.tasks,
        absorbed: 0,
        queued: vec![0; ws.len()],
        busy: vec![false; ws.len()],
        done: vec![0; ws.len()],
        inbox: VecDeque::new(),
        master_busy: false,
        flows: Vec::new(),
    };
    for _ in 0..inputs.window {
        for w in 0..ws.len() {
            f.send(w);
        }
    }
    f.run();
    Ok(SimRun {
        elapsed_s: f.now,
        tasks: f.done,
    })
}

impl Farm<'_> {
    fn push(&mut self, at: f64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((Total(at), self.seq, ev)));
    }

    /// Bytes per second host `a` sends to host `b` at, alone.
    fn rate(&self, a: usize, b: usize) -> f64 {
        let (ha, hb) = (&self.inputs.hosts[a], &self.inputs.hosts[b]);
        let u = self.inputs.unshaped_bps;
        let r = [
            ha.link_bps,
            hb.link_bps,
            ha.to.get(&hb.name).copied(),
            hb.to.get(&ha.name).copied(),
        ]
        .into_iter()
        .flatten()
        .fold(u, f64::min);
        r * PAYLOAD_FRACTION / 8.0
    }

    fn latency(&self, a: usize, b: usize) -> f64 {
        self.inputs.hosts[a].latency_s + self.inputs.hosts[b].latency_s
    }

    /// Send worker `w` a task if any is left.
    fn send(&mut self, w: usize) {
        if self.unsent == 0 {
            return;
        }
        self.unsent -= 1;
        let h = self.ws[w];
        let at =
            self.now + self.latency(self.m, h) + self.inputs.request_bytes / self.rate(self.m, h);
        self.push(at, Ev::Request(w));
    }

    fn start_compute(&mut self, w: usize) {
        let h = &self.inputs.hosts[self.ws[w]];
        self.busy[w] = true;
        self.queued[w] -= 1;
        let at = self.now + h.t_slave_s / h.avail_cpu;
        self.push(at, Ev::Computed(w));
    }

    /// Results above the eager limit go by rendezvous.
    fn rendezvous(&self) -> bool {
        self.inputs.result_bytes > EAGER_LIMIT_BYTES
    }

    /// The master takes the next result: an eager one is in already; a
    /// rendezvous one moves now, alone, after a handshake round trip. Its
    /// path's shapers were idle meanwhile: the first bytes, up to the
    /// smaller of their buckets, pass at once (a late rendezvous receive
    /// beat the rate; figures: docs/place.md).
    fn start_absorb(&mut self) {
        let Some(w) = self.inbox.pop_front() else {
            return;
        };
        self.master_busy = true;
        if self.rendezvous() {
            let h = self.ws[w];
            let (bh, bm) = (
                self.inputs.hosts[h].burst_bytes,
                self.inputs.hosts[self.m].burst_bytes,
            );
            // The smaller bucket of the shaped ends (0: unshaped).
            let burst = if bh > 0.0 && bm > 0.0 {
                bh.min(bm)
            } else {
                bh.max(bm)
            };
            let at = self.now
                + 2.0 * self.latency(h, self.m)
                + (self.inputs.result_bytes - burst).max(0.0) / self.rate(h, self.m);
            self.push(at, Ev::Received(w));
        } else {
            self.absorb(w);
        }
    }

    /// Send worker `w` its next task, then absorb its result.
    fn absorb(&mut self, w: usize) {
        self.send(w);
        let h = &self.inputs.hosts[self.m];
        let at = self.now + h.t_master_s / h.avail_cpu;
        self.push(at, Ev::Absorbed);
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Request(w) => {
                self.queued[w] += 1;
                if !self.busy[w] {
                    self.start_compute(w);
                }
            }
            Ev::Computed(w) if self.rendezvous() => {
                // Blocked in its send until the master takes the data.
                self.done[w] += 1;
                let at = self.now + self.latency(self.ws[w], self.m);
                self.push(at, Ev::Rts(w));
            }
            Ev::Computed(w) => {
                self.busy[w] = false;
                self.done[w] += 1;
                self.flows.push((w, self.inputs.result_bytes));
                if self.queued[w] > 0 {
                    self.start_compute(w);
                }
            }
            Ev::Received(w) => {
                self.busy[w] = false;
                if self.queued[w] > 0 {
                    self.start_compute(w);
                }
                self.absorb(w);
            }
            Ev::Arrived(w) | Ev::Rts(w) => {
                self.inbox.push_back(w);
                if !self.master_busy {
                    self.start_absorb();
                }
            }
            Ev::Absorbed => {
                self.master_busy = false;
                self.absorbed += 1;
                self.start_absorb();
            }
        }
    }

    /// Max-min fair rates of the results in flight on the master's link.
    fn shares(&self) -> Vec<f64> {
        let hm = &self.inputs.hosts[self.m];
        let mut cap = hm.link_bps.unwrap_or(self.inputs.unshaped_bps) * PAYLOAD_FRACTION / 8.0;
        let own: Vec<f64> = self
            .flows
            .iter()
            .map(|&(w, _)| self.rate(self.ws[w], self.m))
            .collect();
        let mut idx: Vec<usize> = (0..own.len()).collect();
        idx.sort_by(|&a, &b| own[a].total_cmp(&own[b]));
        let mut out = vec![0.0; own.len()];
        for (k, &i) in idx.iter().enumerate() {
            out[i] = own[i].min(cap / (idx.len() - k) as f64);
            cap -= out[i];
        }
        out
    }

    /// Advance the clock and the fluid to `to`.
    fn advance(&mut self, to: f64, rates: &[f64]) {
        let dt = to - self.now;
        for (f, r) in self.flows.iter_mut().zip(rates) {
            f.1 -= r * dt;
        }
        self.now = to;
    }

    /// Run events until every task is absorbed.
    fn run(&mut self) {
        while self.absorbed < self.inputs.tasks {
            let rates = self.shares();
            let next_flow = self
                .flows
                .iter()
                .zip(&rates)
                .enumerate()
                .map(|(i, (f, r))| (self.now + f.1.max(0.0) / r, i))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let next_ev = self.heap.peek().map(|Reverse((t, _, _))| t.0);
            match (next_flow, next_ev) {
                (Some((tf, i)), te) if te.is_none_or(|te| tf <= te) => {
                    self.advance(tf, &rates);
                    let (w, _) = self.flows.swap_remove(i);
                    let at = self.now + self.latency(self.ws[w], self.m);
                    self.push(at, Ev::Arrived(w));
                }
                (_, Some(te)) => {
                    self.advance(te, &rates);
                    if let Some(Reverse((_, _, ev))) = self.heap.pop() {
                        self.handle(ev);
                    }
                }
                _ => break,
            }
        }
    }
}
