//! W14: the Windows structures a disk IOCTL reply or request is made of, declared once as
//! `#[repr(C)]` (ntdddisk.h, ntddstor.h, ntddvol.h, mountdev.h: the WDK bindings do not carry
//! these headers), with the named offsets and sizes derived from them by `offset_of!`/`size_of`,
//! which [`answer`](super::answer) and the glue's host probe use instead of literals.
//!
//! Owns: the declarations, their offsets, and a compile-time assertion of every size and of the
//! offsets the replies rely on against figures measured with mingw-w64's `winioctl.h` for
//! x86_64 (LLP64, the layout of both Windows targets; the ARM64 figures measured with
//! Microsoft's headers are asserted in `wdm/layout_arm64.rs` for the structures they cover).
//! Never: passes a declaration to Windows (replies are written as bytes).

#![allow(non_camel_case_types, non_snake_case, dead_code)]

use core::mem::{offset_of, size_of};

/// GET_LENGTH_INFORMATION (IOCTL_DISK_GET_LENGTH_INFO).
#[repr(C)]
pub(crate) struct GET_LENGTH_INFORMATION {
    pub(crate) Length: i64,
}

/// DISK_GEOMETRY (IOCTL_DISK_GET_DRIVE_GEOMETRY).
#[repr(C)]
pub(crate) struct DISK_GEOMETRY {
    pub(crate) Cylinders: i64,
    pub(crate) MediaType: u32,
    pub(crate) TracksPerCylinder: u32,
    pub(crate) SectorsPerTrack: u32,
    pub(crate) BytesPerSector: u32,
}

/// DISK_GEOMETRY_EX (IOCTL_DISK_GET_DRIVE_GEOMETRY_EX); `Data` is the variable part.
#[repr(C)]
pub(crate) struct DISK_GEOMETRY_EX {
    pub(crate) Geometry: DISK_GEOMETRY,
    pub(crate) DiskSize: i64,
    pub(crate) Data: [u8; 1],
}

/// PARTITION_INFORMATION (IOCTL_DISK_GET_PARTITION_INFO).
#[repr(C)]
pub(crate) struct PARTITION_INFORMATION {
    pub(crate) StartingOffset: i64,
    pub(crate) PartitionLength: i64,
    pub(crate) HiddenSectors: u32,
    pub(crate) PartitionNumber: u32,
    pub(crate) PartitionType: u8,
    pub(crate) BootIndicator: u8,
    pub(crate) RecognizedPartition: u8,
    pub(crate) RewritePartition: u8,
}

/// PARTITION_INFORMATION_MBR.
#[repr(C)]
pub(crate) struct PARTITION_INFORMATION_MBR {
    pub(crate) PartitionType: u8,
    pub(crate) BootIndicator: u8,
    pub(crate) RecognizedPartition: u8,
    pub(crate) HiddenSectors: u32,
    pub(crate) PartitionId: [u32; 4],
}

/// PARTITION_INFORMATION_GPT.
#[repr(C)]
pub(crate) struct PARTITION_INFORMATION_GPT {
    pub(crate) PartitionType: [u32; 4],
    pub(crate) PartitionId: [u32; 4],
    pub(crate) Attributes: u64,
    pub(crate) Name: [u16; 36],
}

#[repr(C)]
pub(crate) union PARTITION_INFORMATION_EX_STYLE {
    pub(crate) Mbr: core::mem::ManuallyDrop<PARTITION_INFORMATION_MBR>,
    pub(crate) Gpt: core::mem::ManuallyDrop<PARTITION_INFORMATION_GPT>,
}

/// PARTITION_INFORMATION_EX (IOCTL_DISK_GET_PARTITION_INFO_EX).
#[repr(C)]
pub(crate) struct PARTITION_INFORMATION_EX {
    pub(crate) PartitionStyle: u32,
    pub(crate) StartingOffset: i64,
    pub(crate) PartitionLength: i64,
    pub(crate) PartitionNumber: u32,
    pub(crate) RewritePartition: u8,
    pub(crate) IsServicePartition: u8,
    pub(crate) Style: PARTITION_INFORMATION_EX_STYLE,
}

