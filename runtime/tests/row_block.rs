//! `RowBlock::redistribute` on 3 real MPI ranks (the test launches itself
//! under `mpirun -np 3 --oversubscribe`, or `$MHETA_MPIRUN -n 3` when that
//! names Hydra's `mpiexec`): a long pseudo-random sequence of
//! GEN_BLOCK moves, ranks with no rows included, with every value checked
//! after every move; the rows a rank keeps stay at the same address when
//! its block only loses or gains rows at its ends; the buffer stays within
//! four times the block. The random sequence runs again with rows of
//! 64 KiB (blocks of up to 15 MiB, so buffers grow past their mappings),
//! in small pages and in huge pages, with the on-node copy by both ends
//! (its pieces of 4 MiB or more) and, once more, through MPI alone.

use mheta_model::Dist;
use mheta_runtime::RowBlock;
use mpi::topology::{Communicator, SimpleCommunicator};
use std::process::Command;

/// Row length and rows of the small case.
const W: usize = 7;
const N: u64 = 60;
/// Row length and rows of the large case.
const BIG_W: usize = 8192;
const BIG_N: u64 = 240;

fn main() {
    // A rank of Open MPI or of Hydra: run the test; else launch it.
    if ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .all(|v| std::env::var_os(v).is_none())
    {
        let me = std::env::current_exe().expect("own path");
        let launcher = std::env::var("MHETA_MPIRUN").unwrap_or_else(|_| "mpirun".into());
        let mut c = Command::new(&launcher);
        if launcher.contains("mpiexec") {
            c.args(["-n", "3"]);
        } else {
            // SAFETY: geteuid only reads the process's credentials.
            if unsafe { libc::geteuid() } == 0 {
                c.arg("--allow-run-as-root");
            }
            c.args(["--oversubscribe", "-np", "3"]);
        }
        let st = c.arg(&me).status().expect("launcher");
        assert!(st.success(), "row_block under {launcher}: {st}");
        return;
    }
    let universe = mpi::initialize().expect("MPI");
    let world = universe.world();
    assert_eq!(world.size(), 3);
    random_moves(&world, W, N, 200);
    // Small moves never look for on-node peers.
    assert_eq!(mheta_runtime::on_node_peers_known(&world), None);
    for huge in [false, true] {
        mheta_runtime::set_huge_pages(huge);
        random_moves(&world, BIG_W, BIG_N, 40);
    }
    // The large moves probed once and kept the answer on the
    // communicator: root may read and write any process of its own, so
    // both others are peers (their pieces of 4 MiB or more were copied by
    // both ends); a duplicate of the communicator has no answer kept.
    // SAFETY: geteuid only reads the process's credentials.
    let root = unsafe { libc::geteuid() } == 0;
    let kept = mheta_runtime::on_node_peers_known(&world);
    assert!(kept.is_some(), "rank {}: no probe kept", world.rank());
    if root {
        assert_eq!(kept, Some(2), "on-node peers of rank {}", world.rank());
    }
    let dup = world.duplicate();
    assert_eq!(mheta_runtime::on_node_peers_known(&dup), None);
    assert_eq!(Some(mheta_runtime::on_node_peers(&dup)), kept);
    assert_eq!(mheta_runtime::on_node_peers_known(&dup), kept);
    mheta_runtime::set_huge_pages(false);
    // The same moves through MPI alone.
    mheta_runtime::set_on_node_copy(false);
    random_moves(&world, BIG_W, BIG_N, 20);
    mheta_runtime::set_on_node_copy(true);
    kept_rows_do_not_move(&world);
    if world.rank() == 0 {
        println!("row_block: ok");
    }
}

fn value(row: u64, k: usize) -> f64 {
    (row * 1_000_000 + k as u64) as f64
}

fn fill(d: &Dist, me: usize, w: usize) -> RowBlock<f64> {
    let first = d.offsets()[me];
    let v: Vec<f64> = (0..d.0[me])
        .flat_map(|i| (0..w).map(move |k| value(first + i, k)))
        .collect();
    RowBlock::from_slice(&v)
}

fn check(b: &RowBlock<f64>, d: &Dist, me: usize, w: usize, step: usize) {
    assert_eq!(b.len() as u64, d.0[me] * w as u64, "step {step}: length");
    let first = d.offsets()[me];
    for (i, row) in b.chunks_exact(w).enumerate() {
        for (k, &x) in row.iter().enumerate() {
            assert_eq!(
                x,
                value(first + i as u64, k),
                "step {step}: row {}",
                first + i as u64
            );
        }
    }
    assert!(
        b.buffer_len() <= 4 * b.len() + 4096,
        "step {step}: buffer of {} for a block of {}",
        b.buffer_len(),
        b.len()
    );
}

/// The same sequence on every rank (a fixed LCG): `steps` moves of `n`
/// rows of `w` values.
fn random_moves(world: &SimpleCommunicator, w: usize, n: u64, steps: usize) {
    let me = world.rank() as usize;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % m
    };
    let mut d = Dist(vec![n / 3, n / 3, n - 2 * (n / 3)]);
    let mut b = fill(&d, me, w);
    for step in 0..steps {
        let a = next(n + 1);
        let c = next(n + 1 - a);
        let mut v = vec![a, c, n - a - c];
        // Now and then a rank with no rows, or everything on one rank.
        if step % 17 == 0 {
            v = vec![0, n, 0];
        }
        let new = Dist(v);
        b.redistribute(world, &d, &new, w);
        d = new;
        check(&b, &d, me, w, step);
    }
}

/// Rank 1 gives its first 10 rows to rank 0, then takes them back: its 10
/// other rows stay where they are both times.
fn kept_rows_do_not_move(world: &SimpleCommunicator) {
    let me = world.rank() as usize;
    let a = Dist(vec![20, 20, 20]);
    let b = Dist(vec![30, 10, 20]);
    let mut blk = fill(&a, me, W);
    let kept_at = |blk: &RowBlock<f64>, d: &Dist| {
        // Address of global row 30 (rank 1's kept rows start there).
        let first = d.offsets()[1] as usize;
        blk[(30 - first) * W..].as_ptr() as usize
    };
    let before = (me == 1).then(|| kept_at(&blk, &a));
    blk.redistribute(world, &a, &b, W);
    check(&blk, &b, me, W, 1000);
    let after = (me == 1).then(|| kept_at(&blk, &b));
    blk.redistribute(world, &b, &a, W);
    check(&blk, &a, me, W, 1001);
    let back = (me == 1).then(|| kept_at(&blk, &a));
    if me == 1 {
        assert_eq!(before, after, "giving rows away moved the kept rows");
        assert_eq!(after, back, "taking rows back moved the kept rows");
    }
}
