//! The direct path through the std host: eligibility (proved by the path counters), R7, no
//! spill under load, segmentation by the host's limits, and the engine's half of R10 (path
//! counters on a sole mount and on two mounts sharing a host).

mod common;

use std::time::Duration;

use common::*;
use vcdirect::platform::{HostKind, HostLimits, RequestKind};
use vcdirect::registry::Gates;
use vcdirect::volume::{CounterSnapshot, LegacyReason, Volume};
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::request::TestRequest;
use vcdirect_usermode::std_platform::StdPlatform;

fn mount_on(mem: MemoryHost, p: vcdirect::volume::MountParams) -> (ProbeHost, Vol) {
    let host = ProbeHost::new(mem);
    (host.clone(), mount(host, p))
}

fn delta(a: &CounterSnapshot, b: &CounterSnapshot) -> CounterSnapshot {
    let mut d = *b;
    d.direct_reads -= a.direct_reads;
    d.direct_writes -= a.direct_writes;
    d.legacy_reads -= a.legacy_reads;
    d.legacy_writes -= a.legacy_writes;
    for i in 0..4 {
        d.legacy_by_reason[i] -= a.legacy_by_reason[i];
    }
    d
}

/// Writes then reads `len` bytes with a buffer at `page_offset`; returns the counter change.
fn round_trip(
    vol: &Vol,
    offset: u64,
    len: usize,
    page_offset: usize,
    seed: u64,
) -> CounterSnapshot {
    round_trip_checked(vol, offset, len, page_offset, seed, true)
}

fn round_trip_checked(
    vol: &Vol,
    offset: u64,
    len: usize,
    page_offset: usize,
    seed: u64,
    check_read: bool,
) -> CounterSnapshot {
    let before = vol.counters.snapshot();
    let data = pattern(seed, len);
    let mut wbuf = buf_at_page_offset(len, page_offset);
    wbuf.as_mut_slice().copy_from_slice(&data);
    let c = raw_request(
        vol,
        RequestKind::Write,
        offset as i64,
        len as u32,
        Some(wbuf),
    );
    assert_eq!(
        (c.status, c.information),
        (Status::Success, len),
        "write {len}@{page_offset}"
    );
    let rbuf = buf_at_page_offset(len, page_offset);
    let c = raw_request(
        vol,
        RequestKind::Read,
        offset as i64,
        len as u32,
        Some(rbuf),
    );
    if check_read {
        assert_eq!(
            (c.status, c.information),
            (Status::Success, len),
            "read {len}@{page_offset}"
        );
        assert!(c.buf.unwrap().as_slice() == &data[..], "read back differs");
    }
    delta(&before, &vol.counters.snapshot())
}

#[test]
fn direct_eligibility_rules_show_in_the_path_counters() {
    use LegacyReason::*;
    let size = 4 * MIB;
    let raw = || MemoryHost::new(DATA_OFFSET + size);
    let g = |read, write| Gates { read, write };

    // (what, host, gates, length, buffer page offset, want: direct reads, direct writes,
    //  legacy reason of the legacy ones)
    type Case = (
        &'static str,
        MemoryHost,
        Gates,
        usize,
        usize,
        (u64, u64),
        Option<LegacyReason>,
    );
    let cases: Vec<Case> = vec![
        (
            "gates off",
            raw(),
            g(false, false),
            65536,
            0,
            (0, 0),
            Some(GateOff),
        ),
        (
            "read gate only",
            raw(),
            g(true, false),
            65536,
            0,
            (1, 0),
            Some(GateOff),
        ),
        (
            "write gate only",
            raw(),
            g(false, true),
            65536,
            0,
            (0, 1),
            Some(GateOff),
        ),
        ("both gates", raw(), g(true, true), 65536, 0, (1, 1), None),
        (
            "file container",
            raw().with_kind(HostKind::FileContainer),
            g(true, true),
            65536,
            0,
            (0, 0),
            Some(FileContainer),
        ),
        (
            "exactly 1 MiB",
            raw(),
            g(true, true),
            1 << 20,
            0,
            (1, 1),
            None,
        ),
        (
            "1 MiB + 512",
            raw(),
            g(true, true),
            (1 << 20) + 512,
            0,
            (0, 0),
            Some(TooLarge),
        ),
        (
            "sector-aligned buffer on a 512-aligned host",
            raw().with_limits(HostLimits {
                alignment_mask: 511,
                ..HostLimits::unlimited()
            }),
            g(true, true),
            65536,
            512,
            (1, 1),
            None,
        ),
        (
            "buffer 8 bytes into a page on a 512-aligned host",
            raw().with_limits(HostLimits {
                alignment_mask: 511,
                ..HostLimits::unlimited()
            }),
            g(true, true),
            65536,
            8,
            (0, 0),
            Some(UnalignedBuffer),
        ),
    ];
    for (what, mem, gates, len, page_offset, (dr, dw), reason) in cases {
        let (_host, vol) = mount_on(mem, params(size, gates));
        // A legacy read into a buffer the host's alignment mask refuses fails at the host
        // (see `legacy_read_into_a_buffer_the_host_cannot_take_succeeds`); only its routing
        // is checked here.
        let check_read = reason != Some(UnalignedBuffer);
        let d = round_trip_checked(&vol, 8192, len, page_offset, 1, check_read);
        assert_eq!((d.direct_reads, d.direct_writes), (dr, dw), "{what}");
        let legacy = 2 - dr - dw;
        assert_eq!(d.legacy_reads + d.legacy_writes, legacy, "{what}");
        for r in LegacyReason::ALL {
            let want = if Some(r) == reason { legacy } else { 0 };
            assert_eq!(by_reason(&d, r), want, "{what}: reason {}", r.name());
        }
        vol.dismount();
    }
}

