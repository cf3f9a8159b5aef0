//! Differential: one seeded workload, run sequentially through a legacy-only volume and a
//! direct-enabled volume on identical media, must give the same bytes on the medium, the same
//! bytes in the callers' buffers and the same statuses (docs/design.md §2.5). With host faults on
//! sector ranges, the statuses still agree, and so does every sector no failed write touched;
//! what a failed write left in its sectors may differ by design (the legacy path's fragments
//! and the direct path's segments cut a request differently, and the host moves nothing for a
//! piece that touches a bad range), so those sectors are not compared. Both paths serve every
//! algorithm: the same differential runs on a Serpent volume and on a three-cipher cascade
//! (Kuznyechik-Serpent-Camellia), whose small requests stay on the direct path's workers
//! (only AES alone on the AES instructions decrypts in a host completion routine).

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vcdirect::crypto::{Algorithm, AES, ALGORITHMS};
use vcdirect::platform::irql::Irql;
use vcdirect::registry::Gates;
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;

const SIZE: u64 = 6 * MIB;

/// Sizes 512 B .. 1 MiB (some just over a fragment or a segment), offsets often overlapping
/// the previous request, buffers at several page offsets.
fn workload(seed: u64, n: usize) -> Vec<Req> {
    workload_in(seed, n, SIZE)
}

/// [`workload`] over a volume of `size` bytes.
fn workload_in(seed: u64, n: usize, size: u64) -> Vec<Req> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut last = (0u64, 512usize);
    (0..n)
        .map(|i| {
            let sectors: u64 = match rng.gen_range(0..10) {
                0..=3 => rng.gen_range(1..=16),
                4..=6 => rng.gen_range(17..=512),
                7 => 512 + rng.gen_range(0..=1),
                _ => rng.gen_range(513..=2048),
            };
            let len = sectors * 512;
            let offset = if rng.gen_bool(0.4) {
                // Overlap the previous request.
                let lo = last.0.saturating_sub(len - 512);
                let hi = (last.0 + last.1 as u64 - 512).min(size - len);
                512 * rng.gen_range(lo / 512..=hi.max(lo) / 512)
            } else {
                512 * rng.gen_range(0..=(size - len) / 512)
            };
            let offset = offset.min(size - len);
            last = (offset, len as usize);
            Req {
                write: rng.gen_bool(0.5),
                offset,
                len: len as usize,
                page_offset: [0, 512, 8, 3584][rng.gen_range(0..4)],
                seed: seed << 20 | i as u64,
            }
        })
        .collect()
}

/// A volume on the common medium content (optionally failing host byte ranges).
fn single(faults: &[std::ops::Range<u64>], gates: Gates) -> (ProbeHost, Vol) {
    single_of(AES, SIZE, faults, gates)
}

/// [`single`] of `algorithm`, `size` bytes.
fn single_of(
    algorithm: Algorithm,
    size: u64,
    faults: &[std::ops::Range<u64>],
    gates: Gates,
) -> (ProbeHost, Vol) {
    let mut p = params(size, gates);
    p.algorithm = algorithm;
    let host = ProbeHost::new(MemoryHost::new(DATA_OFFSET + size + 64 * KIB));
    put_plain_as(
        algorithm,
        &host.mem,
        DATA_OFFSET,
        0,
        &pattern(999, size as usize),
    );
    for f in faults {
        host.mem.fail_range(f.clone(), Status::IoDeviceError);
    }
    (host.clone(), mount(host, p))
}

/// Two volumes on identical media (optionally failing the same host byte ranges).
fn pair(faults: &[std::ops::Range<u64>]) -> (ProbeHost, Vol, ProbeHost, Vol) {
    let (lh, lv) = single(faults, BOTH_OFF);
    let (dh, dv) = single(faults, BOTH_ON);
    (lh, lv, dh, dv)
}

