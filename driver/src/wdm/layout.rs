//! W14: the offsets and sizes of the Windows structures the glue reads and writes as bytes (the
//! disk and storage IOCTL replies in `disk/ioctl.rs`, the host probe in `host/open.rs`).
//!
//! Owns: one `#[repr(C)]` declaration per structure, as Microsoft documents it (ntdddisk.h,
//! ntddstor.h, mountmgr.h: the WDK bindings do not carry these headers), and the named
//! offsets and sizes derived from them with `offset_of!`/`size_of`, which the code uses instead
//! of literals. `layout_arm64.rs` asserts, against the figures measured with Microsoft's headers
//! (`arm64-layouts.tsv`), the size and alignment of GET_LENGTH_INFORMATION, DISK_GEOMETRY,
//! DISK_GEOMETRY_EX, PARTITION_INFORMATION, PARTITION_INFORMATION_EX, STORAGE_PROPERTY_QUERY,
//! STORAGE_DEVICE_DESCRIPTOR, STORAGE_ADAPTER_DESCRIPTOR and
//! STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, and five offsets (DISK_GEOMETRY_EX.DiskSize,
//! PARTITION_INFORMATION_EX.PartitionLength and .Gpt (the style union),
//! STORAGE_DEVICE_DESCRIPTOR.RawPropertiesLength, STORAGE_ADAPTER_DESCRIPTOR
//! .MaximumTransferLength): a drift of those from Windows fails the build. The table has no
//! figures for VERIFY_INFORMATION, GET_DISK_ATTRIBUTES, MOUNTDEV_NAME,
//! MOUNTDEV_SUGGESTED_LINK_NAME, PARTITION_INFORMATION_MBR/GPT or STORAGE_DESCRIPTOR_HEADER, nor
//! for the other offsets named below: those rest on the declarations here as transcribed from
//! the headers, through `offset_of!`/`size_of` only (plus the two MOUNTDEV assertions at the end
//! of this file).
//! Never: allocates or passes these declarations to Windows (replies are written as bytes).

#![allow(non_camel_case_types, non_snake_case, dead_code)]

use core::mem::{offset_of, size_of};

/// GET_LENGTH_INFORMATION (IOCTL_DISK_GET_LENGTH_INFO).
#[repr(C)]
pub(super) struct GET_LENGTH_INFORMATION {
    pub(super) Length: i64,
}

/// DISK_GEOMETRY (IOCTL_DISK_GET_DRIVE_GEOMETRY).
#[repr(C)]
pub(super) struct DISK_GEOMETRY {
    pub(super) Cylinders: i64,
    pub(super) MediaType: u32,
    pub(super) TracksPerCylinder: u32,
    pub(super) SectorsPerTrack: u32,
    pub(super) BytesPerSector: u32,
}

/// DISK_GEOMETRY_EX (IOCTL_DISK_GET_DRIVE_GEOMETRY_EX); `Data` is the variable part.
#[repr(C)]
pub(super) struct DISK_GEOMETRY_EX {
    pub(super) Geometry: DISK_GEOMETRY,
    pub(super) DiskSize: i64,
    pub(super) Data: [u8; 1],
}

/// PARTITION_INFORMATION (IOCTL_DISK_GET_PARTITION_INFO).
#[repr(C)]
pub(super) struct PARTITION_INFORMATION {
    pub(super) StartingOffset: i64,
    pub(super) PartitionLength: i64,
    pub(super) HiddenSectors: u32,
    pub(super) PartitionNumber: u32,
    pub(super) PartitionType: u8,
    pub(super) BootIndicator: u8,
    pub(super) RecognizedPartition: u8,
    pub(super) RewritePartition: u8,
}

/// PARTITION_INFORMATION_MBR.
#[repr(C)]
pub(super) struct PARTITION_INFORMATION_MBR {
    pub(super) PartitionType: u8,
    pub(super) BootIndicator: u8,
    pub(super) RecognizedPartition: u8,
    pub(super) HiddenSectors: u32,
    pub(super) PartitionId: [u32; 4],
}

/// PARTITION_INFORMATION_GPT.
#[repr(C)]
pub(super) struct PARTITION_INFORMATION_GPT {
    pub(super) PartitionType: [u32; 4],
    pub(super) PartitionId: [u32; 4],
    pub(super) Attributes: u64,
    pub(super) Name: [u16; 36],
}