/// A request whose buffer fails the host's alignment
/// mask is routed to the legacy queue (reason `unaligned_buffer`), which reads such pieces
/// into its own aligned buffer and copies them out (writes go through its aligned fragment
/// buffers), so a host that enforces its alignment mask serves them.
#[test]
fn legacy_read_into_a_buffer_the_host_cannot_take_succeeds() {
    let size = 2 * MIB;
    let mem = MemoryHost::new(DATA_OFFSET + size).with_limits(HostLimits {
        alignment_mask: 511,
        ..HostLimits::unlimited()
    });
    let (_host, vol) = mount_on(mem, params(size, BOTH_ON));
    let d = round_trip(&vol, 8192, 65536, 8, 1);
    assert_eq!(by_reason(&d, LegacyReason::UnalignedBuffer), 2);
    vol.dismount();
}

#[test]
fn r7_read_only_hidden_and_protected_volumes_keep_writes_and_flushes_legacy() {
    let size = 2 * MIB;
    // (what, read_only, hidden, protected)
    let cases = [
        ("writable outer", false, false, false),
        ("read-only", true, false, false),
        ("hidden", false, true, false),
        ("outer with hidden-volume protection", false, false, true),
    ];
    for (what, read_only, hidden, protect) in cases {
        let mut p = params(size, BOTH_ON);
        p.read_only = read_only;
        p.hidden = hidden;
        if protect {
            p.protected_range = Some(DATA_OFFSET + MIB + 65536..DATA_OFFSET + 2 * MIB);
        }
        let (host, vol) = mount_on(MemoryHost::new(DATA_OFFSET + size), p);
        let e = vol.effective();
        let direct_write = !(read_only || hidden || protect);
        assert!(e.direct_read, "{what}: reads stay direct");
        assert_eq!(
            e.direct_write, direct_write,
            "{what}: direct-write configured"
        );
        // A write outside any protected range.
        let (s, _) = write(&vol, 0, &pattern(1, 65536));
        let c = vol.counters.snapshot();
        if read_only {
            assert_eq!(s, Status::MediaWriteProtected, "{what}");
            assert_eq!(c.legacy_writes + c.direct_writes, 0, "{what}");
        } else if direct_write {
            assert_eq!(s, Status::Success);
            assert_eq!((c.direct_writes, c.legacy_writes), (1, 0), "{what}");
        } else {
            assert_eq!(s, Status::Success, "{what}");
            assert_eq!((c.direct_writes, c.legacy_writes), (0, 1), "{what}");
            assert_eq!(by_reason(&c, LegacyReason::GateOff), 1, "{what}");
        }
        let (s, _, _) = read(&vol, 0, 65536);
        assert_eq!(s, Status::Success);
        assert_eq!(vol.counters.snapshot().direct_reads, 1, "{what}");
        // Flush: VeraCrypt's immediate success unless writes really are direct.
        let c = wait(&submit(&vol, TestRequest::flush));
        assert_eq!(c.status, Status::Success);
        let c = vol.counters.snapshot();
        if direct_write {
            assert_eq!((c.direct_flushes, c.immediate_flushes), (1, 0), "{what}");
            assert_eq!(host.mem.counters().flushes, 1, "{what}");
        } else {
            assert_eq!((c.direct_flushes, c.immediate_flushes), (0, 1), "{what}");
            assert_eq!(host.mem.counters().flushes, 0, "{what}");
        }
        // A host that cannot flush: the flush that reached it fails with its status; one that
        // completes at once (VeraCrypt's legacy flush) never asks it.
        host.mem.fail_flushes(Some(Status::IoDeviceError));
        let c = wait(&submit(&vol, TestRequest::flush));
        let want = if direct_write {
            Status::IoDeviceError
        } else {
            Status::Success
        };
        assert_eq!(c.status, want, "{what}: a flush the host failed");
        host.mem.fail_flushes(None);
        vol.dismount();
    }
}