/// VERIFY_INFORMATION (IOCTL_DISK_VERIFY input).
#[repr(C)]
pub(crate) struct VERIFY_INFORMATION {
    pub(crate) StartingOffset: i64,
    pub(crate) Length: u32,
}

/// GET_DISK_ATTRIBUTES (IOCTL_DISK_GET_DISK_ATTRIBUTES).
#[repr(C)]
pub(crate) struct GET_DISK_ATTRIBUTES {
    pub(crate) Version: u32,
    pub(crate) Reserved1: u32,
    pub(crate) Attributes: u64,
}

/// STORAGE_PROPERTY_QUERY (IOCTL_STORAGE_QUERY_PROPERTY input).
#[repr(C)]
pub(crate) struct STORAGE_PROPERTY_QUERY {
    pub(crate) PropertyId: u32,
    pub(crate) QueryType: u32,
    pub(crate) AdditionalParameters: [u8; 1],
}

/// STORAGE_DESCRIPTOR_HEADER: the first eight bytes of every storage descriptor.
#[repr(C)]
pub(crate) struct STORAGE_DESCRIPTOR_HEADER {
    pub(crate) Version: u32,
    pub(crate) Size: u32,
}

/// STORAGE_DEVICE_DESCRIPTOR (StorageDeviceProperty).
#[repr(C)]
pub(crate) struct STORAGE_DEVICE_DESCRIPTOR {
    pub(crate) Version: u32,
    pub(crate) Size: u32,
    pub(crate) DeviceType: u8,
    pub(crate) DeviceTypeModifier: u8,
    pub(crate) RemovableMedia: u8,
    pub(crate) CommandQueueing: u8,
    pub(crate) VendorIdOffset: u32,
    pub(crate) ProductIdOffset: u32,
    pub(crate) ProductRevisionOffset: u32,
    pub(crate) SerialNumberOffset: u32,
    pub(crate) BusType: u32,
    pub(crate) RawPropertiesLength: u32,
    pub(crate) RawDeviceProperties: [u8; 1],
}

/// STORAGE_ADAPTER_DESCRIPTOR (StorageAdapterProperty).
#[repr(C)]
pub(crate) struct STORAGE_ADAPTER_DESCRIPTOR {
    pub(crate) Version: u32,
    pub(crate) Size: u32,
    pub(crate) MaximumTransferLength: u32,
    pub(crate) MaximumPhysicalPages: u32,
    pub(crate) AlignmentMask: u32,
    pub(crate) AdapterUsesPio: u8,
    pub(crate) AdapterScansDown: u8,
    pub(crate) CommandQueueing: u8,
    pub(crate) AcceleratedTransfer: u8,
    pub(crate) BusType: u8,
    pub(crate) BusMajorVersion: u16,
    pub(crate) BusMinorVersion: u16,
    pub(crate) SrbType: u8,
    pub(crate) AddressType: u8,
}

/// STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR (StorageAccessAlignmentProperty).
#[repr(C)]
pub(crate) struct STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR {
    pub(crate) Version: u32,
    pub(crate) Size: u32,
    pub(crate) BytesPerCacheLine: u32,
    pub(crate) BytesOffsetForCacheAlignment: u32,
    pub(crate) BytesPerLogicalSector: u32,
    pub(crate) BytesPerPhysicalSector: u32,
    pub(crate) BytesOffsetForSectorAlignment: u32,
}

/// MOUNTDEV_NAME (IOCTL_MOUNTDEV_QUERY_DEVICE_NAME; MOUNTDEV_UNIQUE_ID has the same shape).
#[repr(C)]
pub(crate) struct MOUNTDEV_NAME {
    pub(crate) NameLength: u16,
    pub(crate) Name: [u16; 1],
}

/// MOUNTDEV_SUGGESTED_LINK_NAME (IOCTL_MOUNTDEV_QUERY_SUGGESTED_LINK_NAME).
#[repr(C)]
pub(crate) struct MOUNTDEV_SUGGESTED_LINK_NAME {
    pub(crate) UseOnlyIfThereAreNoOtherLinks: u8,
    pub(crate) NameLength: u16,
    pub(crate) Name: [u16; 1],
}

