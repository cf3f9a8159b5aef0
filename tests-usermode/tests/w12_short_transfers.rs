//! docs/review.md W12: a host transfer shorter than asked is an error on both paths
//! (STATUS_END_OF_FILE), and a failed fragment or segment stops its request: nothing of it
//! is issued afterwards.

mod common;

use common::*;
use vcdirect::platform::{HostDevice, HostLimits};
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;

const PIECE: u64 = 16 * KIB;

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
        // The second 16 KiB piece of a 64 KiB write comes back 4 KiB short.
        host.mem
            .short_range(DATA_OFFSET + PIECE + 4096..DATA_OFFSET + PIECE + 8192);
        host.clear_ops();
        let (status, n) = write(&vol, 0, &pattern(3, 4 * PIECE as usize));
        assert_eq!((status, n), (Status::EndOfFile, 0), "{name}");
        let after = vol.counters.snapshot();
        if name == "direct" {
            assert_eq!(after.direct_writes - before.direct_writes, 1, "{name}");
        } else {
            assert_eq!(after.legacy_writes - before.legacy_writes, 1, "{name}");
        }
        // Nothing after the failed piece was issued or reached the medium.
        let writes: Vec<_> = host.ops().into_iter().filter(|o| o.write).collect();
        assert!(
            writes.iter().all(|o| o.offset < DATA_OFFSET + 2 * PIECE),
            "{name}: {writes:?}"
        );
        let snap = host.mem.snapshot();
        let later = (DATA_OFFSET + 2 * PIECE) as usize..(DATA_OFFSET + 4 * PIECE) as usize;
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
        let (status, n, _) = read(&vol, 0, 4 * PIECE as u32);
        assert_eq!((status, n), (Status::EndOfFile, 0), "{name}");
        // The legacy I/O thread may read ahead one fragment; nothing of the request itself is
        // issued after the short piece.
        let reads: Vec<_> = host.ops().into_iter().filter(|o| !o.write).collect();
        let past = reads
            .iter()
            .filter(|o| o.offset >= DATA_OFFSET + 2 * PIECE)
            .count();
        assert!(past <= 1, "{name}: {reads:?}");
        host.mem.clear_faults();
        let (status, n, _) = read(&vol, 0, 4 * PIECE as u32);
        assert_eq!((status, n), (Status::Success, 4 * PIECE as usize), "{name}");
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