#[test]
fn direct_no_spill_under_load_64_requests_all_direct_8_in_flight() {
    for write_round in [false, true] {
        let size = 8 * MIB;
        let mem = MemoryHost::new(DATA_OFFSET + size).with_latency(Duration::from_millis(20));
        let (host, vol) = mount_on(mem, params(size, BOTH_ON));
        // Built first, then dispatched back to back.
        let (requests, rxs): (Vec<_>, Vec<_>) = (0..64u64)
            .map(|i| {
                let off = i * 65536;
                let (tx, rx) = std::sync::mpsc::channel();
                let done = move |c| {
                    let _ = tx.send(c);
                };
                let req = if write_round {
                    TestRequest::write(off, &pattern(i, 65536), done)
                } else {
                    TestRequest::read(off, 65536, done)
                };
                (req, rx)
            })
            .unzip();
        for req in requests {
            vol.dispatch(req);
        }
        for rx in &rxs {
            let c = wait(rx);
            assert_eq!((c.status, c.information), (Status::Success, 65536));
        }
        let c = vol.counters.snapshot();
        let direct = if write_round {
            c.direct_writes
        } else {
            c.direct_reads
        };
        assert_eq!(direct, 64, "every eligible request went direct");
        assert_eq!(
            c.legacy_reads + c.legacy_writes,
            0,
            "nothing spilled to legacy"
        );
        assert_eq!(c.legacy_by_reason, [0; 4]);
        assert_eq!(
            c.direct_in_flight_max, 8,
            "exactly 8 in flight at the peak (writes: {write_round})"
        );
        assert!(c.slot_waits > 0, "requests waited for a slot");
        assert!(
            host.in_flight_max() <= 8,
            "host saw {}",
            host.in_flight_max()
        );
        assert_eq!(vol.disjoint_waits(), 0);
        vol.dismount();
    }
}

fn pages_spanned(op: &Op) -> usize {
    (op.addr % 4096 + op.len).div_ceil(4096)
}

