//! The disk IOCTLs a volume device serves (METHOD_BUFFERED replies a file system, the mount
//! manager and DiskSpd ask for).
//!
//! Owns: the reply layouts (geometry, length, partition info, storage properties, mount
//! manager names) written into the system buffer, bounded by the output length. Never: takes
//! the remove lock or completes the IRP (`dispatch` does both).

use alloc::vec::Vec;

use super::super::codes::{ioctl as code, nts};
use super::super::irp::Irp;
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
            if !need(8) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.u64(0, size);
            (Status::Success, 8)
        }
        code::DISK_GET_DRIVE_GEOMETRY | code::DISK_GET_DRIVE_GEOMETRY_EX => {
            let ex = code_ == code::DISK_GET_DRIVE_GEOMETRY_EX;
            let n = if ex { 32 } else { 24 };
            if !need(n) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            // One track of one sector per cylinder: exact for any size.
            out.u64(0, size / u64::from(sector)); // Cylinders
            out.u32(8, 12); // MediaType = FixedMedia
            out.u32(12, 1); // TracksPerCylinder
            out.u32(16, 1); // SectorsPerTrack
            out.u32(20, sector); // BytesPerSector
            if ex {
                out.u64(24, size); // DiskSize
            }
            (Status::Success, n)
        }
        code::DISK_GET_PARTITION_INFO => {
            if !need(32) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.buf[..32].fill(0);
            out.u64(0, 0); // StartingOffset
            out.u64(8, size); // PartitionLength
            out.u32(20, 1); // PartitionNumber
            out.u8(24, 0x07); // PartitionType: IFS (NTFS/exFAT)
            out.u8(26, 1); // RecognizedPartition
            (Status::Success, 32)
        }
        code::DISK_GET_PARTITION_INFO_EX => {
            if !need(144) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.buf[..144].fill(0);
            out.u32(0, 0); // PartitionStyle MBR
            out.u64(8, 0); // StartingOffset
            out.u64(16, size); // PartitionLength
            out.u32(24, 1); // PartitionNumber
            out.u8(32, 0x07); // Mbr.PartitionType
            out.u8(34, 1); // Mbr.RecognizedPartition
            (Status::Success, 144)
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
            if input.len() < 12 {
                return (Status::InvalidParameter, 0);
            }
            let start = i64::from_le_bytes(input[0..8].try_into().unwrap_or([0xff; 8]));
            let length = u32::from_le_bytes(input[8..12].try_into().unwrap_or([0xff; 4]));
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
            if !need(16) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.buf[..16].fill(0);
            out.u32(0, 16); // Version = sizeof(GET_DISK_ATTRIBUTES)
            out.u64(8, if read_only { 2 } else { 0 }); // DISK_ATTRIBUTE_READ_ONLY
            (Status::Success, 16)
        }
        code::STORAGE_QUERY_PROPERTY => storage_query(&input, &mut out, sector),
        code::MOUNTDEV_QUERY_DEVICE_NAME => counted_name(&mut out, 0, &mounted.device_name, 4),
        code::MOUNTDEV_QUERY_UNIQUE_ID => {
            // A stable id: the device name's bytes.
            counted_name(&mut out, 0, &mounted.device_name, 4)
        }
        code::MOUNTDEV_QUERY_SUGGESTED_LINK_NAME => match &mounted.letter_link {
            None => (nts::NOT_FOUND, 0),
            Some(link) => {
                if !need(6) {
                    return (nts::BUFFER_TOO_SMALL, 0);
                }
                out.u8(0, 0); // UseOnlyIfThereAreNoOtherLinks
                counted_name(&mut out, 2, link, 6)
            }
        },
        _ => (Status::InvalidDeviceRequest, 0),
    }
}

/// A `USHORT length; WCHAR name[]` reply at `at` (the mount manager's protocol: when the
/// name does not fit, the length alone with STATUS_BUFFER_OVERFLOW).
fn counted_name(out: &mut Out<'_>, at: usize, name: &[u16], header: usize) -> (Status, usize) {
    let len = out.buf.len();
    if len < header {
        return (nts::BUFFER_TOO_SMALL, 0);
    }
    let bytes = name.len() * 2;
    out.u16(at, bytes as u16);
    if len < at + 2 + bytes {
        return (nts::BUFFER_OVERFLOW, header);
    }
    for (i, c) in name.iter().enumerate() {
        out.u16(at + 2 + 2 * i, *c);
    }
    (Status::Success, at + 2 + bytes)
}

/// IOCTL_STORAGE_QUERY_PROPERTY: device, adapter and access-alignment descriptors.
fn storage_query(input: &[u8], out: &mut Out<'_>, sector: u32) -> (Status, usize) {
    if input.len() < 8 {
        return (Status::InvalidParameter, 0);
    }
    let property = u32::from_le_bytes([input[0], input[1], input[2], input[3]]);
    let query = u32::from_le_bytes([input[4], input[5], input[6], input[7]]);
    let size = match property {
        0 => 40, // StorageDeviceProperty
        1 => 32, // StorageAdapterProperty
        6 => 28, // StorageAccessAlignmentProperty
        _ => return (nts::NOT_SUPPORTED, 0),
    };
    match query {
        0 => {}
        1 => return (Status::Success, 0), // PropertyExistsQuery
        _ => return (Status::InvalidParameter, 0),
    }
    let len = out.buf.len();
    if len < 8 {
        return (nts::BUFFER_TOO_SMALL, 0);
    }
    // STORAGE_DESCRIPTOR_HEADER first, so a short buffer learns the size it needs.
    out.buf[..len.min(size)].fill(0);
    out.u32(0, size as u32);
    out.u32(4, size as u32);
    if len < size {
        return (Status::Success, 8);
    }
    match property {
        0 => {
            out.u8(8, 0); // DeviceType: direct-access device
            out.u32(28, 0x0E); // BusType: BusTypeVirtual
        }
        1 => {
            out.u32(8, 1024 * 1024); // MaximumTransferLength
            out.u32(12, 257); // MaximumPhysicalPages
            out.u32(16, 0); // AlignmentMask
            out.u8(24, 0x0E); // BusType: BusTypeVirtual
        }
        _ => {
            out.u32(8, 64); // BytesPerCacheLine
            out.u32(16, sector); // BytesPerLogicalSector
            out.u32(20, sector); // BytesPerPhysicalSector
        }
    }
    (Status::Success, size)
}
