//! W10: IRP_MJ_PNP on a volume device. The only PnP request that reaches a volume device of
//! this (non-PnP) driver is the device-usage notification a file system forwards when a paging
//! file, hibernation file or crash dump is placed on the volume; VeraCrypt 1.26 refuses a
//! paging file with STATUS_UNSUCCESSFUL and completes every other PnP request with
//! STATUS_INVALID_DEVICE_REQUEST, hibernation and crash dump included (neither can work on a
//! volume whose driver is not in the dump stack).
//!
//! Owns: that decision. Never: reads the IRP (the glue passes the minor code and, for a usage
//! notification, its type and InPath).

use crate::Status;

/// IRP_MN_DEVICE_USAGE_NOTIFICATION.
pub const MN_DEVICE_USAGE_NOTIFICATION: u8 = 0x16;

/// DEVICE_USAGE_NOTIFICATION_TYPE values.
pub mod usage {
    /// DeviceUsageTypeUndefined.
    pub const UNDEFINED: u32 = 0;
    /// DeviceUsageTypePaging.
    pub const PAGING: u32 = 1;
    /// DeviceUsageTypeHibernation.
    pub const HIBERNATION: u32 = 2;
    /// DeviceUsageTypeDumpFile.
    pub const DUMP_FILE: u32 = 3;
    /// DeviceUsageTypeBoot.
    pub const BOOT: u32 = 4;
}

/// A device-usage notification's parameters (Parameters.UsageNotification).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsageNotification {
    /// DEVICE_USAGE_NOTIFICATION_TYPE.
    pub kind: u32,
    /// TRUE when the file is being placed on the volume, FALSE when it is removed.
    pub in_path: bool,
}

/// The status a volume device completes an IRP_MJ_PNP request with (information 0): minor
/// code `minor`, and for IRP_MN_DEVICE_USAGE_NOTIFICATION its parameters.
pub fn answer(minor: u8, usage: Option<UsageNotification>) -> Status {
    match (minor, usage) {
        (
            MN_DEVICE_USAGE_NOTIFICATION,
            Some(UsageNotification {
                kind: usage::PAGING,
                in_path: true,
            }),
        ) => super::UNSUCCESSFUL,
        _ => Status::InvalidDeviceRequest,
    }
}
