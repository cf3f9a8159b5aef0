//! The mount-time host checks (docs/review.md W11, W15).
//!
//! Owns: whether a volume's sector size (from its header) fits the host it is mounted on, the
//! host's sector size from its geometry answer, and whether a write-protected host makes the
//! mount read-only.
//! VeraCrypt 1.26 refuses to mount a volume on a raw partition or drive whose logical sector
//! size differs from the sector size in the volume header; container files are not checked
//! (their host is a file system, which takes any sector size).

use crate::platform::{HostDevice, HostKind};
use crate::Status;

/// The status a mount gets when the volume's sector size differs from the raw host's:
/// STATUS_INVALID_PARAMETER_MIX (0xC0000030).
pub const SECTOR_SIZE_MISMATCH: Status = Status::Host(0xC000_0030);

/// Refuses a volume whose header sector size differs from the raw host's logical sector size.
pub fn check_sector_size<H: HostDevice>(volume_sector: u32, host: &H) -> Result<(), Status> {
    if host.kind() == HostKind::RawDevice && host.limits().sector_size != volume_sector {
        return Err(SECTOR_SIZE_MISMATCH);
    }
    Ok(())
}

/// The host's logical sector size from its IOCTL_DISK_GET_DRIVE_GEOMETRY answer: `Err` when
/// the query failed, `Ok(None)` when the reply was too short, else its BytesPerSector.
///
/// A raw host must answer, as in VeraCrypt 1.26 (`TCOpenVolume` fails the mount with the
/// query's status when neither IOCTL_DISK_GET_DRIVE_GEOMETRY_EX nor _GEOMETRY succeeds): the
/// query's own status, STATUS_INVALID_DEVICE_REQUEST for a short reply, and
/// [`SECTOR_SIZE_MISMATCH`] for a sector size no volume can have (VeraCrypt's are powers of
/// two from 512 to 4096). A container's host is a file system: 512 unless the handle answers
/// with a valid size (VeraCrypt's file-hosted sector size).
pub fn host_sector_size(
    kind: HostKind,
    answer: Result<Option<u32>, Status>,
) -> Result<u32, Status> {
    let valid = |s: u32| s.is_power_of_two() && (512..=4096).contains(&s);
    match kind {
        HostKind::RawDevice => match answer? {
            None => Err(Status::InvalidDeviceRequest),
            Some(s) if valid(s) => Ok(s),
            Some(_) => Err(SECTOR_SIZE_MISMATCH),
        },
        HostKind::FileContainer => Ok(answer.ok().flatten().filter(|s| valid(*s)).unwrap_or(512)),
    }
}

/// Asks the host its logical sector size through `query` (a device control with no input:
/// the code and the output buffer; the bytes it returned, or its status), as VeraCrypt 1.26
/// does: IOCTL_DISK_GET_DRIVE_GEOMETRY_EX, then IOCTL_DISK_GET_DRIVE_GEOMETRY only when that
/// fails or replies short ([`geometry_answer`]); for [`host_sector_size`].
pub fn ask_sector_size(
    mut query: impl FnMut(u32, &mut [u8]) -> Result<usize, Status>,
) -> Result<Option<u32>, Status> {
    use crate::disk_ioctl::code::{DISK_GET_DRIVE_GEOMETRY, DISK_GET_DRIVE_GEOMETRY_EX};
    use crate::disk_ioctl::layout as at;
    let mut ask = |code: u32, min: usize, at: usize| {
        let mut b = [0u8; 64];
        query(code, &mut b).map(|n| {
            let field = b.get(at..at + 4)?;
            (n >= min).then(|| u32::from_le_bytes([field[0], field[1], field[2], field[3]]))
        })
    };
    let ex = ask(
        DISK_GET_DRIVE_GEOMETRY_EX,
        at::GEOMETRY_EX_FIXED_SIZE,
        at::GEOMETRY_EX_BYTES_PER_SECTOR,
    );
    geometry_answer(ex, || {
        ask(
            DISK_GET_DRIVE_GEOMETRY,
            at::GEOMETRY_SIZE,
            at::GEOMETRY_BYTES_PER_SECTOR,
        )
    })
}

