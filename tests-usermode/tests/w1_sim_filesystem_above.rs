//! docs/review.md W1 in the simulator: `vcsim --filesystem-above` over seeds (each one schedule
//! of the filesystem stand-in's writes against the dismount sequence and the volume's drain;
//! `sim::fs_workload`), and the seeds replay exactly.

use vcdirect_usermode::sim::run_fs_seed;

#[test]
fn w1_sim_dismount_with_a_filesystem_above_across_seeds() {
    let mut cases = std::collections::BTreeSet::new();
    for seed in 0..48 {
        let r = run_fs_seed(seed);
        assert!(
            r.violations.is_empty(),
            "seed {seed} ({}): {:?}",
            r.drawn,
            r.violations
        );
        assert!(r.requests > 0, "seed {seed}: the filesystem wrote nothing");
        cases.insert(r.drawn.split(' ').next().unwrap_or("").to_string());
    }
    assert_eq!(cases.len(), 3, "every case ran: {cases:?}");
}

#[test]
fn w1_sim_filesystem_above_seeds_replay() {
    assert_eq!(run_fs_seed(7).trace_hash, run_fs_seed(7).trace_hash);
}