#[test]
fn direct_and_legacy_give_same_bytes_and_statuses() {
    // A System thread (a file system's or server's worker): the dispatching thread may issue.
    vcdirect_usermode::security::set_caller(vcdirect_usermode::security::Caller::System);
    for seed in [1u64, 2, 3] {
        let reqs = workload(seed, 60);
        let (lh, lv, dh, dv) = pair(&[]);
        let legacy = run(&lv, &reqs);
        // Dispatched at PASSIVE_LEVEL, so small requests are issued by the dispatching thread;
        // the second direct volume below gets everything at DISPATCH_LEVEL (the workers).
        set_dispatch_level(Irql::Passive);
        let direct = run(&dv, &reqs);
        set_dispatch_level(Irql::Dispatch);
        let (wh, wv) = single(&[], BOTH_ON);
        let workers = run(&wv, &reqs);
        for (i, ((l, d), w)) in legacy.iter().zip(&direct).zip(&workers).enumerate() {
            let r = &reqs[i];
            assert_eq!(
                (d.status, d.information, &d.read),
                (w.status, w.information, &w.read),
                "seed {seed} #{i} {r:?}: dispatch-issued and worker-issued differ"
            );
            let r = &reqs[i];
            assert_eq!(l.status, Status::Success, "seed {seed} #{i} {r:?}");
            assert_eq!(
                (l.status, l.information),
                (d.status, d.information),
                "seed {seed} #{i} {r:?}"
            );
            assert!(
                l.read == d.read,
                "seed {seed} #{i}: read buffers differ {r:?}"
            );
        }
        assert!(
            lh.mem.snapshot() == dh.mem.snapshot() && dh.mem.snapshot() == wh.mem.snapshot(),
            "seed {seed}: media differ"
        );
        let lc = lv.counters.snapshot();
        let dc = dv.counters.snapshot();
        let wc = wv.counters.snapshot();
        assert_eq!(lc.direct_reads + lc.direct_writes, 0);
        assert!(
            dc.direct_reads > 0 && dc.direct_writes > 0,
            "seed {seed}: {dc:?}"
        );
        // Small requests went out without a waiter on both direct volumes; only at
        // PASSIVE_LEVEL did the dispatching thread issue some itself.
        assert!(
            dc.dispatch_issued > 0 && dc.detached > 0,
            "seed {seed}: {dc:?}"
        );
        assert!(
            wc.dispatch_issued == 0 && wc.detached > 0,
            "seed {seed}: {wc:?}"
        );
        lv.dismount();
        dv.dismount();
        wv.dismount();
    }
}

#[test]
fn direct_and_legacy_agree_on_statuses_and_untouched_sectors_when_host_fails_sector_range() {
    // A System thread (a file system's or server's worker): the dispatching thread may issue.
    vcdirect_usermode::security::set_caller(vcdirect_usermode::security::Caller::System);
    for seed in [11u64, 12] {
        let reqs = workload(seed, 60);
        // Three bad ranges (host bytes) inside the data area.
        let faults = [
            DATA_OFFSET + MIB + 4096..DATA_OFFSET + MIB + 4608,
            DATA_OFFSET + 3 * MIB..DATA_OFFSET + 3 * MIB + 65536,
            DATA_OFFSET + 5 * MIB + 512 * 77..DATA_OFFSET + 5 * MIB + 512 * 78,
        ];
        let (lh, lv, dh, dv) = pair(&faults);
        let legacy = run(&lv, &reqs);
        // PASSIVE_LEVEL: failed and short reads the dispatching thread issued.
        set_dispatch_level(Irql::Passive);
        let direct = run(&dv, &reqs);
        set_dispatch_level(Irql::Dispatch);
        // Volume sectors written by a failed write: their content is not specified.
        let mut tainted = vec![false; (SIZE / 512) as usize];
        let mut failures = 0;
        for (i, (l, d)) in legacy.iter().zip(&direct).enumerate() {
            let r = &reqs[i];
            assert_eq!(
                (l.status, l.information),
                (d.status, d.information),
                "seed {seed} #{i} {r:?}"
            );
            let first = (r.offset / 512) as usize;
            let sectors = first..first + r.len / 512;
            if !l.status.is_success() {
                failures += 1;
                assert_eq!(l.status, Status::IoDeviceError, "#{i}");
                if r.write {
                    tainted[sectors].iter_mut().for_each(|t| *t = true);
                }
                continue;
            }
            if let (Some(lb), Some(db)) = (&l.read, &d.read) {
                for (k, s) in sectors.enumerate() {
                    if !tainted[s] {
                        assert!(
                            lb[k * 512..k * 512 + 512] == db[k * 512..k * 512 + 512],
                            "seed {seed} #{i}: sector {s} differs in the read buffers"
                        );
                    }
                }
            }
        }
        assert!(
            failures > 0,
            "seed {seed}: the workload never hit a bad range"
        );
        let (ls, ds) = (lh.mem.snapshot(), dh.mem.snapshot());
        for (s, t) in tainted.iter().enumerate() {
            let at = DATA_OFFSET as usize + s * 512;
            if !t {
                assert!(
                    ls[at..at + 512] == ds[at..at + 512],
                    "seed {seed}: medium sector {s} differs"
                );
            }
        }
        assert!(ls[..DATA_OFFSET as usize] == ds[..DATA_OFFSET as usize]);
        lv.dismount();
        dv.dismount();
    }
}