/// The host's sector-size answer as VeraCrypt 1.26 asks (`TCOpenVolume`): the answer to
/// IOCTL_DISK_GET_DRIVE_GEOMETRY_EX when it has one, else (failed or too short) the answer
/// to IOCTL_DISK_GET_DRIVE_GEOMETRY, asked only then; when both fail, the second's status.
pub fn geometry_answer(
    ex: Result<Option<u32>, Status>,
    classic: impl FnOnce() -> Result<Option<u32>, Status>,
) -> Result<Option<u32>, Status> {
    match ex {
        Ok(Some(sector)) => Ok(Some(sector)),
        _ => classic(),
    }
}

/// Whether the host's answer to IOCTL_DISK_IS_WRITABLE makes the mount read-only: a raw host
/// that answers STATUS_MEDIA_WRITE_PROTECTED is mounted read-only (and its volume device gets
/// FILE_READ_ONLY_DEVICE), as VeraCrypt 1.26 does (`TCOpenVolume`:
/// VolumeMountedReadOnlyAfterDeviceWriteProtected). Any other answer, and any container,
/// leaves the mount as asked.
pub fn host_write_protected(kind: HostKind, is_writable: Result<(), Status>) -> bool {
    kind == HostKind::RawDevice && is_writable == Err(Status::MediaWriteProtected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w15_geometry_ex_first_then_the_older_query_and_its_status() {
        let unasked = || -> Result<Option<u32>, Status> { panic!("asked after _EX answered") };
        // _EX answers: the older query is not asked.
        assert_eq!(geometry_answer(Ok(Some(4096)), unasked), Ok(Some(4096)));
        // _EX fails or replies short: the older query's answer, whichever it is.
        for ex in [Err(Status::InvalidDeviceRequest), Ok(None)] {
            assert_eq!(geometry_answer(ex, || Ok(Some(512))), Ok(Some(512)));
            assert_eq!(geometry_answer(ex, || Ok(None)), Ok(None));
        }
        // Both fail: the second's status, and the raw host is not mountable with it.
        let both = geometry_answer(Err(Status::InvalidDeviceRequest), || {
            Err(Status::Host(0xC000_00BB))
        });
        assert_eq!(both, Err(Status::Host(0xC000_00BB)));
        assert_eq!(
            host_sector_size(HostKind::RawDevice, both),
            Err(Status::Host(0xC000_00BB))
        );
    }

    #[test]
    fn w15_a_raw_host_without_geometry_is_not_mountable() {
        let raw = HostKind::RawDevice;
        // The query's own status, not a 512-byte guess.
        assert_eq!(
            host_sector_size(raw, Err(Status::InvalidDeviceRequest)),
            Err(Status::InvalidDeviceRequest)
        );
        assert_eq!(
            host_sector_size(raw, Err(Status::Host(0xC000_00BB))),
            Err(Status::Host(0xC000_00BB))
        );
        assert_eq!(
            host_sector_size(raw, Ok(None)),
            Err(Status::InvalidDeviceRequest)
        );
        assert_eq!(
            host_sector_size(raw, Ok(Some(520))),
            Err(SECTOR_SIZE_MISMATCH)
        );
        assert_eq!(
            host_sector_size(raw, Ok(Some(8192))),
            Err(SECTOR_SIZE_MISMATCH)
        );
        assert_eq!(host_sector_size(raw, Ok(Some(4096))), Ok(4096));
        assert_eq!(host_sector_size(raw, Ok(Some(512))), Ok(512));
    }

    #[test]
    fn w15_a_container_takes_512_unless_its_handle_answers() {
        let file = HostKind::FileContainer;
        assert_eq!(
            host_sector_size(file, Err(Status::InvalidDeviceRequest)),
            Ok(512)
        );
        assert_eq!(host_sector_size(file, Ok(None)), Ok(512));
        assert_eq!(host_sector_size(file, Ok(Some(520))), Ok(512));
        assert_eq!(host_sector_size(file, Ok(Some(4096))), Ok(4096));
    }

    #[test]
    fn w11_a_write_protected_raw_host_mounts_read_only() {
        let raw = HostKind::RawDevice;
        assert!(host_write_protected(raw, Err(Status::MediaWriteProtected)));
        assert!(!host_write_protected(raw, Ok(())));
        // A host that does not know the IOCTL is not write-protected (VeraCrypt: only that
        // status makes the mount read-only).
        assert!(!host_write_protected(
            raw,
            Err(Status::InvalidDeviceRequest)
        ));
        assert!(!host_write_protected(
            HostKind::FileContainer,
            Err(Status::MediaWriteProtected)
        ));
    }
}
