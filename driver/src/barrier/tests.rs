use alloc::vec;
use alloc::vec::Vec;

use super::*;

fn granted_after(lock: &mut RangeLock, t: Ticket) -> Vec<Ticket> {
    let mut g = Vec::new();
    lock.release(t, &mut g);
    g
}

#[test]
fn disjoint_requests_never_wait() {
    let mut lock = RangeLock::with_capacity(8).unwrap();
    let (_, a) = lock.register(0..4096, Access::Write).unwrap();
    let (_, b) = lock.register(4096..8192, Access::Write).unwrap();
    let (_, c) = lock.register(8192..12288, Access::Read).unwrap();
    assert!(a && b && c);
}

#[test]
fn r12_a_pending_write_never_blocks_a_disjoint_read() {
    let mut lock = RangeLock::with_capacity(8).unwrap();
    let (_, w) = lock.register(0..1 << 20, Access::Write).unwrap();
    let (_, r) = lock
        .register(1 << 20..(1 << 20) + 4096, Access::Read)
        .unwrap();
    assert!(
        w && r,
        "a read must not wait for a write it does not overlap"
    );
}

#[test]
fn reads_share_and_a_write_waits_for_earlier_overlapping_reads() {
    let mut lock = RangeLock::with_capacity(8).unwrap();
    let (r1, g1) = lock.register(0..8192, Access::Read).unwrap();
    let (r2, g2) = lock.register(4096..12288, Access::Read).unwrap();
    let (w, gw) = lock.register(0..512, Access::Write).unwrap();
    assert!(g1 && g2 && !gw);
    assert_eq!(granted_after(&mut lock, r2), vec![]);
    assert_eq!(granted_after(&mut lock, r1), vec![w]);
}

#[test]
fn overlapping_requests_are_granted_in_arrival_order() {
    let mut lock = RangeLock::with_capacity(8).unwrap();
    let (w1, _) = lock.register(0..4096, Access::Write).unwrap();
    let (r, gr) = lock.register(0..4096, Access::Read).unwrap();
    let (w2, gw2) = lock.register(0..4096, Access::Write).unwrap();
    assert!(!gr && !gw2);
    assert_eq!(granted_after(&mut lock, w1), vec![r]);
    assert_eq!(granted_after(&mut lock, r), vec![w2]);
}

#[test]
fn a_flush_waits_for_every_earlier_write_and_blocks_nobody() {
    let mut lock = RangeLock::with_capacity(8).unwrap();
    let (w1, _) = lock.register(0..512, Access::Write).unwrap();
    let (w2, _) = lock
        .register(1 << 30..(1 << 30) + 512, Access::Write)
        .unwrap();
    let (f, gf) = lock.register(0..u64::MAX, Access::Flush).unwrap();
    assert!(!gf);
    let (_, later_write) = lock.register(0..512, Access::Write).unwrap();
    assert!(!later_write, "it waits for w1, not for the flush");
    assert_eq!(
        granted_after(&mut lock, w1).len(),
        1,
        "only the later write"
    );
    assert_eq!(granted_after(&mut lock, w2), vec![f]);
}

#[test]
fn a_full_pool_refuses_and_recovers() {
    let mut lock = RangeLock::with_capacity(2).unwrap();
    let (a, _) = lock.register(0..512, Access::Read).unwrap();
    lock.register(512..1024, Access::Read).unwrap();
    assert!(lock.register(1024..1536, Access::Read).is_none());
    granted_after(&mut lock, a);
    assert!(lock.register(1024..1536, Access::Read).is_some());
}

