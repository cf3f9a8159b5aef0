//! W14: the disk and storage structures the glue reads and writes as bytes, for the glue.
//!
//! Owns: nothing of its own any more: the `#[repr(C)]` declarations (ntdddisk.h, ntddstor.h,
//! ntddvol.h, mountdev.h: the WDK bindings do not carry these headers), their named offsets and
//! sizes, and the compile-time assertions of them against figures measured with mingw-w64's
//! headers live in the portable `disk_ioctl::layout`, which answers the volume device's IOCTLs;
//! this module re-exports them for the host probe (`host/open.rs`) and for
//! `layout_arm64.rs`, which asserts, against the figures measured with Microsoft's headers
//! (`arm64-layouts.tsv`), the size and alignment of GET_LENGTH_INFORMATION, DISK_GEOMETRY,
//! DISK_GEOMETRY_EX, PARTITION_INFORMATION, PARTITION_INFORMATION_EX, STORAGE_PROPERTY_QUERY,
//! STORAGE_DEVICE_DESCRIPTOR, STORAGE_ADAPTER_DESCRIPTOR and
//! STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, and five offsets: a drift of those from Windows fails
//! the build.
//! Never: allocates or passes these declarations to Windows (replies are written as bytes).

pub(super) use crate::disk_ioctl::layout::*;
