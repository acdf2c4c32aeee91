//! A time-shared rank whose waits poll, replayed by its turns
//! (`model/turns.rs`): where the iteration is shorter than a turn, its
//! partners run only in its turns, so the iteration is the dedicated one
//! over its share and rows taken from it buy nothing; where the iteration
//! spans many turns, the smooth share of Figueira and Berman eq. 1 holds.
//! On the synthetic 2-rank Jacobi trace (blocking exchanges: its waits
//! poll), rank 0 at half a core (sd 2) in turns of 4 ms.

use mheta_model::slowdown::{LoadSpec, NodeLoad};
use mheta_model::stoch::{Mixture, Stoch};
use mheta_model::synthetic::{app, jacobi_trace, profile};
use mheta_model::{Dist, Model, search};

const TURN: f64 = 4e-3;

/// Two ranks, each computing `compute_ns` on its 64 rows.
fn model(compute_ns: u64) -> Model {
    let traces: Vec<_> = (0..2)
        .map(|r| jacobi_trace(r, 2, compute_ns, 8 * 1026))
        .collect();
    Model::new(&traces, app(vec![64; 2]), &profile(2)).expect("model")
}

/// Rank 0's core shared half and half; with `turn`, its turns given.
fn half_on_rank0(m: &Model, turn: Option<f64>) -> Model {
    let spec = LoadSpec {
        nodes: vec![NodeLoad {
            ranks: vec![0],
            cpu_avail: Some(Mixture::single(Stoch::point(0.5))),
            turn_s: turn,
            ..NodeLoad::default()
        }],
        ..LoadSpec::default()
    };
    m.clone()
        .with_load(spec.resolve(2, 10.0, "load").expect("load"))
}

fn per_iter(m: &Model, d: &[u64]) -> f64 {
    m.predict(&Dist(d.to_vec()))
        .expect("predict")
        .per_iteration_s
}

#[test]
fn shorter_than_a_turn_the_pair_runs_in_its_turns() {
    // 0.5 ms a rank an iteration, a turn 4 ms.
    let m = model(500_000);
    let (turns, smooth) = (half_on_rank0(&m, Some(TURN)), half_on_rank0(&m, None));
    let block = [64, 64];
    let ded = per_iter(&m, &block);
    let t = per_iter(&turns, &block);
    // The dedicated iteration over the share of one half.
    assert!(
        (t / (2.0 * ded) - 1.0).abs() < 0.03,
        "{t} against {}",
        2.0 * ded
    );
    // A third of the rows on rank 0: the smooth share calls it faster
    // than Block; by turns it is slower (rank 1's 85 rows decide, at
    // rank 0's share, less what rank 1 computes while rank 0 is away).
    let plan = [43, 85];
    assert!(per_iter(&smooth, &plan) < per_iter(&smooth, &block));
    let by_turns = per_iter(&turns, &plan);
    assert!(by_turns > t, "{by_turns} against Block's {t}");
    // And the search keeps the rows where they are.
    let r = search::gbs(&turns).expect("search");
    let rows0 = r.dist[0] as f64;
    assert!((rows0 / 64.0 - 1.0).abs() < 0.1, "{:?}", r.dist);
}

#[test]
fn across_many_turns_the_smooth_share_holds() {
    // 40 ms a rank an iteration: ten turns. Where the ranks' times are
    // close, by turns the slower of two varying times decides, which
    // the smooth share's means do not see: within 3.5%.
    let m = model(40_000_000);
    let (turns, smooth) = (half_on_rank0(&m, Some(TURN)), half_on_rank0(&m, None));
    for d in [[64, 64], [43, 85], [32, 96]] {
        let (a, b) = (per_iter(&turns, &d), per_iter(&smooth, &d));
        assert!(
            (a / b - 1.0).abs() < 0.035,
            "{d:?}: by turns {a}, smooth {b}"
        );
    }
}

#[test]
fn a_dedicated_rank_or_no_turn_changes_nothing() {
    let m = model(500_000);
    let d = Dist(vec![50, 78]);
    let smooth = half_on_rank0(&m, None);
    assert_eq!(
        smooth.predict(&d).unwrap(),
        smooth.evaluator().predict(&d).unwrap()
    );
    // A turn on a rank that keeps its whole core: as dedicated.
    let spec = LoadSpec {
        nodes: vec![NodeLoad {
            ranks: vec![0],
            turn_s: Some(TURN),
            ..NodeLoad::default()
        }],
        ..LoadSpec::default()
    };
    let alone = m.clone().with_load(spec.resolve(2, 10.0, "load").unwrap());
    assert_eq!(alone.predict(&d).unwrap(), m.predict(&d).unwrap());
}

#[test]
fn a_turn_out_of_range_names_the_node() {
    let spec = LoadSpec {
        nodes: vec![NodeLoad {
            ranks: vec![0],
            turn_s: Some(-1.0),
            ..NodeLoad::default()
        }],
        ..LoadSpec::default()
    };
    let e = spec.resolve(2, 10.0, "load.toml").unwrap_err().to_string();
    assert!(
        e.contains("load.toml") && e.contains("node 0") && e.contains("turn_s"),
        "{e}"
    );
}
