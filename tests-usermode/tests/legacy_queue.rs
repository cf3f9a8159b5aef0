//! The legacy encrypted I/O queue through the std host (real threads): round trips, fragment
//! boundaries, VeraCrypt's validation statuses, read-only and hidden-volume protection,
//! read-ahead correctness, concurrency against a reference model, absolute data units.

mod common;

use std::sync::Arc;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vcdirect::platform::RequestKind;
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::request::Buf;

fn legacy_volume(size: u64) -> (ProbeHost, Vol) {
    let p = params(size, BOTH_OFF);
    let host = host_for(&p);
    (host.clone(), mount(host, p))
}

#[test]
fn legacy_round_trip_returns_written_bytes_and_stores_ciphertext() {
    let (host, vol) = legacy_volume(4 * MIB);
    let data = pattern(1, 64 * 1024);
    assert_eq!(write(&vol, 8192, &data), (Status::Success, data.len()));
    let (s, n, back) = read(&vol, 8192, data.len() as u32);
    assert_eq!((s, n), (Status::Success, data.len()));
    assert_eq!(back, data);
    // The medium holds ciphertext, not the plaintext.
    let snap = host.mem.snapshot();
    let at = (DATA_OFFSET + 8192) as usize;
    assert_ne!(&snap[at..at + data.len()], &data[..]);
    assert_eq!(get_plain(&host.mem, DATA_OFFSET, 8192, data.len()), data);
    let c = vol.counters.snapshot();
    assert_eq!((c.legacy_reads, c.legacy_writes), (1, 1));
    assert_eq!((c.direct_reads, c.direct_writes), (0, 0));
    vol.dismount();
}

#[test]
fn legacy_fragment_boundaries_with_default_256k_fragments() {
    let (host, vol) = legacy_volume(12 * MIB);
    let frag = 256 * 1024usize;
    let sizes = [
        512usize,
        255 * 1024,
        256 * 1024,
        256 * 1024 + 512,
        2 << 20,
        8 << 20,
    ];
    for (i, &len) in sizes.iter().enumerate() {
        // Start at an odd sector so fragments do not line up with anything else.
        let offset = 512 * 7 + (i as u64) * 4096;
        let data = pattern(100 + i as u64, len);
        host.clear_ops();
        let before = vol.counters.snapshot();
        assert_eq!(write(&vol, offset, &data), (Status::Success, len), "{len}");
        let writes: Vec<usize> = host
            .ops()
            .iter()
            .filter(|o| o.write)
            .map(|o| o.len)
            .collect();
        let mut want = vec![frag; len / frag];
        if len % frag != 0 {
            want.push(len % frag);
        }
        assert_eq!(writes, want, "host writes of a {len}-byte write");
        // Each fragment landed at its own host offset, in order.
        let offs: Vec<u64> = host
            .ops()
            .iter()
            .filter(|o| o.write)
            .map(|o| o.offset)
            .collect();
        for (k, o) in offs.iter().enumerate() {
            assert_eq!(*o, DATA_OFFSET + offset + (k * frag) as u64);
        }
        let (s, n, back) = read(&vol, offset, len as u32);
        assert_eq!((s, n), (Status::Success, len), "{len}");
        assert!(back == data, "read back of {len} bytes differs");
        assert_eq!(get_plain(&host.mem, DATA_OFFSET, offset, len), data);
        let after = vol.counters.snapshot();
        assert_eq!(
            after.legacy_fragments - before.legacy_fragments,
            2 * want.len() as u64,
            "fragments of a {len}-byte write and read"
        );
    }
    vol.dismount();
}

