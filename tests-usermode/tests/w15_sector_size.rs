//! docs/review.md W15: a volume's sector size is compared with a raw host's at mount, and a
//! 4,096-byte-sector host serves a 4,096-byte-sector volume on both paths.

mod common;

use common::*;
use vcdirect::platform::{HostKind, HostLimits};
use vcdirect::volume::geometry::{check_sector_size, SECTOR_SIZE_MISMATCH};
use vcdirect_usermode::host::MemoryHost;

fn four_k(size: u64) -> MemoryHost {
    MemoryHost::new(size).with_limits(HostLimits {
        sector_size: 4096,
        ..HostLimits::unlimited()
    })
}

#[test]
fn w15_a_sector_size_mismatch_on_a_raw_host_is_refused() {
    let raw4k = four_k(MIB);
    assert_eq!(check_sector_size(512, &raw4k), Err(SECTOR_SIZE_MISMATCH));
    assert_eq!(check_sector_size(4096, &raw4k), Ok(()));
    let raw512 = MemoryHost::new(MIB);
    assert_eq!(check_sector_size(4096, &raw512), Err(SECTOR_SIZE_MISMATCH));
    assert_eq!(check_sector_size(512, &raw512), Ok(()));
    // A container file's host is a file system: any volume sector size, as in VeraCrypt.
    let file4k = four_k(MIB).with_kind(HostKind::FileContainer);
    assert_eq!(check_sector_size(512, &file4k), Ok(()));
    assert_eq!(SECTOR_SIZE_MISMATCH.ntstatus(), 0xC000_0030);
}

#[test]
fn w15_a_4k_sector_volume_on_a_4k_host_round_trips_on_both_paths() {
    let size = 2 * MIB;
    for gates in [BOTH_ON, BOTH_OFF] {
        let mut p = params(size, gates);
        p.sector_size = 4096;
        let host = ProbeHost::new(four_k(DATA_OFFSET + size));
        assert_eq!(check_sector_size(p.sector_size, &host), Ok(()));
        let vol = mount(host.clone(), p);
        let data = pattern(7, 16384);
        assert_eq!(write(&vol, 8192, &data), (vcdirect::Status::Success, 16384));
        let (status, n, back) = read(&vol, 8192, 16384);
        assert_eq!((status, n), (vcdirect::Status::Success, 16384));
        assert_eq!(back, data);
        // Every host operation was whole, aligned 4 KiB sectors (the host refuses others).
        assert_eq!(host.mem.counters().failures, 0);
        // A 512-byte request on a 4 KiB-sector volume is refused, as VeraCrypt refuses it.
        assert_eq!(read(&vol, 512, 512).0, vcdirect::Status::InvalidParameter);
        vol.dismount();
    }
}
