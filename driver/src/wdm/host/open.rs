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
use crate::volume::geometry::{ask_sector_size, host_sector_size, host_write_protected};
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
    /// This driver's object: a host device of this driver is one of its own volumes, which
    /// may not be the raw host of another (`crate::volume::host_type`).
    pub own_driver: *const wdk_sys::DRIVER_OBJECT,
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

    /// Completes the host description from its answers (shared by both builds): its size and
    /// limits, and whether it said it is write-protected (W11). A raw host that did not
    /// answer the geometry query is not mountable (`host_sector_size`: the query's status).
    pub(super) fn describe(&mut self, size: Option<u64>, probed: Probed) -> Result<(), Status> {
        if probed.starved {
            return Err(Status::InsufficientResources);
        }
        let kind = self.kind;
        let size = size.ok_or(Status::InvalidDeviceRequest)?;
        let mut limits = HostLimits {
            sector_size: host_sector_size(kind, probed.sector)?,
            max_transfer: DEFAULT_MAX_TRANSFER,
            max_physical_pages: DEFAULT_MAX_PAGES,
            alignment_mask: 511,
            page_size: 4096,
        };
        if let Some((max_transfer, max_pages, mask)) = probed.adapter {
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
        self.size = size;
        self.limits = limits;
        self.write_protected = host_write_protected(kind, probed.is_writable);
        Ok(())
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

/// The answers of [`probe`].
pub(super) struct Probed {
    /// The size (IOCTL_DISK_GET_LENGTH_INFO), `None` without an answer.
    pub size: Option<u64>,
    /// BytesPerSector of IOCTL_DISK_GET_DRIVE_GEOMETRY_EX, or when that fails of
    /// IOCTL_DISK_GET_DRIVE_GEOMETRY (`geometry_answer`): `Ok(None)` for a short reply, or the
    /// second query's status.
    pub sector: Result<Option<u32>, Status>,
    /// Max transfer, max pages, alignment mask (IOCTL_STORAGE_QUERY_PROPERTY).
    pub adapter: Option<(u32, u32, u32)>,
    /// IOCTL_DISK_IS_WRITABLE's status (raw hosts only; a container is not asked: `Ok`).
    pub is_writable: Result<(), Status>,
    /// Some query failed with STATUS_INSUFFICIENT_RESOURCES: the answers are incomplete.
    pub starved: bool,
}

/// Asks the host for its size, sector size, adapter limits and (a raw host) whether it is
/// writable through `query` (a device control sent the build's way).
pub(super) fn probe(
    kind: HostKind,
    mut query: impl FnMut(u32, &mut [u8], usize) -> Result<usize, Status>,
) -> Probed {
    // W6: a query that could not be sent for want of memory (our request's event or IRP, or
    // the host's own) is no answer from the host: the mount fails rather than guess its size,
    // sector size or limits (`describe`).
    let mut starved = false;
    let mut query = |code: u32, buf: &mut [u8], input: usize| {
        let answer = query(code, buf, input);
        starved |= answer == Err(Status::InsufficientResources);
        answer
    };
    let mut b = [0u8; 64];
    let size = query(ioctl::DISK_GET_LENGTH_INFO, &mut b, 0)
        .ok()
        .filter(|n| *n >= at::LENGTH_INFO_SIZE)
        .and_then(|_| le64(&b, at::LENGTH_INFO_LENGTH));
    // W15: as VeraCrypt 1.26 asks, _EX first, the older query only when that fails.
    let sector = ask_sector_size(|code, buf| query(code, buf, 0));
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
    // W11: asked as VeraCrypt asks a raw host (no buffers); a container is not asked.
    let is_writable = match kind {
        HostKind::RawDevice => query(ioctl::DISK_IS_WRITABLE, &mut [], 0).map(|_| ()),
        HostKind::FileContainer => Ok(()),
    };
    Probed {
        size,
        sector,
        adapter,
        is_writable,
        starved,
    }
}
