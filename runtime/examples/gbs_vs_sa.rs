use mheta_runtime::synthetic::{hetero_cluster, profile};
use mheta_runtime::{Dist, Model, search};
fn main() {
    for seed in 0..6u64 {
        let (traces, decl) = hetero_cluster(1000 + seed, 8, 64);
        let m = Model::new(&traces, decl, &profile(8)).unwrap();
        let g = search::gbs(&m).unwrap();
        let s = search::annealing(&m, 100 * g.evaluations, seed).unwrap();
        let cap: Vec<u64> = (0..8).map(|i| m.in_core_capacity(i)).collect();
        let pg = m.predict(&Dist(g.dist.clone())).unwrap();
        let ps = m.predict(&Dist(s.dist.clone())).unwrap();
        println!(
            "seed {seed} cap {cap:?}\n gbs {:?} {:.4} {:?}\n sa  {:?} {:.4} {:?}",
            g.dist,
            g.predicted_s * 1e3,
            pg.ranks
                .iter()
                .map(|r| (r.total_s * 1e3 * 100.0).round() / 100.0)
                .collect::<Vec<_>>(),
            s.dist,
            s.predicted_s * 1e3,
            ps.ranks
                .iter()
                .map(|r| (r.total_s * 1e3 * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        );
    }
}