/// DISK_PARTITION_INFO (the first variable part of DISK_GEOMETRY_EX), MBR arm.
#[repr(C)]
pub(crate) struct DISK_PARTITION_INFO {
    pub(crate) SizeOfPartitionInfo: u32,
    pub(crate) PartitionStyle: u32,
    pub(crate) Signature: u32,
    pub(crate) CheckSum: u32,
    /// The rest of the union (the GPT arm's 16-byte disk id).
    pub(crate) Gpt: [u32; 2],
}

/// DISK_DETECTION_INFO (the second variable part of DISK_GEOMETRY_EX): its size field and
/// detection type, then the INT13 union this driver leaves zero.
#[repr(C)]
pub(crate) struct DISK_DETECTION_INFO {
    pub(crate) SizeOfDetectInfo: u32,
    pub(crate) DetectionType: u32,
    pub(crate) Int13: [u64; 6],
}

/// DISK_GEOMETRY_EX with both variable parts (what a "full" buffer holds).
#[repr(C)]
pub(crate) struct DISK_GEOMETRY_EX_FULL {
    pub(crate) Geometry: DISK_GEOMETRY,
    pub(crate) DiskSize: i64,
    pub(crate) Partition: DISK_PARTITION_INFO,
    pub(crate) Detection: DISK_DETECTION_INFO,
}

/// DRIVE_LAYOUT_INFORMATION (IOCTL_DISK_GET_DRIVE_LAYOUT), one entry.
#[repr(C)]
pub(crate) struct DRIVE_LAYOUT_INFORMATION {
    pub(crate) PartitionCount: u32,
    pub(crate) Signature: u32,
    pub(crate) PartitionEntry: [PARTITION_INFORMATION; 1],
}

/// DRIVE_LAYOUT_INFORMATION_GPT (the larger arm of DRIVE_LAYOUT_INFORMATION_EX's union).
#[repr(C)]
pub(crate) struct DRIVE_LAYOUT_INFORMATION_GPT {
    pub(crate) DiskId: [u32; 4],
    pub(crate) StartingUsableOffset: i64,
    pub(crate) UsableLength: i64,
    pub(crate) MaxPartitionCount: u32,
}

/// DRIVE_LAYOUT_INFORMATION_MBR.
#[repr(C)]
pub(crate) struct DRIVE_LAYOUT_INFORMATION_MBR {
    pub(crate) Signature: u32,
    pub(crate) CheckSum: u32,
}

#[repr(C)]
pub(crate) union DRIVE_LAYOUT_INFORMATION_EX_STYLE {
    pub(crate) Mbr: core::mem::ManuallyDrop<DRIVE_LAYOUT_INFORMATION_MBR>,
    pub(crate) Gpt: core::mem::ManuallyDrop<DRIVE_LAYOUT_INFORMATION_GPT>,
}

/// DRIVE_LAYOUT_INFORMATION_EX (IOCTL_DISK_GET_DRIVE_LAYOUT_EX), one entry.
#[repr(C)]
pub(crate) struct DRIVE_LAYOUT_INFORMATION_EX {
    pub(crate) PartitionStyle: u32,
    pub(crate) PartitionCount: u32,
    pub(crate) Style: DRIVE_LAYOUT_INFORMATION_EX_STYLE,
    pub(crate) PartitionEntry: [PARTITION_INFORMATION_EX; 1],
}

/// DEVICE_MEDIA_INFO, DiskInfo arm (the union's largest: TapeInfo is smaller).
#[repr(C)]
pub(crate) struct DEVICE_MEDIA_INFO {
    pub(crate) Cylinders: i64,
    pub(crate) MediaType: u32,
    pub(crate) TracksPerCylinder: u32,
    pub(crate) SectorsPerTrack: u32,
    pub(crate) BytesPerSector: u32,
    pub(crate) NumberMediaSides: u32,
    pub(crate) MediaCharacteristics: u32,
}

/// GET_MEDIA_TYPES (IOCTL_STORAGE_GET_MEDIA_TYPES_EX), one entry.
#[repr(C)]
pub(crate) struct GET_MEDIA_TYPES {
    pub(crate) DeviceType: u32,
    pub(crate) MediaInfoCount: u32,
    pub(crate) MediaInfo: [DEVICE_MEDIA_INFO; 1],
}