#[test]
fn direct_segments_respect_max_transfer_pages_and_alignment() {
    let size = 4 * MIB;
    let lim = |max_transfer, pages, mask| HostLimits {
        sector_size: 512,
        max_transfer,
        max_physical_pages: pages,
        alignment_mask: mask,
        page_size: 4096,
    };
    // (what, limits, request length, buffer page offset, expected read segment sizes)
    let cases: Vec<(&str, HostLimits, usize, usize, Vec<usize>)> = vec![
        (
            "64 KiB max transfer",
            lim(64 << 10, u32::MAX, 0),
            1 << 20,
            0,
            vec![64 << 10; 16],
        ),
        (
            "128 KiB max transfer",
            lim(128 << 10, u32::MAX, 0),
            1 << 20,
            0,
            vec![128 << 10; 8],
        ),
        (
            "128 KiB max transfer, odd length",
            lim(128 << 10, u32::MAX, 0),
            (300 << 10) + 512,
            0,
            vec![128 << 10, 128 << 10, (44 << 10) + 512],
        ),
        (
            "17 pages, buffer at page offset 512",
            lim(1 << 20, 17, 0),
            256 << 10,
            512,
            // The first segment ends on a page boundary; the rest start on one.
            vec![
                17 * 4096 - 512,
                17 * 4096,
                17 * 4096,
                (256 << 10) - (3 * 17 * 4096 - 512),
            ],
        ),
        (
            "17 pages, buffer at page offset 3584",
            lim(1 << 20, 17, 511),
            200 << 10,
            3584,
            vec![
                17 * 4096 - 3584,
                17 * 4096,
                (200 << 10) - (2 * 17 * 4096 - 3584),
            ],
        ),
        (
            "4 KiB alignment, 100.5 KiB max transfer",
            lim((100 << 10) + 512, u32::MAX, 4095),
            256 << 10,
            0,
            vec![100 << 10, 100 << 10, 56 << 10],
        ),
        (
            // Splits fall on 4 KiB boundaries; the 100.5 KiB left is taken whole.
            "4 KiB alignment, 100.5 KiB max transfer, the rest whole",
            lim((100 << 10) + 512, u32::MAX, 4095),
            (200 << 10) + 512,
            0,
            vec![100 << 10, (100 << 10) + 512],
        ),
        (
            "4 KiB alignment, 17 pages, the rest whole",
            lim(1 << 20, 17, 4095),
            (200 << 10) + 512,
            0,
            vec![68 << 10, 68 << 10, (64 << 10) + 512],
        ),
    ];
    for (what, limits, len, page_offset, want_reads) in cases {
        let mem = MemoryHost::new(DATA_OFFSET + size).with_limits(limits);
        let (host, vol) = mount_on(mem, params(size, BOTH_ON));
        let offset = 3 * 512;
        let data = pattern(len as u64, len);
        let mut wbuf = buf_at_page_offset(len, page_offset);
        wbuf.as_mut_slice().copy_from_slice(&data);
        let c = raw_request(
            &vol,
            RequestKind::Write,
            offset as i64,
            len as u32,
            Some(wbuf),
        );
        assert_eq!(c.status, Status::Success, "{what}: write");
        let writes: Vec<Op> = host.ops();
        host.clear_ops();
        let c = raw_request(
            &vol,
            RequestKind::Read,
            offset as i64,
            len as u32,
            Some(buf_at_page_offset(len, page_offset)),
        );
        assert_eq!(c.status, Status::Success, "{what}: read");
        assert!(
            c.buf.unwrap().as_slice() == &data[..],
            "{what}: read back differs"
        );
        assert_eq!(
            get_plain(&host.mem, DATA_OFFSET, offset, len),
            data,
            "{what}"
        );
        let reads = host.ops();
        let c = vol.counters.snapshot();
        assert_eq!(
            (c.direct_reads, c.direct_writes),
            (1, 1),
            "{what}: both went direct"
        );
        assert_eq!(
            reads.iter().map(|o| o.len).collect::<Vec<_>>(),
            want_reads,
            "{what}: read segments"
        );
        for (ops, dir) in [(&reads, "read"), (&writes, "write")] {
            let mut at = DATA_OFFSET + offset;
            for op in ops.iter() {
                assert_eq!(op.offset, at, "{what}: {dir} segments are contiguous");
                at += op.len as u64;
                assert!(
                    op.len <= limits.max_transfer as usize,
                    "{what}: {dir} {op:?}"
                );
                assert!(
                    pages_spanned(op) <= limits.max_physical_pages as usize,
                    "{what}: {dir} segment spans {} pages: {op:?}",
                    pages_spanned(op)
                );
                assert_eq!(
                    op.addr & limits.alignment_mask as usize,
                    0,
                    "{what}: {dir} {op:?}"
                );
                assert_eq!(op.len % 512, 0);
            }
            assert_eq!(
                at,
                DATA_OFFSET + offset + len as u64,
                "{what}: {dir} covers it all"
            );
        }
        assert_eq!(
            host.mem.counters().failures,
            0,
            "{what}: the host refused nothing"
        );
        vol.dismount();
    }
}