#[test]
fn legacy_invalid_requests_get_invalid_parameter_and_touch_nothing() {
    for gates in [BOTH_OFF, BOTH_ON] {
        let size = 2 * MIB;
        let p = params(size, gates);
        let host = host_for(&p);
        put_plain(&host.mem, DATA_OFFSET, 0, &pattern(5, size as usize));
        let vol = mount(host.clone(), p);
        let snap = host.mem.snapshot();
        let ops_before = host.mem.counters();
        let cases: [(&str, i64, u32); 7] = [
            ("misaligned offset", 100, 512),
            ("misaligned length", 0, 100),
            ("misaligned both", 513, 1000),
            ("past the end", (size - 512) as i64, 1024),
            ("starts at the end", size as i64, 512),
            ("negative offset", -512, 512),
            ("offset overflow", i64::MAX - 511, 1024),
        ];
        for (what, offset, len) in cases {
            for kind in [RequestKind::Read, RequestKind::Write] {
                let buf = Buf::from_slice(&pattern(9, len as usize));
                let c = raw_request(&vol, kind, offset, len, Some(buf));
                assert_eq!(
                    c.status,
                    Status::InvalidParameter,
                    "{what} {kind:?} {gates}"
                );
                assert_eq!(c.information, 0, "{what}");
                // The caller's buffer comes back untouched.
                assert_eq!(
                    c.buf.expect("buffer back").as_slice(),
                    &pattern(9, len as usize)[..]
                );
            }
        }
        assert_eq!(
            host.mem.counters(),
            ops_before,
            "no host operation ({gates})"
        );
        assert!(host.mem.snapshot() == snap, "medium unchanged ({gates})");
        let c = vol.counters.snapshot();
        assert_eq!(c.rejected, 14);
        assert_eq!(
            c.legacy_reads + c.legacy_writes + c.direct_reads + c.direct_writes,
            0
        );
        // A major function the volume does not serve is refused too.
        let c = raw_request(&vol, RequestKind::Other(0x0e), 0, 0, None);
        assert_eq!(c.status, Status::InvalidParameter);
        vol.dismount();
    }
}

#[test]
fn legacy_write_to_read_only_volume_is_media_write_protected() {
    let mut p = params(MIB, BOTH_OFF);
    p.read_only = true;
    let host = host_for(&p);
    put_plain(&host.mem, DATA_OFFSET, 0, &pattern(3, MIB as usize));
    let vol = mount(host.clone(), p);
    let snap = host.mem.snapshot();
    assert_eq!(
        write(&vol, 0, &pattern(4, 4096)),
        (Status::MediaWriteProtected, 0)
    );
    assert!(host.mem.snapshot() == snap);
    let (s, _, back) = read(&vol, 0, 4096);
    assert_eq!(s, Status::Success);
    assert_eq!(back, pattern(3, MIB as usize)[..4096]);
    vol.dismount();
}

#[test]
fn legacy_hidden_volume_protection_refuses_overlap_then_every_write() {
    let size = 4 * MIB;
    let mut p = params(size, BOTH_OFF);
    // Protected host range: volume bytes [2 MiB, 3 MiB).
    let prot = DATA_OFFSET + 2 * MIB..DATA_OFFSET + 3 * MIB;
    p.protected_range = Some(prot.clone());
    let host = host_for(&p);
    let vol = mount(host.clone(), p);
    let a = pattern(1, 8192);
    // Right before the range: allowed.
    assert_eq!(write(&vol, 2 * MIB - 8192, &a), (Status::Success, 8192));
    // Right after the range: allowed.
    assert_eq!(write(&vol, 3 * MIB, &a), (Status::Success, 8192));
    let snap = host.mem.snapshot();
    // Overlapping the last sector before... the first protected sector: refused.
    assert_eq!(
        write(&vol, 2 * MIB - 512, &pattern(2, 1024)),
        (Status::InvalidParameter, 0)
    );
    assert!(
        host.mem.snapshot() == snap,
        "the refused write changed the medium"
    );
    // From now on every write fails, even far from the range.
    for off in [0u64, MIB, 3 * MIB + 65536] {
        assert_eq!(
            write(&vol, off, &pattern(3, 4096)),
            (Status::InvalidParameter, 0),
            "{off}"
        );
    }
    assert!(host.mem.snapshot() == snap);
    // Reads still work, including inside the protected range.
    let (s, _, back) = read(&vol, 2 * MIB - 8192, 8192);
    assert_eq!((s, back), (Status::Success, a.clone()));
    let (s, _, _) = read(&vol, 2 * MIB, 65536);
    assert_eq!(s, Status::Success);
    vol.dismount();
}

