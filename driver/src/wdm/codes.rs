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

    /// STATUS_BUFFER_TOO_SMALL and STATUS_NOT_FOUND, defined with the disk IOCTL answers.
    pub use crate::disk_ioctl::{BUFFER_TOO_SMALL, NOT_FOUND};
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

/// Device and file system control codes: the disk IOCTLs the host open sends (defined with
/// the answers a volume device gives, `disk_ioctl::code`) and the FSCTL it sends.
pub(crate) mod ioctl {
    pub use crate::disk_ioctl::code::{
        DISK_GET_LENGTH_INFO, DISK_IS_WRITABLE, STORAGE_QUERY_PROPERTY,
    };
    /// FSCTL_ALLOW_EXTENDED_DASD_IO.
    #[cfg(not(feature = "wine-host"))]
    pub const FSCTL_ALLOW_EXTENDED_DASD_IO: u32 = 0x0009_0083;
}