/// R10, the engine's half only: the direct path serves a volume whether it is alone on its
/// host (one writable mount) or shares the host with another mount (two read-only mounts of one
/// medium at once), as the path counters show. The std host has no handles and no share modes:
/// how the product opens the host (exclusively, or shared for a read-only mount) is glue code
/// this test does not run.
#[test]
fn r10_path_counters_show_direct_io_on_a_sole_mount_and_on_two_mounts_sharing_a_host() {
    let size = 2 * MIB;
    // Alone on its host, writable.
    let (_host, vol) = mount_on(MemoryHost::new(DATA_OFFSET + size), params(size, BOTH_ON));
    let d = round_trip(&vol, 0, 65536, 0, 5);
    assert_eq!((d.direct_reads, d.direct_writes), (1, 1), "sole mount");
    assert_eq!(d.legacy_reads + d.legacy_writes, 0, "sole mount");
    vol.dismount();

    // Sharing: one medium, two read-only mounts at once.
    let shared = ProbeHost::new(MemoryHost::new(DATA_OFFSET + size));
    put_plain(&shared.mem, DATA_OFFSET, 0, &pattern(6, size as usize));
    let mut p = params(size, BOTH_ON);
    p.read_only = true;
    let a = mount(shared.clone(), p.clone());
    let b = mount(shared.clone(), p);
    for (name, vol) in [("first shared mount", &a), ("second shared mount", &b)] {
        let (s, _, back) = read(vol, 65536, 131072);
        assert_eq!(s, Status::Success, "{name}");
        assert!(back == pattern(6, size as usize)[65536..196608], "{name}");
        let c = vol.counters.snapshot();
        assert_eq!((c.direct_reads, c.legacy_reads), (1, 0), "{name}");
    }
    a.dismount();
    b.dismount();
}

/// A 512-byte-sector host with a 4 KiB alignment (mask 4095) takes a 6,144-byte transfer into
/// an aligned buffer whole: the alignment constrains where a request is split, not the length
/// of one the host can take whole. 100 direct reads (and writes) of 6,144 bytes are 100 host
/// reads (writes), not 200 (4,096 + 2,048 each).
#[test]
fn an_aligned_6144_byte_request_is_one_host_operation_on_a_4k_aligned_host() {
    let size = 4 * MIB;
    let mem = MemoryHost::new(DATA_OFFSET + size).with_limits(HostLimits {
        alignment_mask: 4095,
        ..HostLimits::unlimited()
    });
    let (host, vol) = mount_on(mem, params(size, BOTH_ON));
    let len = 6144usize;
    let data: Vec<Vec<u8>> = (0..100u64).map(|i| pattern(i, len)).collect();
    for (i, d) in data.iter().enumerate() {
        let mut buf = buf_at_page_offset(len, 0);
        buf.as_mut_slice().copy_from_slice(d);
        let c = raw_request(
            &vol,
            RequestKind::Write,
            (i * 8192) as i64,
            len as u32,
            Some(buf),
        );
        assert_eq!((c.status, c.information), (Status::Success, len));
    }
    let writes = host.ops();
    host.clear_ops();
    for (i, d) in data.iter().enumerate() {
        let c = raw_request(
            &vol,
            RequestKind::Read,
            (i * 8192) as i64,
            len as u32,
            Some(buf_at_page_offset(len, 0)),
        );
        assert_eq!((c.status, c.information), (Status::Success, len));
        assert!(c.buf.unwrap().as_slice() == &d[..], "read {i} differs");
    }
    let reads = host.ops();
    let c = vol.counters.snapshot();
    assert_eq!((c.direct_reads, c.direct_writes), (100, 100));
    assert_eq!(c.legacy_reads + c.legacy_writes, 0);
    for (ops, dir) in [(&writes, "write"), (&reads, "read")] {
        assert_eq!(ops.len(), 100, "host {dir}s: {}", ops.len());
        assert!(ops.iter().all(|o| o.len == len && o.addr % 4096 == 0));
    }
    assert_eq!(host.mem.counters().failures, 0);
    vol.dismount();
}