#[repr(C)]
pub(super) union PARTITION_INFORMATION_EX_STYLE {
    pub(super) Mbr: core::mem::ManuallyDrop<PARTITION_INFORMATION_MBR>,
    pub(super) Gpt: core::mem::ManuallyDrop<PARTITION_INFORMATION_GPT>,
}

/// PARTITION_INFORMATION_EX (IOCTL_DISK_GET_PARTITION_INFO_EX).
#[repr(C)]
pub(super) struct PARTITION_INFORMATION_EX {
    pub(super) PartitionStyle: u32,
    pub(super) StartingOffset: i64,
    pub(super) PartitionLength: i64,
    pub(super) PartitionNumber: u32,
    pub(super) RewritePartition: u8,
    pub(super) IsServicePartition: u8,
    pub(super) Style: PARTITION_INFORMATION_EX_STYLE,
}

/// VERIFY_INFORMATION (IOCTL_DISK_VERIFY input).
#[repr(C)]
pub(super) struct VERIFY_INFORMATION {
    pub(super) StartingOffset: i64,
    pub(super) Length: u32,
}

/// GET_DISK_ATTRIBUTES (IOCTL_DISK_GET_DISK_ATTRIBUTES).
#[repr(C)]
pub(super) struct GET_DISK_ATTRIBUTES {
    pub(super) Version: u32,
    pub(super) Reserved1: u32,
    pub(super) Attributes: u64,
}

/// STORAGE_PROPERTY_QUERY (IOCTL_STORAGE_QUERY_PROPERTY input).
#[repr(C)]
pub(super) struct STORAGE_PROPERTY_QUERY {
    pub(super) PropertyId: u32,
    pub(super) QueryType: u32,
    pub(super) AdditionalParameters: [u8; 1],
}

/// STORAGE_DESCRIPTOR_HEADER: the first eight bytes of every storage descriptor.
#[repr(C)]
pub(super) struct STORAGE_DESCRIPTOR_HEADER {
    pub(super) Version: u32,
    pub(super) Size: u32,
}

/// STORAGE_DEVICE_DESCRIPTOR (StorageDeviceProperty).
#[repr(C)]
pub(super) struct STORAGE_DEVICE_DESCRIPTOR {
    pub(super) Version: u32,
    pub(super) Size: u32,
    pub(super) DeviceType: u8,
    pub(super) DeviceTypeModifier: u8,
    pub(super) RemovableMedia: u8,
    pub(super) CommandQueueing: u8,
    pub(super) VendorIdOffset: u32,
    pub(super) ProductIdOffset: u32,
    pub(super) ProductRevisionOffset: u32,
    pub(super) SerialNumberOffset: u32,
    pub(super) BusType: u32,
    pub(super) RawPropertiesLength: u32,
    pub(super) RawDeviceProperties: [u8; 1],
}

/// STORAGE_ADAPTER_DESCRIPTOR (StorageAdapterProperty).
#[repr(C)]
pub(super) struct STORAGE_ADAPTER_DESCRIPTOR {
    pub(super) Version: u32,
    pub(super) Size: u32,
    pub(super) MaximumTransferLength: u32,
    pub(super) MaximumPhysicalPages: u32,
    pub(super) AlignmentMask: u32,
    pub(super) AdapterUsesPio: u8,
    pub(super) AdapterScansDown: u8,
    pub(super) CommandQueueing: u8,
    pub(super) AcceleratedTransfer: u8,
    pub(super) BusType: u8,
    pub(super) BusMajorVersion: u16,
    pub(super) BusMinorVersion: u16,
    pub(super) SrbType: u8,
    pub(super) AddressType: u8,
}

/// STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR (StorageAccessAlignmentProperty).
#[repr(C)]
pub(super) struct STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR {
    pub(super) Version: u32,
    pub(super) Size: u32,
    pub(super) BytesPerCacheLine: u32,
    pub(super) BytesOffsetForCacheAlignment: u32,
    pub(super) BytesPerLogicalSector: u32,
    pub(super) BytesPerPhysicalSector: u32,
    pub(super) BytesOffsetForSectorAlignment: u32,
}

/// MOUNTDEV_NAME (IOCTL_MOUNTDEV_QUERY_DEVICE_NAME; MOUNTDEV_UNIQUE_ID has the same shape).
#[repr(C)]
pub(super) struct MOUNTDEV_NAME {
    pub(super) NameLength: u16,
    pub(super) Name: [u16; 1],
}

