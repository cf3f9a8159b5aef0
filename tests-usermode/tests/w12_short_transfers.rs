//! docs/review.md W12: a host transfer shorter than asked is an error on both paths
//! (STATUS_END_OF_FILE), and a failed fragment or segment stops its request: nothing of it
//! is issued once the failure is seen. The legacy queue moves one fragment at a time; the
//! direct path keeps up to `HOST_OPS` segments of a request in flight together, so those
//! issued before the failed one came back may still reach the host, and nothing later does.

mod common;

use common::*;
use vcdirect::direct::{HOST_OPS, WRITE_WINDOWS};
use vcdirect::platform::{HostDevice, HostLimits};
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;

const PIECE: u64 = 16 * KIB;
/// Pieces per request: more than the direct path keeps in flight.
const PIECES: u64 = 2 * HOST_OPS as u64;

/// Pieces that may reach the host when the second one fails (index 1): the legacy queue stops
/// after it; a direct worker may have the ones after it in flight already: for a read up to
/// `HOST_OPS` - 1 (it issued one more when the first came back), for a write up to its other
/// `WRITE_WINDOWS` - 1 windows.
fn issued_at_most(name: &str, write: bool) -> u64 {
    match (name, write) {
        ("direct", false) => 1 + HOST_OPS as u64,
        ("direct", true) => 1 + WRITE_WINDOWS as u64,
        _ => 2,
    }
}

/// A volume whose requests are cut into 16 KiB host transfers on both paths.
fn volume(gates: vcdirect::registry::Gates) -> (ProbeHost, Vol) {
    let size = MIB;
    let mem = MemoryHost::new(DATA_OFFSET + size).with_limits(HostLimits {
        max_transfer: PIECE as u32,
        ..HostLimits::unlimited()
    });
    let host = ProbeHost::new(mem);
    let vol = mount(
        host.clone(),
        with_fragment(params(size, gates), PIECE as u32),
    );
    (host, vol)
}

#[test]
fn w12_a_short_host_write_fails_its_request_and_stops_it_on_both_paths() {
    for (name, gates) in [("legacy", BOTH_OFF), ("direct", BOTH_ON)] {
        let (host, vol) = volume(gates);
        let before = vol.counters.snapshot();
        // The second 16 KiB piece of a 256 KiB write comes back 4 KiB short.
        host.mem
            .short_range(DATA_OFFSET + PIECE + 4096..DATA_OFFSET + PIECE + 8192);
        host.clear_ops();
        let (status, n) = write(&vol, 0, &pattern(3, (PIECES * PIECE) as usize));
        assert_eq!((status, n), (Status::EndOfFile, 0), "{name}");
        let after = vol.counters.snapshot();
        if name == "direct" {
            assert_eq!(after.direct_writes - before.direct_writes, 1, "{name}");
        } else {
            assert_eq!(after.legacy_writes - before.legacy_writes, 1, "{name}");
        }
        // Nothing was issued or reached the medium once the failed piece came back.
        let bound = DATA_OFFSET + issued_at_most(name, true) * PIECE;
        let writes: Vec<_> = host.ops().into_iter().filter(|o| o.write).collect();
        assert!(
            writes.iter().all(|o| o.offset < bound),
            "{name}: {writes:?}"
        );
        let snap = host.mem.snapshot();
        let later = bound as usize..(DATA_OFFSET + PIECES * PIECE) as usize;
        assert!(snap[later].iter().all(|b| *b == 0), "{name}");
        vol.dismount();
    }
}

#[test]
fn w12_a_short_host_read_fails_its_request_and_stops_it_on_both_paths() {
    for (name, gates) in [("legacy", BOTH_OFF), ("direct", BOTH_ON)] {
        let (host, vol) = volume(gates);
        host.mem
            .short_range(DATA_OFFSET + PIECE + 4096..DATA_OFFSET + PIECE + 8192);
        host.clear_ops();
        let (status, n, _) = read(&vol, 0, (PIECES * PIECE) as u32);
        assert_eq!((status, n), (Status::EndOfFile, 0), "{name}");
        // The legacy I/O thread may read ahead one fragment; nothing of the request itself is
        // issued once the short piece came back.
        let reads: Vec<_> = host.ops().into_iter().filter(|o| !o.write).collect();
        let past = reads
            .iter()
            .filter(|o| o.offset >= DATA_OFFSET + issued_at_most(name, false) * PIECE)
            .count();
        assert!(past <= 1, "{name}: {reads:?}");
        if name == "direct" {
            assert_eq!(past, 0, "{name}: {reads:?}");
        }
        host.mem.clear_faults();
        let (status, n, _) = read(&vol, 0, (PIECES * PIECE) as u32);
        assert_eq!(
            (status, n),
            (Status::Success, (PIECES * PIECE) as usize),
            "{name}"
        );
        vol.dismount();
    }
}

#[test]
fn w12_the_short_transfer_fault_mode_reports_the_bytes_it_moved() {
    let mem = MemoryHost::new(MIB);
    mem.short_range(8192..12288);
    let data = vec![7u8; 16384];
    assert_eq!(mem.write(0, &data), Ok(8192));
    assert_eq!(mem.write(8192, &data[..4096]), Ok(0));
    assert_eq!(mem.write(12288, &data[..4096]), Ok(4096));
    let mut back = vec![0u8; 16384];
    assert_eq!(mem.read(0, &mut back), Ok(8192));
    mem.clear_faults();
    assert_eq!(mem.read(0, &mut back), Ok(16384));
    assert_eq!(&back[..8192], &data[..8192]);
    assert!(back[8192..12288].iter().all(|b| *b == 0));
}