/// STORAGE_HOTPLUG_INFO (IOCTL_STORAGE_GET_HOTPLUG_INFO).
#[repr(C)]
pub(crate) struct STORAGE_HOTPLUG_INFO {
    pub(crate) Size: u32,
    pub(crate) MediaRemovable: u8,
    pub(crate) MediaHotplug: u8,
    pub(crate) DeviceHotplug: u8,
    pub(crate) WriteCacheEnableOverride: u8,
}

/// STORAGE_READ_CAPACITY (IOCTL_STORAGE_READ_CAPACITY).
#[repr(C)]
pub(crate) struct STORAGE_READ_CAPACITY {
    pub(crate) Version: u32,
    pub(crate) Size: u32,
    pub(crate) BlockLength: u32,
    pub(crate) NumberOfBlocks: i64,
    pub(crate) DiskLength: i64,
}

/// DEVICE_SEEK_PENALTY_DESCRIPTOR (StorageDeviceSeekPenaltyProperty).
#[repr(C)]
pub(crate) struct DEVICE_SEEK_PENALTY_DESCRIPTOR {
    pub(crate) Version: u32,
    pub(crate) Size: u32,
    pub(crate) IncursSeekPenalty: u8,
}

/// DEVICE_TRIM_DESCRIPTOR (StorageDeviceTrimProperty).
#[repr(C)]
pub(crate) struct DEVICE_TRIM_DESCRIPTOR {
    pub(crate) Version: u32,
    pub(crate) Size: u32,
    pub(crate) TrimEnabled: u8,
}

/// VOLUME_GET_GPT_ATTRIBUTES_INFORMATION (IOCTL_VOLUME_GET_GPT_ATTRIBUTES).
#[repr(C)]
pub(crate) struct VOLUME_GET_GPT_ATTRIBUTES_INFORMATION {
    pub(crate) GptAttributes: u64,
}

pub(crate) const LENGTH_INFO_LENGTH: usize = offset_of!(GET_LENGTH_INFORMATION, Length);
pub(crate) const LENGTH_INFO_SIZE: usize = size_of::<GET_LENGTH_INFORMATION>();

pub(crate) const GEOMETRY_CYLINDERS: usize = offset_of!(DISK_GEOMETRY, Cylinders);
pub(crate) const GEOMETRY_MEDIA_TYPE: usize = offset_of!(DISK_GEOMETRY, MediaType);
pub(crate) const GEOMETRY_TRACKS_PER_CYLINDER: usize = offset_of!(DISK_GEOMETRY, TracksPerCylinder);
pub(crate) const GEOMETRY_SECTORS_PER_TRACK: usize = offset_of!(DISK_GEOMETRY, SectorsPerTrack);
pub(crate) const GEOMETRY_BYTES_PER_SECTOR: usize = offset_of!(DISK_GEOMETRY, BytesPerSector);
pub(crate) const GEOMETRY_SIZE: usize = size_of::<DISK_GEOMETRY>();
pub(crate) const GEOMETRY_EX_DISK_SIZE: usize = offset_of!(DISK_GEOMETRY_EX, DiskSize);
/// BytesPerSector inside DISK_GEOMETRY_EX's leading DISK_GEOMETRY (the host probe reads it).
pub(crate) const GEOMETRY_EX_BYTES_PER_SECTOR: usize =
    offset_of!(DISK_GEOMETRY_EX, Geometry) + GEOMETRY_BYTES_PER_SECTOR;
/// DISK_GEOMETRY_EX without its variable `Data` (no partition or detection information).
pub(crate) const GEOMETRY_EX_FIXED_SIZE: usize = offset_of!(DISK_GEOMETRY_EX, Data);

pub(crate) const PARTITION_STARTING_OFFSET: usize =
    offset_of!(PARTITION_INFORMATION, StartingOffset);
pub(crate) const PARTITION_LENGTH: usize = offset_of!(PARTITION_INFORMATION, PartitionLength);
pub(crate) const PARTITION_NUMBER: usize = offset_of!(PARTITION_INFORMATION, PartitionNumber);
pub(crate) const PARTITION_TYPE: usize = offset_of!(PARTITION_INFORMATION, PartitionType);
pub(crate) const PARTITION_RECOGNIZED: usize =
    offset_of!(PARTITION_INFORMATION, RecognizedPartition);