/// A worker keeps several segments of its request in flight together, within
/// the volume's cap of `HOST_OPS` host operations: a lone 1 MiB read on a 128 KiB host has all
/// 8 segments at the host at once, a lone 1 MiB write its `WRITE_WINDOWS` (4) at once, and 16
/// concurrent 1 MiB requests never put more than 8 operations at the host. The data round-trips.
#[test]
fn direct_segments_of_a_request_in_flight_together_within_the_cap() {
    use vcdirect::direct::{HOST_OPS, WRITE_WINDOWS};
    let size = 32 * MIB;
    let limits = HostLimits {
        max_transfer: 128 << 10,
        ..HostLimits::unlimited()
    };
    let mem = MemoryHost::new(DATA_OFFSET + size).with_limits(limits);
    let (host, vol) = mount_on(mem, params(size, BOTH_ON));
    let data = pattern(5, MIB as usize);
    assert_eq!(write(&vol, 0, &data), (Status::Success, data.len()));
    assert_eq!(host.in_flight_max(), WRITE_WINDOWS, "a lone write");
    let (status, n, back) = read(&vol, 0, MIB as u32);
    assert_eq!((status, n), (Status::Success, data.len()));
    assert_eq!(back, data);
    assert_eq!(
        host.in_flight_max(),
        HOST_OPS,
        "a lone read: 8 segments at once"
    );
    assert_eq!(vol.counters.snapshot().direct_segments, 16);
    // 16 concurrent 1 MiB requests, reads and writes, at different offsets.
    let rxs: Vec<_> = (0..16u64)
        .map(|i| {
            if i % 2 == 0 {
                submit_write(&vol, (i + 1) * MIB, &pattern(i, MIB as usize))
            } else {
                submit_read(&vol, 0, MIB as u32)
            }
        })
        .collect();
    for rx in &rxs {
        let c = wait(rx);
        assert_eq!((c.status, c.information), (Status::Success, MIB as usize));
    }
    assert!(
        host.in_flight_max() <= HOST_OPS,
        "host saw {}",
        host.in_flight_max()
    );
    assert!(vol.direct_host_ops_max() <= HOST_OPS);
    for i in (0..16u64).step_by(2) {
        let (_, _, back) = read(&vol, (i + 1) * MIB, MIB as u32);
        assert_eq!(back, pattern(i, MIB as usize), "write {i}");
    }
    vol.dismount();
}

/// A request alone on the volume splits its crypto across the encryption pool (the other
/// CPUs have nothing of the volume's to do); a small one, or one that finds another host
/// operation in flight, runs its crypto on its worker. The bytes round-trip either way.
#[test]
fn a_lone_large_request_splits_its_crypto_across_the_pool_a_busy_one_does_not() {
    let size = 8 * MIB;
    let platform = StdPlatform::<ProbeHost>::new(0).with_cpus(2);
    let p = params(size, BOTH_ON);
    let host = host_for(&p);
    let key = key_area();
    let vol = Volume::mount(
        platform.clone(),
        host.clone(),
        &key[..p.algorithm.key_len()],
        p,
    )
    .expect("mount");
    let splits = || platform.crypto_splits();
    let data = pattern(31, MIB as usize);
    let before = splits();
    assert_eq!(write(&vol, 0, &data), (Status::Success, data.len()));
    assert_eq!(splits(), before + 1, "a lone 1 MiB write");
    let (status, n, back) = read(&vol, 0, MIB as u32);
    assert_eq!((status, n), (Status::Success, data.len()));
    assert_eq!(back, data);
    assert_eq!(splits(), before + 2, "a lone 1 MiB read");
    let (status, _, back) = read(&vol, 0, 4096);
    assert_eq!((status, &back[..]), (Status::Success, &data[..4096]));
    assert_eq!(splits(), before + 2, "a 4 KiB read is not worth a hand-off");

    // A 64 KiB read the host holds (a worker waits for it), then a 1 MiB read: not alone.
    // Both are in the host before it lets them go.
    let in_flight = |n: usize| {
        let host = host.clone();
        with_watchdog(
            Duration::from_secs(10),
            "the host never saw the reads",
            move || {
                while host.in_flight() < n {
                    std::thread::sleep(Duration::from_millis(1));
                }
            },
        )
    };
    host.hold();
    let held = submit_read(&vol, 2 * MIB, 64 << 10);
    in_flight(1);
    let busy = submit_read(&vol, 0, MIB as u32);
    in_flight(2);
    host.release();
    let c = wait(&held);
    assert_eq!((c.status, c.information), (Status::Success, 64 << 10));
    let c = wait(&busy);
    assert_eq!((c.status, c.information), (Status::Success, MIB as usize));
    assert_eq!(
        splits(),
        before + 2,
        "a request beside another host operation"
    );
    vol.dismount();
}