/// MOUNTDEV_SUGGESTED_LINK_NAME (IOCTL_MOUNTDEV_QUERY_SUGGESTED_LINK_NAME).
#[repr(C)]
pub(super) struct MOUNTDEV_SUGGESTED_LINK_NAME {
    pub(super) UseOnlyIfThereAreNoOtherLinks: u8,
    pub(super) NameLength: u16,
    pub(super) Name: [u16; 1],
}

pub(super) const LENGTH_INFO_LENGTH: usize = offset_of!(GET_LENGTH_INFORMATION, Length);
pub(super) const LENGTH_INFO_SIZE: usize = size_of::<GET_LENGTH_INFORMATION>();

pub(super) const GEOMETRY_CYLINDERS: usize = offset_of!(DISK_GEOMETRY, Cylinders);
pub(super) const GEOMETRY_MEDIA_TYPE: usize = offset_of!(DISK_GEOMETRY, MediaType);
pub(super) const GEOMETRY_TRACKS_PER_CYLINDER: usize = offset_of!(DISK_GEOMETRY, TracksPerCylinder);
pub(super) const GEOMETRY_SECTORS_PER_TRACK: usize = offset_of!(DISK_GEOMETRY, SectorsPerTrack);
pub(super) const GEOMETRY_BYTES_PER_SECTOR: usize = offset_of!(DISK_GEOMETRY, BytesPerSector);
pub(super) const GEOMETRY_SIZE: usize = size_of::<DISK_GEOMETRY>();
pub(super) const GEOMETRY_EX_DISK_SIZE: usize = offset_of!(DISK_GEOMETRY_EX, DiskSize);
/// DISK_GEOMETRY_EX without its variable `Data` (no partition or detection information).
pub(super) const GEOMETRY_EX_FIXED_SIZE: usize = offset_of!(DISK_GEOMETRY_EX, Data);

pub(super) const PARTITION_STARTING_OFFSET: usize =
    offset_of!(PARTITION_INFORMATION, StartingOffset);
pub(super) const PARTITION_LENGTH: usize = offset_of!(PARTITION_INFORMATION, PartitionLength);
pub(super) const PARTITION_NUMBER: usize = offset_of!(PARTITION_INFORMATION, PartitionNumber);
pub(super) const PARTITION_TYPE: usize = offset_of!(PARTITION_INFORMATION, PartitionType);
pub(super) const PARTITION_RECOGNIZED: usize =
    offset_of!(PARTITION_INFORMATION, RecognizedPartition);
pub(super) const PARTITION_SIZE: usize = size_of::<PARTITION_INFORMATION>();

pub(super) const PARTITION_EX_STYLE: usize = offset_of!(PARTITION_INFORMATION_EX, PartitionStyle);
pub(super) const PARTITION_EX_STARTING_OFFSET: usize =
    offset_of!(PARTITION_INFORMATION_EX, StartingOffset);
pub(super) const PARTITION_EX_LENGTH: usize = offset_of!(PARTITION_INFORMATION_EX, PartitionLength);
pub(super) const PARTITION_EX_NUMBER: usize = offset_of!(PARTITION_INFORMATION_EX, PartitionNumber);
pub(super) const PARTITION_EX_MBR_TYPE: usize = offset_of!(PARTITION_INFORMATION_EX, Style)
    + offset_of!(PARTITION_INFORMATION_MBR, PartitionType);
pub(super) const PARTITION_EX_MBR_RECOGNIZED: usize = offset_of!(PARTITION_INFORMATION_EX, Style)
    + offset_of!(PARTITION_INFORMATION_MBR, RecognizedPartition);
pub(super) const PARTITION_EX_SIZE: usize = size_of::<PARTITION_INFORMATION_EX>();

pub(super) const VERIFY_STARTING_OFFSET: usize = offset_of!(VERIFY_INFORMATION, StartingOffset);
pub(super) const VERIFY_LENGTH: usize = offset_of!(VERIFY_INFORMATION, Length);
/// The input VERIFY needs: up to the end of `Length` (the tail padding is not required).
pub(super) const VERIFY_INPUT_MIN: usize =
    offset_of!(VERIFY_INFORMATION, Length) + size_of::<u32>();

pub(super) const DISK_ATTRIBUTES_VERSION: usize = offset_of!(GET_DISK_ATTRIBUTES, Version);
pub(super) const DISK_ATTRIBUTES_ATTRIBUTES: usize = offset_of!(GET_DISK_ATTRIBUTES, Attributes);
pub(super) const DISK_ATTRIBUTES_SIZE: usize = size_of::<GET_DISK_ATTRIBUTES>();

