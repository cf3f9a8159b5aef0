//! The mount-time sector-size check (docs/review.md W15).
//!
//! Owns: whether a volume's sector size (from its header) fits the host it is mounted on.
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