pub(crate) const PARTITION_SIZE: usize = size_of::<PARTITION_INFORMATION>();

pub(crate) const PARTITION_EX_STYLE: usize = offset_of!(PARTITION_INFORMATION_EX, PartitionStyle);
pub(crate) const PARTITION_EX_STARTING_OFFSET: usize =
    offset_of!(PARTITION_INFORMATION_EX, StartingOffset);
pub(crate) const PARTITION_EX_LENGTH: usize = offset_of!(PARTITION_INFORMATION_EX, PartitionLength);
pub(crate) const PARTITION_EX_NUMBER: usize = offset_of!(PARTITION_INFORMATION_EX, PartitionNumber);
pub(crate) const PARTITION_EX_MBR_TYPE: usize = offset_of!(PARTITION_INFORMATION_EX, Style)
    + offset_of!(PARTITION_INFORMATION_MBR, PartitionType);
pub(crate) const PARTITION_EX_MBR_RECOGNIZED: usize = offset_of!(PARTITION_INFORMATION_EX, Style)
    + offset_of!(PARTITION_INFORMATION_MBR, RecognizedPartition);
pub(crate) const PARTITION_EX_SIZE: usize = size_of::<PARTITION_INFORMATION_EX>();

pub(crate) const VERIFY_STARTING_OFFSET: usize = offset_of!(VERIFY_INFORMATION, StartingOffset);
pub(crate) const VERIFY_LENGTH: usize = offset_of!(VERIFY_INFORMATION, Length);
/// The input VERIFY needs: the whole structure, tail padding included (as VeraCrypt checks).
pub(crate) const VERIFY_SIZE: usize = size_of::<VERIFY_INFORMATION>();

pub(crate) const DISK_ATTRIBUTES_VERSION: usize = offset_of!(GET_DISK_ATTRIBUTES, Version);
pub(crate) const DISK_ATTRIBUTES_ATTRIBUTES: usize = offset_of!(GET_DISK_ATTRIBUTES, Attributes);
pub(crate) const DISK_ATTRIBUTES_SIZE: usize = size_of::<GET_DISK_ATTRIBUTES>();

pub(crate) const PROPERTY_QUERY_ID: usize = offset_of!(STORAGE_PROPERTY_QUERY, PropertyId);
pub(crate) const PROPERTY_QUERY_TYPE: usize = offset_of!(STORAGE_PROPERTY_QUERY, QueryType);
/// The input a property query needs: PropertyId and QueryType.
pub(crate) const PROPERTY_QUERY_INPUT_MIN: usize =
    offset_of!(STORAGE_PROPERTY_QUERY, QueryType) + size_of::<u32>();
pub(crate) const PROPERTY_QUERY_SIZE: usize = size_of::<STORAGE_PROPERTY_QUERY>();

pub(crate) const DESCRIPTOR_VERSION: usize = offset_of!(STORAGE_DESCRIPTOR_HEADER, Version);
pub(crate) const DESCRIPTOR_SIZE: usize = offset_of!(STORAGE_DESCRIPTOR_HEADER, Size);
pub(crate) const DESCRIPTOR_HEADER_SIZE: usize = size_of::<STORAGE_DESCRIPTOR_HEADER>();

pub(crate) const DEVICE_DESCRIPTOR_DEVICE_TYPE: usize =
    offset_of!(STORAGE_DEVICE_DESCRIPTOR, DeviceType);
pub(crate) const DEVICE_DESCRIPTOR_BUS_TYPE: usize = offset_of!(STORAGE_DEVICE_DESCRIPTOR, BusType);
pub(crate) const DEVICE_DESCRIPTOR_SIZE: usize = size_of::<STORAGE_DEVICE_DESCRIPTOR>();

pub(crate) const ADAPTER_MAX_TRANSFER: usize =
    offset_of!(STORAGE_ADAPTER_DESCRIPTOR, MaximumTransferLength);
pub(crate) const ADAPTER_MAX_PAGES: usize =
    offset_of!(STORAGE_ADAPTER_DESCRIPTOR, MaximumPhysicalPages);
