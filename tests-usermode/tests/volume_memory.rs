//! What a mounted volume holds in buffers: only what its gates and configuration
//! can use, sized by the host, and reported as exactly what was allocated.

mod common;

use common::*;
use vcdirect::direct::WRITE_WINDOWS;
use vcdirect::io::SegmentLimits;
use vcdirect::platform::{HostLimits, RequestKind};
use vcdirect::registry::Gates;
use vcdirect::volume::VolumeMemory;
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;

const PAGE: u64 = 4096;

fn host(max_transfer: u32, pages: u32, alignment_mask: u32) -> HostLimits {
    HostLimits {
        max_transfer,
        max_physical_pages: pages,
        alignment_mask,
        ..HostLimits::unlimited()
    }
}

fn gates(read: bool, write: bool) -> Gates {
    Gates { read, write }
}

/// Mounts an 8 MiB volume on a memory host with `limits`.
fn mount_on(limits: HostLimits, gates: Gates, read_only: bool) -> Vol {
    let mut p = params(8 * MIB, gates);
    p.read_only = read_only;
    let mem = MemoryHost::new(p.data_offset + p.data_size + 64 * KIB).with_limits(limits);
    mount(ProbeHost::new(mem), p)
}

/// The size of one buffer of `len` usable bytes for `limits`: the page (or the alignment the
/// host asks for, if larger) of room to align it.
fn buffer_bytes(len: u64, limits: &HostLimits) -> u64 {
    len + PAGE.max(u64::from(limits.alignment_mask) + 1)
}

/// The detached slots' write bounce buffers: one of `DETACHED_MAX` bytes per host permit.
fn detached_bytes(limits: &HostLimits) -> u64 {
    vcdirect::direct::HOST_OPS as u64
        * buffer_bytes(u64::from(vcdirect::direct::DETACHED_MAX), limits)
}

/// One direct worker's write bounce buffer (usable bytes) and one window of it: a window per
/// segment of a 1 MiB write cut at page offset 0, at most `WRITE_WINDOWS`, each the longest
/// segment rounded up to the buffer alignment.
fn bounce(limits: &HostLimits) -> (u64, u64) {
    let align = PAGE.max(u64::from(limits.alignment_mask) + 1);
    let longest = SegmentLimits::direct(limits, 512).next_len(1 << 20, 0) as u64;
    let window = longest.div_ceil(align) * align;
    let windows = (1u64 << 20).div_ceil(longest).min(WRITE_WINDOWS as u64);
    (windows * window, longest)
}

#[test]
fn read_gate_only_volume_holds_no_direct_bounce_buffer() {
    let limits = host(1 << 20, u32::MAX, 0);
    let vol = mount_on(limits, gates(true, false), false);
    let m = vol.memory();
    assert_eq!(m.direct_bounce, 0, "{m:?}");
    // Its reads still take the direct path, its writes the legacy queue, and both work.
    let data = pattern(7, 256 * 1024);
    assert_eq!(write(&vol, 0, &data), (Status::Success, data.len()));
    let (status, n, back) = read(&vol, 0, data.len() as u32);
    assert_eq!((status, n), (Status::Success, data.len()));
    assert_eq!(back, data);
    let c = vol.counters.snapshot();
    assert_eq!((c.direct_reads, c.direct_writes), (1, 0));
    assert_eq!(c.legacy_writes, 1);
    vol.dismount();

    // With the write gate on as well, 8 worker bounce buffers (on this 1 MiB host, one window
    // of 1 MiB) and the 8 detached slots' buffers.
    let vol = mount_on(limits, gates(true, true), false);
    assert_eq!(
        vol.memory().direct_bounce,
        8 * buffer_bytes(1 << 20, &limits) + detached_bytes(&limits)
    );
    vol.dismount();
    // A read-only volume cannot write directly (R7): no bounce buffer, no fragment buffer.
    let vol = mount_on(limits, gates(true, true), true);
    let m = vol.memory();
    assert_eq!((m.direct_bounce, m.legacy_fragments), (0, 0), "{m:?}");
    vol.dismount();
}

