//! W10: IRP_MJ_PNP on a volume device. The volume device of this (non-PnP) driver is in no
//! PnP device stack; what reaches it is what a file system or another driver sends down: the
//! device-usage notification a file system forwards when a paging file, hibernation file or
//! crash dump is placed on the volume, and requests such as IRP_MN_QUERY_DEVICE_RELATIONS
//! TargetDeviceRelation (IoGetRelatedTargetDevice sends it to a file object's device, for
//! example for file-system volume-event notifications, and NTFS passes it down to the volume).
//!
//! Owns: that decision. A usage notification is answered as VeraCrypt 1.26 answers it: a paging
//! file placed on the volume is refused with STATUS_UNSUCCESSFUL, every other one with
//! STATUS_INVALID_DEVICE_REQUEST (hibernation and crash dump cannot work on a volume whose
//! driver is not in the dump stack). Every other minor code is not handled and is completed
//! with the status its sender set, untouched, as the PnP rules ask of a driver that does not
//! handle a minor code (a sender sets STATUS_NOT_SUPPORTED before sending; VeraCrypt
//! overwrites it with STATUS_INVALID_DEVICE_REQUEST, which tells the sender the request failed
//! rather than that nobody handled it). Never: reads the IRP (the glue passes the minor code
//! and, for a usage notification, its type and InPath).

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

/// How a volume device completes an IRP_MJ_PNP request (information 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Completed with this status.
    Complete(Status),
    /// Not handled: completed with the IRP's IoStatus.Status as its sender set it.
    AsSent,
}

impl Answer {
    /// The status the request completes with, when its sender set `sent`.
    pub fn status(self, sent: Status) -> Status {
        match self {
            Answer::Complete(status) => status,
            Answer::AsSent => sent,
        }
    }
}

/// The answer to an IRP_MJ_PNP request with minor code `minor`, and for
/// IRP_MN_DEVICE_USAGE_NOTIFICATION its parameters.
pub fn answer(minor: u8, usage: Option<UsageNotification>) -> Answer {
    match (minor, usage) {
        (
            MN_DEVICE_USAGE_NOTIFICATION,
            Some(UsageNotification {
                kind: usage::PAGING,
                in_path: true,
            }),
        ) => Answer::Complete(super::UNSUCCESSFUL),
        (MN_DEVICE_USAGE_NOTIFICATION, _) => Answer::Complete(Status::InvalidDeviceRequest),
        _ => Answer::AsSent,
    }
}