pub(crate) const ADAPTER_ALIGNMENT_MASK: usize =
    offset_of!(STORAGE_ADAPTER_DESCRIPTOR, AlignmentMask);
/// The adapter reply the host probe needs: up to the end of AlignmentMask.
pub(crate) const ADAPTER_REPLY_MIN: usize =
    offset_of!(STORAGE_ADAPTER_DESCRIPTOR, AlignmentMask) + size_of::<u32>();
pub(crate) const ADAPTER_BUS_TYPE: usize = offset_of!(STORAGE_ADAPTER_DESCRIPTOR, BusType);
pub(crate) const ADAPTER_DESCRIPTOR_SIZE: usize = size_of::<STORAGE_ADAPTER_DESCRIPTOR>();

pub(crate) const ALIGNMENT_CACHE_LINE: usize =
    offset_of!(STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, BytesPerCacheLine);
pub(crate) const ALIGNMENT_LOGICAL_SECTOR: usize =
    offset_of!(STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, BytesPerLogicalSector);
pub(crate) const ALIGNMENT_PHYSICAL_SECTOR: usize =
    offset_of!(STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, BytesPerPhysicalSector);
pub(crate) const ALIGNMENT_DESCRIPTOR_SIZE: usize =
    size_of::<STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR>();

pub(crate) const MOUNTDEV_NAME_LENGTH: usize = offset_of!(MOUNTDEV_NAME, NameLength);
pub(crate) const MOUNTDEV_NAME_SIZE: usize = size_of::<MOUNTDEV_NAME>();
pub(crate) const SUGGESTED_LINK_USE_ONLY: usize =
    offset_of!(MOUNTDEV_SUGGESTED_LINK_NAME, UseOnlyIfThereAreNoOtherLinks);
pub(crate) const SUGGESTED_LINK_NAME_LENGTH: usize =
    offset_of!(MOUNTDEV_SUGGESTED_LINK_NAME, NameLength);
pub(crate) const SUGGESTED_LINK_SIZE: usize = size_of::<MOUNTDEV_SUGGESTED_LINK_NAME>();

// A counted name's characters follow its length field directly (`counted_name` relies on it).
const _: () = assert!(offset_of!(MOUNTDEV_NAME, Name) == MOUNTDEV_NAME_LENGTH + 2);
const _: () =
    assert!(offset_of!(MOUNTDEV_SUGGESTED_LINK_NAME, Name) == SUGGESTED_LINK_NAME_LENGTH + 2);

pub(crate) const PARTITION_BOOT: usize = offset_of!(PARTITION_INFORMATION, BootIndicator);
pub(crate) const PARTITION_EX_MBR_HIDDEN: usize = offset_of!(PARTITION_INFORMATION_EX, Style)
    + offset_of!(PARTITION_INFORMATION_MBR, HiddenSectors);

pub(crate) const GEOMETRY_EX_SIZE: usize = size_of::<DISK_GEOMETRY_EX>();
pub(crate) const GEOMETRY_EX_FULL_SIZE: usize = size_of::<DISK_GEOMETRY_EX_FULL>();
pub(crate) const GEOMETRY_EX_PARTITION: usize = offset_of!(DISK_GEOMETRY_EX_FULL, Partition);
pub(crate) const GEOMETRY_EX_DETECTION: usize = offset_of!(DISK_GEOMETRY_EX_FULL, Detection);
pub(crate) const DISK_PARTITION_INFO_SIZE: usize = size_of::<DISK_PARTITION_INFO>();
pub(crate) const DISK_PARTITION_INFO_STYLE: usize = offset_of!(DISK_PARTITION_INFO, PartitionStyle);
pub(crate) const DISK_PARTITION_INFO_SIGNATURE: usize = offset_of!(DISK_PARTITION_INFO, Signature);
pub(crate) const DISK_DETECTION_INFO_SIZE: usize = size_of::<DISK_DETECTION_INFO>();