pub(super) const PROPERTY_QUERY_ID: usize = offset_of!(STORAGE_PROPERTY_QUERY, PropertyId);
pub(super) const PROPERTY_QUERY_TYPE: usize = offset_of!(STORAGE_PROPERTY_QUERY, QueryType);
/// The input a property query needs: PropertyId and QueryType.
pub(super) const PROPERTY_QUERY_INPUT_MIN: usize =
    offset_of!(STORAGE_PROPERTY_QUERY, QueryType) + size_of::<u32>();
pub(super) const PROPERTY_QUERY_SIZE: usize = size_of::<STORAGE_PROPERTY_QUERY>();

pub(super) const DESCRIPTOR_VERSION: usize = offset_of!(STORAGE_DESCRIPTOR_HEADER, Version);
pub(super) const DESCRIPTOR_SIZE: usize = offset_of!(STORAGE_DESCRIPTOR_HEADER, Size);
pub(super) const DESCRIPTOR_HEADER_SIZE: usize = size_of::<STORAGE_DESCRIPTOR_HEADER>();

pub(super) const DEVICE_DESCRIPTOR_DEVICE_TYPE: usize =
    offset_of!(STORAGE_DEVICE_DESCRIPTOR, DeviceType);
pub(super) const DEVICE_DESCRIPTOR_BUS_TYPE: usize = offset_of!(STORAGE_DEVICE_DESCRIPTOR, BusType);
pub(super) const DEVICE_DESCRIPTOR_SIZE: usize = size_of::<STORAGE_DEVICE_DESCRIPTOR>();

pub(super) const ADAPTER_MAX_TRANSFER: usize =
    offset_of!(STORAGE_ADAPTER_DESCRIPTOR, MaximumTransferLength);
pub(super) const ADAPTER_MAX_PAGES: usize =
    offset_of!(STORAGE_ADAPTER_DESCRIPTOR, MaximumPhysicalPages);
pub(super) const ADAPTER_ALIGNMENT_MASK: usize =
    offset_of!(STORAGE_ADAPTER_DESCRIPTOR, AlignmentMask);
/// The adapter reply the host probe needs: up to the end of AlignmentMask.
pub(super) const ADAPTER_REPLY_MIN: usize =
    offset_of!(STORAGE_ADAPTER_DESCRIPTOR, AlignmentMask) + size_of::<u32>();
pub(super) const ADAPTER_BUS_TYPE: usize = offset_of!(STORAGE_ADAPTER_DESCRIPTOR, BusType);
pub(super) const ADAPTER_DESCRIPTOR_SIZE: usize = size_of::<STORAGE_ADAPTER_DESCRIPTOR>();

pub(super) const ALIGNMENT_CACHE_LINE: usize =
    offset_of!(STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, BytesPerCacheLine);
pub(super) const ALIGNMENT_LOGICAL_SECTOR: usize =
    offset_of!(STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, BytesPerLogicalSector);
pub(super) const ALIGNMENT_PHYSICAL_SECTOR: usize =
    offset_of!(STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, BytesPerPhysicalSector);
pub(super) const ALIGNMENT_DESCRIPTOR_SIZE: usize =
    size_of::<STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR>();

pub(super) const MOUNTDEV_NAME_LENGTH: usize = offset_of!(MOUNTDEV_NAME, NameLength);
pub(super) const MOUNTDEV_NAME_SIZE: usize = size_of::<MOUNTDEV_NAME>();
pub(super) const SUGGESTED_LINK_USE_ONLY: usize =
    offset_of!(MOUNTDEV_SUGGESTED_LINK_NAME, UseOnlyIfThereAreNoOtherLinks);
pub(super) const SUGGESTED_LINK_NAME_LENGTH: usize =
    offset_of!(MOUNTDEV_SUGGESTED_LINK_NAME, NameLength);
pub(super) const SUGGESTED_LINK_SIZE: usize = size_of::<MOUNTDEV_SUGGESTED_LINK_NAME>();

// A counted name's characters follow its length field directly (`counted_name` relies on it).
const _: () = assert!(offset_of!(MOUNTDEV_NAME, Name) == MOUNTDEV_NAME_LENGTH + 2);
const _: () =
    assert!(offset_of!(MOUNTDEV_SUGGESTED_LINK_NAME, Name) == SUGGESTED_LINK_NAME_LENGTH + 2);