/// Against a brute-force model: random registers and releases of granted entries; the set of
/// granted entries is exactly those with no earlier live conflicting entry.
#[test]
fn matches_a_brute_force_model_on_random_schedules() {
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for _round in 0..200 {
        let mut lock = RangeLock::with_capacity(32).unwrap();
        // (ticket, range, access, arrival)
        let mut live: Vec<(Ticket, Range<u64>, Access, bool)> = Vec::new();
        for _step in 0..300 {
            if live.len() < 32 && rnd(3) != 0 {
                let start = rnd(64) * 512;
                let range = start..start + (1 + rnd(8)) * 512;
                let access = match rnd(10) {
                    0 => Access::Flush,
                    1..=4 => Access::Write,
                    _ => Access::Read,
                };
                let (t, g) = lock.register(range.clone(), access).unwrap();
                assert_eq!(lock.disjoint_waits(), 0);
                live.push((t, range, access, g));
            } else if let Some(i) = {
                let granted: Vec<usize> = (0..live.len()).filter(|&i| live[i].3).collect();
                if granted.is_empty() {
                    None
                } else {
                    Some(granted[rnd(granted.len() as u64) as usize])
                }
            } {
                let (t, ..) = live.remove(i);
                let mut g = Vec::new();
                lock.release(t, &mut g);
                for t in g {
                    live.iter_mut().find(|e| e.0 == t).unwrap().3 = true;
                }
            }
            // Model: an entry is granted iff no earlier live entry conflicts with it.
            for i in 0..live.len() {
                let (_, ref r, a, g) = live[i];
                let blocked = live[..i].iter().any(|(_, er, ea, _)| {
                    let overlap = er.start < r.end && r.start < er.end;
                    match (a, *ea) {
                        (_, Access::Flush) => false,
                        (Access::Flush, Access::Write) => true,
                        (Access::Write, _) => overlap,
                        (Access::Read, Access::Write) => overlap,
                        _ => false,
                    }
                });
                assert_eq!(
                    g, !blocked,
                    "entry {i} granted={g} but model says blocked={blocked}"
                );
            }
        }
    }
}

/// The worst shape a treap of this lock can take: keys that follow the priorities make every
/// node the right child of the one before, a path as long as the pool (256). The walks are
/// iterative (no frame per level on the dispatch or cancel path); they must still find exactly
/// the overlapping intervals and keep the tree whole through removals.
#[test]
fn w13_a_tree_as_deep_as_the_pool_is_walked_without_recursion_and_stays_exact() {
    use super::interval::{mix, IntervalTree};
    const N: u32 = 256;
    let mut ids: Vec<u32> = (0..N).collect();
    // Highest priority first, so each later (larger) key sits at the bottom of a right spine.
    ids.sort_by_key(|&id| core::cmp::Reverse(mix(id)));
    let mut tree = IntervalTree::with_capacity(N as usize).unwrap();
    let mut live: Vec<(u32, u64, u64)> = Vec::new();
    for (rank, &id) in ids.iter().enumerate() {
        let start = rank as u64 * 10;
        let end = start + 15; // overlaps the next interval
        tree.insert(id, start, end);
        live.push((id, start, end));
    }
    let check = |tree: &mut IntervalTree, live: &[(u32, u64, u64)]| {
        for (a, b) in [
            (0u64, 1u64),
            (5, 26),
            (1_000, 1_001),
            (2_545, 2_600),
            (0, 3_000),
            (9, 10),
        ] {
            let mut got = Vec::new();
            tree.overlapping(a..b, &mut got);
            got.sort_unstable();
            let mut want: Vec<u32> = live
                .iter()
                .filter(|&&(_, s, e)| s < b && a < e)
                .map(|&(id, _, _)| id)
                .collect();
            want.sort_unstable();
            assert_eq!(got, want, "overlapping {a}..{b}");
        }
        assert_eq!(tree.len(), live.len());
    };
    check(&mut tree, &live);
    // Remove from the deep end, the middle and the top, checking after each step.
    for pick in [255usize, 128, 0, 100, 3] {
        let i = pick.min(live.len() - 1);
        let (id, start, _) = live.remove(i);
        tree.remove(id, start);
        check(&mut tree, &live);
    }
    while let Some((id, start, _)) = live.pop() {
        tree.remove(id, start);
    }
    assert_eq!(tree.len(), 0);
}
