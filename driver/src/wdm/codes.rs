//! The NTSTATUS and I/O control codes of the kernel glue, each defined once.
//!
//! Owns: every NTSTATUS value the glue uses beyond the engine's own [`Status`] variants (whose
//! numbers live in `Status::ntstatus`, the one mapping), and every IOCTL/FSCTL code it sends or
//! serves. Never: the control device's own IOCTLs (the `abi` module defines those for the
//! driver and `vcctl` alike) or flags of kernel structures (each user keeps those).
//!
//! [`Status`]: crate::Status

/// NTSTATUS values. Outcomes are [`Status`](crate::Status) values (they travel through the
/// engine's status type like any host failure); the two protocol answers that are never a
/// request's final status are raw NTSTATUS.
pub(crate) mod nts {
    use crate::Status;
    use wdk_sys::NTSTATUS;

    /// STATUS_BUFFER_TOO_SMALL.
    pub const BUFFER_TOO_SMALL: Status = Status::Host(0xC000_0023);
    /// STATUS_BUFFER_OVERFLOW (a warning: part of the reply was written).
    pub const BUFFER_OVERFLOW: Status = Status::Host(0x8000_0005);
    /// STATUS_NOT_SUPPORTED.
    pub const NOT_SUPPORTED: Status = Status::Host(0xC000_00BB);
    /// STATUS_NOT_FOUND.
    pub const NOT_FOUND: Status = Status::Host(0xC000_0225);
    /// STATUS_DELETE_PENDING.
    pub const DELETE_PENDING: Status = Status::Host(0xC000_0056);
    /// STATUS_OBJECT_NAME_NOT_FOUND.
    #[cfg(feature = "wine-host")]
    pub const OBJECT_NAME_NOT_FOUND: Status = Status::Host(0xC000_0034);
    /// STATUS_OBJECT_NAME_COLLISION.
    pub const OBJECT_NAME_COLLISION: Status = Status::Host(0xC000_0035);
    /// STATUS_NO_SUCH_DEVICE.
    #[cfg(feature = "wine-host")]
    pub const NO_SUCH_DEVICE: Status = Status::Host(0xC000_000E);

    /// STATUS_PENDING: a dispatch routine pended the IRP, or a driver called will complete it
    /// later.
    pub const PENDING: NTSTATUS = 0x0000_0103;
    /// STATUS_MORE_PROCESSING_REQUIRED: a completion routine keeps the IRP for its owner.
    pub const MORE_PROCESSING_REQUIRED: NTSTATUS = 0xC000_0016_u32 as NTSTATUS;
}

/// Device and file system control codes: the disk IOCTLs a volume device serves and the ones
/// the host open sends.
pub(crate) mod ioctl {
    /// IOCTL_DISK_GET_DRIVE_GEOMETRY.
    pub const DISK_GET_DRIVE_GEOMETRY: u32 = 0x0007_0000;
    /// IOCTL_DISK_GET_DRIVE_GEOMETRY_EX.
    pub const DISK_GET_DRIVE_GEOMETRY_EX: u32 = 0x0007_00A0;
    /// IOCTL_DISK_GET_LENGTH_INFO.
    pub const DISK_GET_LENGTH_INFO: u32 = 0x0007_405C;
    /// IOCTL_DISK_GET_PARTITION_INFO.
    pub const DISK_GET_PARTITION_INFO: u32 = 0x0007_4004;
    /// IOCTL_DISK_GET_PARTITION_INFO_EX.
    pub const DISK_GET_PARTITION_INFO_EX: u32 = 0x0007_0048;
    /// IOCTL_DISK_IS_WRITABLE.
    pub const DISK_IS_WRITABLE: u32 = 0x0007_0024;
    /// IOCTL_DISK_VERIFY.
    pub const DISK_VERIFY: u32 = 0x0007_0014;
    /// IOCTL_DISK_CHECK_VERIFY.
    pub const DISK_CHECK_VERIFY: u32 = 0x0007_4800;
    /// IOCTL_DISK_GET_DISK_ATTRIBUTES.
    pub const DISK_GET_DISK_ATTRIBUTES: u32 = 0x0007_00F0;
    /// IOCTL_STORAGE_CHECK_VERIFY.
    pub const STORAGE_CHECK_VERIFY: u32 = 0x002D_4800;
    /// IOCTL_STORAGE_CHECK_VERIFY2.
    pub const STORAGE_CHECK_VERIFY2: u32 = 0x002D_0800;
    /// IOCTL_STORAGE_QUERY_PROPERTY.
    pub const STORAGE_QUERY_PROPERTY: u32 = 0x002D_1400;
    /// IOCTL_MOUNTDEV_QUERY_UNIQUE_ID.
    pub const MOUNTDEV_QUERY_UNIQUE_ID: u32 = 0x004D_0000;
    /// IOCTL_MOUNTDEV_QUERY_DEVICE_NAME.
    pub const MOUNTDEV_QUERY_DEVICE_NAME: u32 = 0x004D_0008;
    /// IOCTL_MOUNTDEV_QUERY_SUGGESTED_LINK_NAME.
    pub const MOUNTDEV_QUERY_SUGGESTED_LINK_NAME: u32 = 0x004D_000C;
    /// FSCTL_ALLOW_EXTENDED_DASD_IO.
    #[cfg(not(feature = "wine-host"))]
    pub const FSCTL_ALLOW_EXTENDED_DASD_IO: u32 = 0x0009_0083;
}
