//! W6 in the simulator: seeds whose draw fails one fallible allocation of a mount made before
//! the seed's real one (vcsim's `allocation` check) run with no violation, and the draw does
//! happen (so the check is exercised, with failing and with succeeding mounts).

use vcdirect_usermode::sim::{run_seed, SimConfig};

#[test]
fn w6_vcsim_seeds_with_a_failed_mount_allocation_pass() {
    let cfg = &SimConfig::standard(40)[3];
    let mut drawn = 0;
    for seed in 0..16 {
        let r = run_seed(cfg, seed);
        assert!(
            r.violations.is_empty(),
            "seed {seed} ({}): {:?}",
            r.drawn,
            r.violations
        );
        if r.drawn.contains("fail_alloc=Some") {
            drawn += 1;
        }
    }
    assert!(
        drawn >= 2,
        "the allocation failure is drawn ({drawn} of 16 seeds)"
    );
}
