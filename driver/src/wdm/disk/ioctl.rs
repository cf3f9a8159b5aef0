//! The disk IOCTLs a volume device serves (METHOD_BUFFERED replies a file system, the mount
//! manager and DiskSpd ask for).
//!
//! Owns: the reply layouts (geometry, length, partition info, storage properties, mount
//! manager names) written into the system buffer, bounded by the output length. Never: takes
//! the remove lock or completes the IRP (`dispatch` does both).

use alloc::vec::Vec;

use super::super::codes::{ioctl as code, nts};
use super::super::irp::Irp;
use super::super::layout as at;
use super::device::MountedVolume;
use crate::Status;

/// A reply writer over the METHOD_BUFFERED system buffer, bounded by the output length.
struct Out<'a> {
    buf: &'a mut [u8],
}

impl Out<'_> {
    fn u8(&mut self, at: usize, v: u8) {
        self.buf[at] = v;
    }
    fn u16(&mut self, at: usize, v: u16) {
        self.buf[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, at: usize, v: u32) {
        self.buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, at: usize, v: u64) {
        self.buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// Serves one disk IOCTL; returns the status and the bytes written to the output.
pub(super) fn disk_control(mounted: &MountedVolume, request: &mut Irp) -> (Status, usize) {
    let (code_, input_len, output_len) = request.ioctl_parameters();
    let (input_len, output_len) = (input_len as usize, output_len as usize);
    let size = mounted.volume.size();
    let sector = mounted.sector_size;
    let read_only = mounted.read_only;
    let needs_buffer = !matches!(
        code_,
        code::DISK_IS_WRITABLE
            | code::DISK_CHECK_VERIFY
            | code::STORAGE_CHECK_VERIFY
            | code::STORAGE_CHECK_VERIFY2
    );
    let mut empty = [0u8; 0];
    let buf: &mut [u8] = match request.system_buffer() {
        Some(b) => b,
        None if !needs_buffer => &mut empty,
        None => return (nts::BUFFER_TOO_SMALL, 0),
    };
    let input: Vec<u8> = buf[..input_len.min(buf.len())].to_vec();
    let out_len = output_len.min(buf.len());
    let mut out = Out {
        buf: &mut buf[..out_len],
    };
    let need = |n: usize| out_len >= n;
    match code_ {
        code::DISK_GET_LENGTH_INFO => {
            if !need(at::LENGTH_INFO_SIZE) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.u64(at::LENGTH_INFO_LENGTH, size);
            (Status::Success, at::LENGTH_INFO_SIZE)
        }
        code::DISK_GET_DRIVE_GEOMETRY | code::DISK_GET_DRIVE_GEOMETRY_EX => {
            let ex = code_ == code::DISK_GET_DRIVE_GEOMETRY_EX;
            let n = if ex {
                at::GEOMETRY_EX_FIXED_SIZE
            } else {
                at::GEOMETRY_SIZE
            };
            if !need(n) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            // One track of one sector per cylinder: exact for any size.
            out.u64(at::GEOMETRY_CYLINDERS, size / u64::from(sector));
            out.u32(at::GEOMETRY_MEDIA_TYPE, 12); // FixedMedia
            out.u32(at::GEOMETRY_TRACKS_PER_CYLINDER, 1);
            out.u32(at::GEOMETRY_SECTORS_PER_TRACK, 1);
            out.u32(at::GEOMETRY_BYTES_PER_SECTOR, sector);
            if ex {
                out.u64(at::GEOMETRY_EX_DISK_SIZE, size);
            }
            (Status::Success, n)
        }
        code::DISK_GET_PARTITION_INFO => {
            if !need(at::PARTITION_SIZE) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.buf[..at::PARTITION_SIZE].fill(0);
            out.u64(at::PARTITION_STARTING_OFFSET, 0);
            out.u64(at::PARTITION_LENGTH, size);
            out.u32(at::PARTITION_NUMBER, 1);
            out.u8(at::PARTITION_TYPE, 0x07); // IFS (NTFS/exFAT)
            out.u8(at::PARTITION_RECOGNIZED, 1);
            (Status::Success, at::PARTITION_SIZE)
        }
        code::DISK_GET_PARTITION_INFO_EX => {
            if !need(at::PARTITION_EX_SIZE) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.buf[..at::PARTITION_EX_SIZE].fill(0);
            out.u32(at::PARTITION_EX_STYLE, 0); // PARTITION_STYLE_MBR
            out.u64(at::PARTITION_EX_STARTING_OFFSET, 0);
            out.u64(at::PARTITION_EX_LENGTH, size);
            out.u32(at::PARTITION_EX_NUMBER, 1);
            out.u8(at::PARTITION_EX_MBR_TYPE, 0x07); // IFS (NTFS/exFAT)
            out.u8(at::PARTITION_EX_MBR_RECOGNIZED, 1);
            (Status::Success, at::PARTITION_EX_SIZE)
        }
        code::DISK_IS_WRITABLE => {
            if read_only {
                (Status::MediaWriteProtected, 0)
            } else {
                (Status::Success, 0)
            }
        }
        code::DISK_VERIFY => {
            // VERIFY_INFORMATION: StartingOffset i64, Length u32.
            if input.len() < at::VERIFY_INPUT_MIN {
                return (Status::InvalidParameter, 0);
            }
            let (s, l) = (at::VERIFY_STARTING_OFFSET, at::VERIFY_LENGTH);
            let start = i64::from_le_bytes(input[s..s + 8].try_into().unwrap_or([0xff; 8]));
            let length = u32::from_le_bytes(input[l..l + 4].try_into().unwrap_or([0xff; 4]));
            let fits = u64::try_from(start)
                .ok()
                .and_then(|s| s.checked_add(u64::from(length)))
                .is_some_and(|end| end <= size);
            if fits {
                (Status::Success, 0)
            } else {
                (Status::InvalidParameter, 0)
            }
        }
        code::DISK_CHECK_VERIFY | code::STORAGE_CHECK_VERIFY | code::STORAGE_CHECK_VERIFY2 => {
            if need(4) {
                out.u32(0, 0); // media change count
                (Status::Success, 4)
            } else {
                (Status::Success, 0)
            }
        }
        code::DISK_GET_DISK_ATTRIBUTES => {
            let n = at::DISK_ATTRIBUTES_SIZE;
            if !need(n) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.buf[..n].fill(0);
            out.u32(at::DISK_ATTRIBUTES_VERSION, n as u32); // sizeof(GET_DISK_ATTRIBUTES)
            let attributes = if read_only { 2 } else { 0 }; // DISK_ATTRIBUTE_READ_ONLY
            out.u64(at::DISK_ATTRIBUTES_ATTRIBUTES, attributes);
            (Status::Success, n)
        }
        code::STORAGE_QUERY_PROPERTY => storage_query(&input, &mut out, sector),
        // W2: all three from the volume's one `VolumeNames`, so they agree.
        code::MOUNTDEV_QUERY_DEVICE_NAME => counted_name(
            &mut out,
            at::MOUNTDEV_NAME_LENGTH,
            &units(mounted.names.device_name()),
            at::MOUNTDEV_NAME_SIZE,
        ),
        // MOUNTDEV_UNIQUE_ID has MOUNTDEV_NAME's shape; the id is fresh per mount, never
        // the slot's name (a later volume in the same slot must not inherit a letter).
        code::MOUNTDEV_QUERY_UNIQUE_ID => counted_name(
            &mut out,
            at::MOUNTDEV_NAME_LENGTH,
            mounted.names.unique_id(),
            at::MOUNTDEV_NAME_SIZE,
        ),
        code::MOUNTDEV_QUERY_SUGGESTED_LINK_NAME => match mounted.names.suggested_link_name() {
            None => (nts::NOT_FOUND, 0),
            Some(link) => {
                if !need(at::SUGGESTED_LINK_SIZE) {
                    return (nts::BUFFER_TOO_SMALL, 0);
                }
                out.u8(at::SUGGESTED_LINK_USE_ONLY, 0);
                let length_at = at::SUGGESTED_LINK_NAME_LENGTH;
                counted_name(&mut out, length_at, &units(&link), at::SUGGESTED_LINK_SIZE)
            }
        },
        _ => (Status::InvalidDeviceRequest, 0),
    }
}

/// UTF-16 as its little-endian bytes.
fn units(name: &[u16]) -> Vec<u8> {
    name.iter().flat_map(|c| c.to_le_bytes()).collect()
}

/// A `USHORT length; WCHAR name[]` reply (or `UCHAR id[]`) with the length in bytes at `at`
/// and `bytes` right after it (layout.rs asserts that for both structures; the mount
/// manager's protocol: when they do not fit, the length alone with STATUS_BUFFER_OVERFLOW).
fn counted_name(out: &mut Out<'_>, at: usize, bytes: &[u8], header: usize) -> (Status, usize) {
    let len = out.buf.len();
    if len < header {
        return (nts::BUFFER_TOO_SMALL, 0);
    }
    out.u16(at, bytes.len() as u16);
    if len < at + 2 + bytes.len() {
        return (nts::BUFFER_OVERFLOW, header);
    }
    out.buf[at + 2..at + 2 + bytes.len()].copy_from_slice(bytes);
    (Status::Success, at + 2 + bytes.len())
}

/// IOCTL_STORAGE_QUERY_PROPERTY: device, adapter and access-alignment descriptors.
fn storage_query(input: &[u8], out: &mut Out<'_>, sector: u32) -> (Status, usize) {
    if input.len() < at::PROPERTY_QUERY_INPUT_MIN {
        return (Status::InvalidParameter, 0);
    }
    let u32_at =
        |o: usize| u32::from_le_bytes([input[o], input[o + 1], input[o + 2], input[o + 3]]);
    let property = u32_at(at::PROPERTY_QUERY_ID);
    let query = u32_at(at::PROPERTY_QUERY_TYPE);
    let size = match property {
        0 => at::DEVICE_DESCRIPTOR_SIZE,    // StorageDeviceProperty
        1 => at::ADAPTER_DESCRIPTOR_SIZE,   // StorageAdapterProperty
        6 => at::ALIGNMENT_DESCRIPTOR_SIZE, // StorageAccessAlignmentProperty
        _ => return (nts::NOT_SUPPORTED, 0),
    };
    match query {
        0 => {}
        1 => return (Status::Success, 0), // PropertyExistsQuery
        _ => return (Status::InvalidParameter, 0),
    }
    let len = out.buf.len();
    if len < at::DESCRIPTOR_HEADER_SIZE {
        return (nts::BUFFER_TOO_SMALL, 0);
    }
    // STORAGE_DESCRIPTOR_HEADER first, so a short buffer learns the size it needs.
    out.buf[..len.min(size)].fill(0);
    out.u32(at::DESCRIPTOR_VERSION, size as u32);
    out.u32(at::DESCRIPTOR_SIZE, size as u32);
    if len < size {
        return (Status::Success, at::DESCRIPTOR_HEADER_SIZE);
    }
    match property {
        0 => {
            out.u8(at::DEVICE_DESCRIPTOR_DEVICE_TYPE, 0); // direct-access device
            out.u32(at::DEVICE_DESCRIPTOR_BUS_TYPE, 0x0E); // BusTypeVirtual
        }
        1 => {
            out.u32(at::ADAPTER_MAX_TRANSFER, 1024 * 1024);
            out.u32(at::ADAPTER_MAX_PAGES, 257);
            out.u32(at::ADAPTER_ALIGNMENT_MASK, 0);
            out.u8(at::ADAPTER_BUS_TYPE, 0x0E); // BusTypeVirtual
        }
        _ => {
            out.u32(at::ALIGNMENT_CACHE_LINE, 64);
            out.u32(at::ALIGNMENT_LOGICAL_SECTOR, sector);
            out.u32(at::ALIGNMENT_PHYSICAL_SECTOR, sector);
        }
    }
    (Status::Success, size)
}