/// One submitter, seeded: sequential reads (which the read-ahead serves) interleaved with
/// random writes aimed at the next sequential fragment and random reads.
#[test]
fn legacy_read_ahead_never_returns_stale_data() {
    let size = 8 * MIB;
    let (host, vol) = legacy_volume(size);
    let mut model = pattern(77, size as usize);
    put_plain(&host.mem, DATA_OFFSET, 0, &model);
    let mut rng = StdRng::seed_from_u64(0x5eed_0001);
    let mut seq = 0u64;
    let mut prefetched = 0;
    for step in 0..300u64 {
        let chunk = if rng.gen_bool(0.5) {
            256 * KIB
        } else {
            64 * KIB
        };
        match rng.gen_range(0..4) {
            0 | 1 => {
                if seq + chunk > size {
                    seq = 0;
                }
                if host
                    .ops()
                    .iter()
                    .any(|o| !o.write && o.offset == DATA_OFFSET + seq)
                {
                    prefetched += 1;
                }
                let (s, _, back) = read(&vol, seq, chunk as u32);
                assert_eq!(s, Status::Success);
                assert!(
                    back == model[seq as usize..(seq + chunk) as usize],
                    "step {step}: sequential read at {seq} differs from the model"
                );
                seq += chunk;
            }
            2 => {
                // Usually into the fragment the read-ahead holds.
                let len = 512 * rng.gen_range(1..=64u64);
                let base = if rng.gen_bool(0.7) && seq + len <= size {
                    seq
                } else {
                    512 * rng.gen_range(0..(size - len) / 512)
                };
                let off = (base + 512 * rng.gen_range(0..8)).min(size - len);
                let data = pattern(1000 + step, len as usize);
                assert_eq!(write(&vol, off, &data), (Status::Success, len as usize));
                model[off as usize..(off + len) as usize].copy_from_slice(&data);
            }
            _ => {
                let len = 512 * rng.gen_range(1..=512u64);
                let off = 512 * rng.gen_range(0..(size - len) / 512);
                let (s, _, back) = read(&vol, off, len as u32);
                assert_eq!(s, Status::Success);
                assert!(
                    back == model[off as usize..(off + len) as usize],
                    "step {step}: random read at {off}+{len} differs from the model"
                );
            }
        }
    }
    assert!(prefetched > 0, "the read-ahead was never exercised");
    assert_eq!(get_plain(&host.mem, DATA_OFFSET, 0, size as usize), model);
    vol.dismount();
}