pub(crate) const LAYOUT_COUNT: usize = offset_of!(DRIVE_LAYOUT_INFORMATION, PartitionCount);
pub(crate) const LAYOUT_SIGNATURE: usize = offset_of!(DRIVE_LAYOUT_INFORMATION, Signature);
pub(crate) const LAYOUT_ENTRY: usize = offset_of!(DRIVE_LAYOUT_INFORMATION, PartitionEntry);
pub(crate) const LAYOUT_SIZE: usize = size_of::<DRIVE_LAYOUT_INFORMATION>();
pub(crate) const LAYOUT_EX_STYLE: usize = offset_of!(DRIVE_LAYOUT_INFORMATION_EX, PartitionStyle);
pub(crate) const LAYOUT_EX_COUNT: usize = offset_of!(DRIVE_LAYOUT_INFORMATION_EX, PartitionCount);
pub(crate) const LAYOUT_EX_SIGNATURE: usize = offset_of!(DRIVE_LAYOUT_INFORMATION_EX, Style)
    + offset_of!(DRIVE_LAYOUT_INFORMATION_MBR, Signature);
pub(crate) const LAYOUT_EX_ENTRY: usize = offset_of!(DRIVE_LAYOUT_INFORMATION_EX, PartitionEntry);
pub(crate) const LAYOUT_EX_SIZE: usize = size_of::<DRIVE_LAYOUT_INFORMATION_EX>();

pub(crate) const MEDIA_TYPES_DEVICE_TYPE: usize = offset_of!(GET_MEDIA_TYPES, DeviceType);
pub(crate) const MEDIA_TYPES_COUNT: usize = offset_of!(GET_MEDIA_TYPES, MediaInfoCount);
pub(crate) const MEDIA_TYPES_INFO: usize = offset_of!(GET_MEDIA_TYPES, MediaInfo);
pub(crate) const MEDIA_TYPES_SIZE: usize = size_of::<GET_MEDIA_TYPES>();
pub(crate) const MEDIA_INFO_CYLINDERS: usize = offset_of!(DEVICE_MEDIA_INFO, Cylinders);
pub(crate) const MEDIA_INFO_MEDIA_TYPE: usize = offset_of!(DEVICE_MEDIA_INFO, MediaType);
pub(crate) const MEDIA_INFO_TRACKS: usize = offset_of!(DEVICE_MEDIA_INFO, TracksPerCylinder);
pub(crate) const MEDIA_INFO_SECTORS: usize = offset_of!(DEVICE_MEDIA_INFO, SectorsPerTrack);
pub(crate) const MEDIA_INFO_BYTES_PER_SECTOR: usize = offset_of!(DEVICE_MEDIA_INFO, BytesPerSector);
pub(crate) const MEDIA_INFO_SIDES: usize = offset_of!(DEVICE_MEDIA_INFO, NumberMediaSides);
pub(crate) const MEDIA_INFO_CHARACTERISTICS: usize =
    offset_of!(DEVICE_MEDIA_INFO, MediaCharacteristics);

pub(crate) const HOTPLUG_SIZE_FIELD: usize = offset_of!(STORAGE_HOTPLUG_INFO, Size);
pub(crate) const HOTPLUG_SIZE: usize = size_of::<STORAGE_HOTPLUG_INFO>();

pub(crate) const CAPACITY_VERSION: usize = offset_of!(STORAGE_READ_CAPACITY, Version);
pub(crate) const CAPACITY_SIZE_FIELD: usize = offset_of!(STORAGE_READ_CAPACITY, Size);
pub(crate) const CAPACITY_BLOCK_LENGTH: usize = offset_of!(STORAGE_READ_CAPACITY, BlockLength);
pub(crate) const CAPACITY_BLOCKS: usize = offset_of!(STORAGE_READ_CAPACITY, NumberOfBlocks);
pub(crate) const CAPACITY_DISK_LENGTH: usize = offset_of!(STORAGE_READ_CAPACITY, DiskLength);
pub(crate) const CAPACITY_SIZE: usize = size_of::<STORAGE_READ_CAPACITY>();

pub(crate) const SEEK_PENALTY_FLAG: usize =
    offset_of!(DEVICE_SEEK_PENALTY_DESCRIPTOR, IncursSeekPenalty);
pub(crate) const SEEK_PENALTY_SIZE: usize = size_of::<DEVICE_SEEK_PENALTY_DESCRIPTOR>();
pub(crate) const TRIM_FLAG: usize = offset_of!(DEVICE_TRIM_DESCRIPTOR, TrimEnabled);
pub(crate) const TRIM_SIZE: usize = size_of::<DEVICE_TRIM_DESCRIPTOR>();
pub(crate) const GPT_ATTRIBUTES_SIZE: usize = size_of::<VOLUME_GET_GPT_ATTRIBUTES_INFORMATION>();