/// The same differential on a Serpent volume and on a three-cipher cascade's: both paths give
/// the same bytes and statuses, the direct path serves them (its workers: no request of these
/// algorithms is issued without a waiter), and the medium holds the written data under the
/// volume's own algorithm.
#[test]
fn direct_and_legacy_give_same_bytes_for_serpent_and_a_three_cipher_cascade() {
    vcdirect_usermode::security::set_caller(vcdirect_usermode::security::Caller::System);
    const SMALL: u64 = 3 * MIB;
    for (seed, algorithm) in [(21u64, ALGORITHMS[1]), (22, ALGORITHMS[14])] {
        let name = algorithm.name();
        let reqs = workload_in(seed, 16, SMALL);
        let (lh, lv) = single_of(algorithm, SMALL, &[], BOTH_OFF);
        let (dh, dv) = single_of(algorithm, SMALL, &[], BOTH_ON);
        let legacy = run(&lv, &reqs);
        set_dispatch_level(Irql::Passive);
        let direct = run(&dv, &reqs);
        set_dispatch_level(Irql::Dispatch);
        for (i, (l, d)) in legacy.iter().zip(&direct).enumerate() {
            let r = &reqs[i];
            assert_eq!(l.status, Status::Success, "{name} #{i} {r:?}");
            assert_eq!(
                (l.status, l.information),
                (d.status, d.information),
                "{name} #{i} {r:?}"
            );
            assert!(l.read == d.read, "{name} #{i}: read buffers differ {r:?}");
        }
        assert!(
            lh.mem.snapshot() == dh.mem.snapshot(),
            "{name}: media differ"
        );
        // The last write of each sector is on the medium under the volume's algorithm.
        let mut expected = pattern(999, SMALL as usize);
        for r in reqs.iter().filter(|r| r.write) {
            expected[r.offset as usize..r.offset as usize + r.len]
                .copy_from_slice(&pattern(r.seed, r.len));
        }
        let mut medium =
            dh.mem.snapshot()[DATA_OFFSET as usize..(DATA_OFFSET + SMALL) as usize].to_vec();
        cipher_of(algorithm).decrypt(&mut medium, DATA_OFFSET / 512);
        assert!(
            medium == expected,
            "{name}: the medium is not the data under {name}"
        );
        let dc = dv.counters.snapshot();
        assert!(
            dc.direct_reads > 0 && dc.direct_writes > 0,
            "{name}: {dc:?}"
        );
        assert_eq!(
            (dc.detached, dc.dispatch_issued),
            (0, 0),
            "{name}: only AES alone decrypts in a completion routine"
        );
        lv.dismount();
        dv.dismount();
    }
}
