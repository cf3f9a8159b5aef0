//! Opening the host: the build's lookup (`product` or `wine`), then the questions every host
//! is asked (size, sector size, adapter limits) and the description made of the answers.
//!
//! Owns: [`OpenParams`], [`KernelHost::open`], the probe IOCTLs and their defaults. Never:
//! opens or references kernel objects itself (the lookups do).

use super::super::codes::ioctl;
use super::super::layout as at;
#[cfg(not(feature = "wine-host"))]
use super::product;
#[cfg(feature = "wine-host")]
use super::wine;
use super::KernelHost;
use crate::platform::{HostKind, HostLimits};
use crate::Status;

/// StorageAdapterProperty.
const STORAGE_ADAPTER_PROPERTY: u32 = 1;

/// Limits used when the host does not answer IOCTL_STORAGE_QUERY_PROPERTY: 64 KiB transfers
/// (17 pages), sector alignment. Every disk stack of the last twenty years accepts these.
const DEFAULT_MAX_TRANSFER: u32 = 64 * 1024;
const DEFAULT_MAX_PAGES: u32 = 17;

/// What a mount asks of the host open.
pub struct OpenParams<'a> {
    /// Host path (`\Device\HarddiskVolume3`, `\??\C:\vol.hc`), UTF-16 without terminator.
    pub path: &'a [u16],
    /// Open for reading only.
    pub read_only: bool,
    /// Share read/write with other openers (default: exclusive, share mode 0).
    pub shared: bool,
    /// wine-host build: the test disk driver whose first device plays the host.
    pub wine_driver_name: &'a [u16],
}

impl KernelHost {
    /// Opens the host for a mount.
    ///
    /// IRQL: PASSIVE_LEVEL, in the context of the mount IOCTL's caller.
    pub fn open(params: &OpenParams<'_>) -> Result<KernelHost, Status> {
        #[cfg(not(feature = "wine-host"))]
        {
            if !params.wine_driver_name.is_empty() {
                return Err(Status::InvalidParameter);
            }
            product::open(params)
        }
        #[cfg(feature = "wine-host")]
        {
            wine::open(params)
        }
    }

    /// Completes the host description from its answers (shared by both builds).
    pub(super) fn describe(
        kind: HostKind,
        size: u64,
        sector_size: Option<u32>,
        adapter: Option<(u32, u32, u32)>,
    ) -> (u64, HostLimits) {
        let mut limits = HostLimits {
            sector_size: 512,
            max_transfer: DEFAULT_MAX_TRANSFER,
            max_physical_pages: DEFAULT_MAX_PAGES,
            alignment_mask: 511,
            page_size: 4096,
        };
        if let Some(s) = sector_size.filter(|s| s.is_power_of_two() && (512..=4096).contains(s)) {
            limits.sector_size = s;
        }
        if let Some((max_transfer, max_pages, mask)) = adapter {
            if max_transfer >= 4096 {
                limits.max_transfer = max_transfer;
            }
            if max_pages >= 2 {
                limits.max_physical_pages = max_pages;
            }
            if mask < 4096 && (mask + 1).is_power_of_two() {
                limits.alignment_mask = mask;
            }
        }
        let _ = kind;
        (size, limits)
    }
}

/// Reads a little-endian u32 / u64 from a reply buffer.
fn le32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
fn le64(b: &[u8], at: usize) -> Option<u64> {
    let lo = le32(b, at)?;
    let hi = le32(b, at + 4)?;
    Some(u64::from(lo) | (u64::from(hi) << 32))
}

/// The answers of [`probe`]: size, sector size, adapter (max transfer, max pages, mask).
type Probed = (Option<u64>, Option<u32>, Option<(u32, u32, u32)>);

/// Asks the host for its size, sector size and adapter limits through `query` (a device
/// control sent the build's way); `None` where it did not answer.
pub(super) fn probe(
    mut query: impl FnMut(u32, &mut [u8], usize) -> Result<usize, Status>,
) -> Probed {
    let mut b = [0u8; 64];
    let size = query(ioctl::DISK_GET_LENGTH_INFO, &mut b, 0)
        .ok()
        .filter(|n| *n >= at::LENGTH_INFO_SIZE)
        .and_then(|_| le64(&b, at::LENGTH_INFO_LENGTH));
    let mut b = [0u8; 64];
    let sector = query(ioctl::DISK_GET_DRIVE_GEOMETRY, &mut b, 0)
        .ok()
        .filter(|n| *n >= at::GEOMETRY_SIZE)
        .and_then(|_| le32(&b, at::GEOMETRY_BYTES_PER_SECTOR));
    let mut b = [0u8; 64];
    let id = at::PROPERTY_QUERY_ID;
    b[id..id + 4].copy_from_slice(&STORAGE_ADAPTER_PROPERTY.to_le_bytes());
    // QueryType 0 = PropertyStandardQuery (its bytes stay zero).
    let adapter = query(
        ioctl::STORAGE_QUERY_PROPERTY,
        &mut b,
        at::PROPERTY_QUERY_SIZE,
    )
    .ok()
    .filter(|n| *n >= at::ADAPTER_REPLY_MIN)
    .and_then(|_| {
        Some((
            le32(&b, at::ADAPTER_MAX_TRANSFER)?,
            le32(&b, at::ADAPTER_MAX_PAGES)?,
            le32(&b, at::ADAPTER_ALIGNMENT_MASK)?,
        ))
    });
    (size, sector, adapter)
}