pub(crate) const DEVICE_DESCRIPTOR_REMOVABLE: usize =
    offset_of!(STORAGE_DEVICE_DESCRIPTOR, RemovableMedia);
pub(crate) const DEVICE_DESCRIPTOR_VENDOR: usize =
    offset_of!(STORAGE_DEVICE_DESCRIPTOR, VendorIdOffset);
pub(crate) const DEVICE_DESCRIPTOR_PRODUCT: usize =
    offset_of!(STORAGE_DEVICE_DESCRIPTOR, ProductIdOffset);
pub(crate) const DEVICE_DESCRIPTOR_REVISION: usize =
    offset_of!(STORAGE_DEVICE_DESCRIPTOR, ProductRevisionOffset);
pub(crate) const DEVICE_DESCRIPTOR_SERIAL: usize =
    offset_of!(STORAGE_DEVICE_DESCRIPTOR, SerialNumberOffset);

// The figures measured with mingw-w64's winioctl.h (x86_64, LLP64: `sizeof`/`offsetof` of
// each structure), asserted for every size a reply or request relies on and for the offsets
// of the variable parts. A transcription error fails the build.
const _: () = {
    assert!(LENGTH_INFO_SIZE == 8);
    assert!(GEOMETRY_SIZE == 24);
    assert!(GEOMETRY_EX_SIZE == 40);
    assert!(GEOMETRY_EX_DISK_SIZE == 24);
    assert!(GEOMETRY_EX_BYTES_PER_SECTOR == 20);
    assert!(DISK_PARTITION_INFO_SIZE == 24);
    assert!(DISK_DETECTION_INFO_SIZE == 56);
    assert!(GEOMETRY_EX_PARTITION == 32);
    assert!(GEOMETRY_EX_DETECTION == 56);
    assert!(GEOMETRY_EX_FULL_SIZE == 112);
    assert!(PARTITION_SIZE == 32);
    assert!(PARTITION_EX_SIZE == 144);
    assert!(size_of::<PARTITION_INFORMATION_MBR>() == 24);
    assert!(size_of::<PARTITION_INFORMATION_GPT>() == 112);
    assert!(LAYOUT_SIZE == 40);
    assert!(LAYOUT_ENTRY == 8);
    assert!(LAYOUT_EX_SIZE == 192);
    assert!(LAYOUT_EX_ENTRY == 48);
    assert!(size_of::<DRIVE_LAYOUT_INFORMATION_GPT>() == 40);
    assert!(MEDIA_TYPES_SIZE == 40);
    assert!(MEDIA_TYPES_INFO == 8);
    assert!(size_of::<DEVICE_MEDIA_INFO>() == 32);
    assert!(MEDIA_INFO_MEDIA_TYPE == 8);
    assert!(MEDIA_INFO_SIDES == 24);
    assert!(MEDIA_INFO_CHARACTERISTICS == 28);
    assert!(HOTPLUG_SIZE == 8);
    assert!(CAPACITY_SIZE == 32);
    assert!(CAPACITY_BLOCKS == 16);
    assert!(CAPACITY_DISK_LENGTH == 24);
    assert!(VERIFY_SIZE == 16);
    assert!(PROPERTY_QUERY_SIZE == 12);
    assert!(DEVICE_DESCRIPTOR_SIZE == 40);
    assert!(ADAPTER_DESCRIPTOR_SIZE == 32);
    assert!(ALIGNMENT_DESCRIPTOR_SIZE == 28);
    assert!(SEEK_PENALTY_SIZE == 12);
    assert!(SEEK_PENALTY_FLAG == 8);
    assert!(TRIM_SIZE == 12);
    assert!(TRIM_FLAG == 8);
    assert!(GPT_ATTRIBUTES_SIZE == 8);
    assert!(DESCRIPTOR_HEADER_SIZE == 8);
    assert!(MOUNTDEV_NAME_SIZE == 4);
    assert!(SUGGESTED_LINK_SIZE == 6);
};