/// The figure is the byte length of each buffer the configuration needs (usable bytes plus
/// the room to align it), counted as it is allocated: 8 worker bounce buffers (up to 4 windows
/// of the largest write segment) and 8 detached slots' (`DETACHED_MAX` each) with direct writes, two fragment buffers, the read-ahead, and the unaligned-read
/// buffer only on a host with an alignment mask.
#[test]
fn memory_figure_matches_the_buffers_mount_allocated() {
    for (limits, bounce_len) in [
        (host(128 << 10, u32::MAX, 0), 4 * (128 << 10)),
        (host(1 << 20, u32::MAX, 511), 1 << 20),
        (host(1 << 20, 33, 4095), 4 * 33 * PAGE),
    ] {
        assert_eq!(bounce(&limits).0, bounce_len, "{limits:?}");
        for (read, write) in [(false, false), (true, false), (true, true)] {
            let vol = mount_on(limits, gates(read, write), false);
            let m = vol.memory();
            let fragment = buffer_bytes(256 * KIB, &limits);
            let expected = VolumeMemory {
                direct_bounce: if write {
                    8 * buffer_bytes(bounce_len, &limits) + detached_bytes(&limits)
                } else {
                    0
                },
                legacy_fragments: 2 * fragment,
                legacy_read_ahead: fragment,
                legacy_unaligned: if limits.alignment_mask != 0 {
                    fragment
                } else {
                    0
                },
            };
            assert_eq!(m, expected, "{limits:?} read {read} write {write}");
            let sum: u64 = m.fields().iter().map(|(_, v)| v).sum();
            assert_eq!(m.total(), sum);
            vol.dismount();
        }
    }
}

/// Hosts with 128 KiB and 1 MiB maximum transfer, odd page limits and alignments: every direct
/// write segment fits the bounce buffer it is encrypted into (a write that did not would fail
/// with STATUS_INSUFFICIENT_RESOURCES), whatever the caller buffer's page offset.
#[test]
fn a_write_segment_never_exceeds_its_bounce_buffer() {
    for limits in [
        host(128 << 10, u32::MAX, 0),
        host(128 << 10, 17, 511),
        host(1 << 20, u32::MAX, 0),
        host(1 << 20, 33, 4095),
        host((1 << 20) - 512, 255, 0),
    ] {
        let p = params(8 * MIB, gates(true, true));
        let mem = MemoryHost::new(p.data_offset + p.data_size + 64 * KIB).with_limits(limits);
        let probe = ProbeHost::new(mem);
        let vol = mount(probe.clone(), p);
        let align = PAGE.max(u64::from(limits.alignment_mask) + 1);
        let (total, longest) = bounce(&limits);
        assert_eq!(
            (vol.memory().direct_bounce - detached_bytes(&limits)) / 8 - align,
            total,
            "{limits:?}"
        );
        assert!(longest <= SegmentLimits::direct(&limits, 512).largest_aligned() as u64);
        let each = longest;
        let align = limits.alignment_mask as usize + 1;
        for (i, len) in [1 << 20, 768 * 1024 + 512, 64 * 1024]
            .into_iter()
            .enumerate()
        {
            let offsets = if align > 1 {
                vec![0]
            } else {
                vec![0, 512, 3584]
            };
            for page_offset in offsets {
                probe.clear_ops();
                let data = pattern(i as u64, len);
                let mut buf = buf_at_page_offset(len, page_offset);
                buf.as_mut_slice().copy_from_slice(&data);
                let before = vol.counters.snapshot().direct_writes;
                let c = raw_request(&vol, RequestKind::Write, 0, len as u32, Some(buf));
                assert_eq!(
                    (c.status, c.information),
                    (Status::Success, len),
                    "{limits:?}"
                );
                assert_eq!(vol.counters.snapshot().direct_writes, before + 1);
                let writes: Vec<_> = probe.ops().into_iter().filter(|o| o.write).collect();
                assert!(!writes.is_empty());
                assert!(writes.iter().all(|o| o.len as u64 <= each), "{writes:?}");
                let (_, _, back) = read(&vol, 0, len as u32);
                assert_eq!(back, data);
            }
        }
        vol.dismount();
    }
}
