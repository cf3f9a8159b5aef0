//! docs/review.md W15: a volume's sector size is compared with a raw host's at mount, and a
//! 4,096-byte-sector host serves a 4,096-byte-sector volume on both paths.

mod common;

use common::*;
use vcdirect::disk_ioctl::code::{DISK_GET_DRIVE_GEOMETRY, DISK_GET_DRIVE_GEOMETRY_EX};
use vcdirect::platform::{HostKind, HostLimits};
use vcdirect::volume::geometry::{
    ask_sector_size, check_sector_size, host_sector_size, SECTOR_SIZE_MISMATCH,
};
use vcdirect::Status;
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

/// A host's answers to the two geometry queries: `Some(sector)` answers with a full reply
/// (DISK_GEOMETRY_EX: 32 bytes, DISK_GEOMETRY: 24; BytesPerSector at offset 20 in both),
/// `None` fails with `status`. Returns the sector-size answer and the codes asked, in order.
fn probe(
    ex: Option<u32>,
    classic: Option<u32>,
    status: Status,
) -> (Result<Option<u32>, Status>, Vec<u32>) {
    let mut asked = Vec::new();
    let answer = ask_sector_size(|code, buf| {
        asked.push(code);
        let (reply, len) = match code {
            DISK_GET_DRIVE_GEOMETRY_EX => (ex, 32),
            DISK_GET_DRIVE_GEOMETRY => (classic, 24),
            _ => (None, 0),
        };
        let sector = reply.ok_or(status)?;
        buf[20..24].copy_from_slice(&sector.to_le_bytes());
        Ok(len)
    });
    (answer, asked)
}

#[test]
fn w15_the_host_is_asked_geometry_ex_first_then_the_older_query() {
    let (ex, classic) = (DISK_GET_DRIVE_GEOMETRY_EX, DISK_GET_DRIVE_GEOMETRY);
    let unsupported = Status::InvalidDeviceRequest;
    // _EX answers: its sector size; the older query is not asked.
    assert_eq!(
        probe(Some(4096), Some(512), unsupported),
        (Ok(Some(4096)), vec![ex])
    );
    // Only the older query answers (the Wine test disk): its sector size, asked second.
    assert_eq!(
        probe(None, Some(4096), unsupported),
        (Ok(Some(4096)), vec![ex, classic])
    );
    // Neither: the second query's status, and a raw host is not mountable with it.
    let (answer, asked) = probe(None, None, Status::Host(0xC000_00BB));
    assert_eq!(asked, vec![ex, classic]);
    assert_eq!(answer, Err(Status::Host(0xC000_00BB)));
    assert_eq!(
        host_sector_size(HostKind::RawDevice, answer),
        Err(Status::Host(0xC000_00BB))
    );
}