/// 8 submitter threads x 200 operations, each in its own region of the volume (so the model
/// is exact), sizes from one sector to 384 KiB (fragment-crossing), on a legacy-only volume
/// and on a volume with both gates on.
#[test]
fn legacy_many_concurrent_submitters_match_a_reference_model() {
    for gates in [BOTH_OFF, BOTH_ON] {
        let threads = 8u64;
        let region = 2 * MIB;
        let size = threads * region;
        let p = params(size, gates);
        let host = host_for(&p);
        let initial = Arc::new(pattern(7, size as usize));
        put_plain(&host.mem, DATA_OFFSET, 0, &initial);
        let vol = mount(host.clone(), p);
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let vol = Arc::clone(&vol);
                let initial = Arc::clone(&initial);
                std::thread::spawn(move || {
                    let mut rng = StdRng::seed_from_u64(0xC0FFEE + t);
                    let base = t * region;
                    let mut model = initial[base as usize..(base + region) as usize].to_vec();
                    for i in 0..200u64 {
                        // Mostly small; one in five crosses one or two fragments.
                        let sectors = if rng.gen_bool(0.2) { 1..=768u64 } else { 1..=64 };
                        let len = 512 * rng.gen_range(sectors);
                        let off = 512 * rng.gen_range(0..=(region - len) / 512);
                        let range = off as usize..(off + len) as usize;
                        if rng.gen_bool(0.5) {
                            let data = pattern(t << 32 | i, len as usize);
                            assert_eq!(
                                write(&vol, base + off, &data),
                                (Status::Success, len as usize)
                            );
                            model[range].copy_from_slice(&data);
                        } else {
                            let (s, n, back) = read(&vol, base + off, len as u32);
                            assert_eq!((s, n), (Status::Success, len as usize));
                            if back != model[range.clone()] {
                                let bad: Vec<usize> = (0..len as usize / 512)
                                    .filter(|k| back[k * 512..k * 512 + 512] != model[range.start + k * 512..range.start + k * 512 + 512])
                                    .collect();
                                let never_read = bad.iter().filter(|k| unread(&back[**k * 512..**k * 512 + 512])).count();
                                panic!("thread {t} op {i} read {off}+{len} differs ({gates}): bad sectors {} of {}, first {:?} last {:?}, never read {never_read}", bad.len(), len / 512, bad.first(), bad.last());
                            }
                        }
                    }
                    model
                })
            })
            .collect();
        let mut whole = Vec::new();
        for w in workers {
            whole.extend(w.join().expect("submitter"));
        }
        assert!(
            get_plain(&host.mem, DATA_OFFSET, 0, size as usize) == whole,
            "medium differs from the model ({gates})"
        );
        let c = vol.counters.snapshot();
        assert_eq!(
            c.legacy_reads + c.legacy_writes + c.direct_reads + c.direct_writes,
            1600
        );
        if gates == BOTH_OFF {
            assert_eq!(c.direct_reads + c.direct_writes, 0);
        } else {
            assert!(c.direct_reads > 0 && c.direct_writes > 0);
        }
        assert_eq!(vol.disjoint_waits(), 0);
        vol.dismount();
    }
}

/// The XTS data-unit number is the absolute host offset / 512, data-area offset included.
#[test]
fn legacy_data_units_are_numbered_from_the_host_start() {
    for gates in [BOTH_OFF, BOTH_ON] {
        let mut p = params(2 * MIB, gates);
        p.data_offset = 256 * KIB + 3 * 512; // not a multiple of anything larger than a unit
        let host = ProbeHost::new(MemoryHost::new(p.data_offset + p.data_size));
        let plain = pattern(42, 512 * 1024);
        // Encrypted at the host with unit = (data_offset + offset) / 512.
        let c = cipher();
        let mut enc = plain.clone();
        c.encrypt(&mut enc, (p.data_offset + 4096) / 512);
        let mut at = p.data_offset + 4096;
        for chunk in enc.chunks(65536) {
            use vcdirect::platform::HostDevice;
            host.mem.write(at, chunk).unwrap();
            at += chunk.len() as u64;
        }
        let data_offset = p.data_offset;
        let vol = mount(host.clone(), p);
        let (s, _, back) = read(&vol, 4096, plain.len() as u32);
        assert_eq!(s, Status::Success);
        assert!(back == plain, "read with absolute units ({gates})");
        // And the other way: written through the volume, decrypted at the host.
        let data = pattern(43, 8192);
        assert_eq!(write(&vol, 1024 * 1024, &data), (Status::Success, 8192));
        let snap = host.mem.snapshot();
        let start = (data_offset + 1024 * 1024) as usize;
        let mut got = snap[start..start + 8192].to_vec();
        c.decrypt(&mut got, (data_offset + 1024 * 1024) / 512);
        assert_eq!(got, data);
        // A relative numbering (offset / 512) would not decrypt it.
        let mut wrong = snap[start..start + 8192].to_vec();
        c.decrypt(&mut wrong, 1024 * 1024 / 512);
        assert_ne!(wrong, data);
        vol.dismount();
    }
}
