//! The NTSTATUS values the engine returns, as one enum.
//!
//! Owns: the mapping from engine outcomes to NTSTATUS codes. Raw NTSTATUS values leave the
//! engine only through [`Status::ntstatus`], which `wdm` and the user-mode hosts call.

/// An outcome the engine reports for an upper request or a host operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// STATUS_SUCCESS.
    Success,
    /// STATUS_INVALID_PARAMETER: misaligned, out of range, overflowing, or refused by
    /// hidden-volume protection.
    InvalidParameter,
    /// STATUS_INVALID_DEVICE_REQUEST: a major function the volume does not serve.
    InvalidDeviceRequest,
    /// STATUS_MEDIA_WRITE_PROTECTED: a write to a read-only volume.
    MediaWriteProtected,
    /// STATUS_CANCELLED: cancelled while queued (nothing issued), or seen cancelled between two
    /// segments of a direct request (the segments before it were transferred, as with any
    /// failed multi-segment request).
    Cancelled,
    /// STATUS_DEVICE_NOT_READY: the volume is being dismounted.
    DeviceNotReady,
    /// STATUS_DEVICE_BUSY: the volume's keys are blocked (being or already erased).
    DeviceBusy,
    /// STATUS_END_OF_FILE: the host returned fewer bytes than asked.
    EndOfFile,
    /// STATUS_INSUFFICIENT_RESOURCES: a pool was exhausted.
    InsufficientResources,
    /// STATUS_INVALID_USER_BUFFER: the request carries no usable buffer (docs/review.md R14).
    InvalidUserBuffer,
    /// STATUS_IO_DEVICE_ERROR: a generic host failure.
    IoDeviceError,
    /// Any other failure NTSTATUS reported by the host, passed through unchanged.
    Host(u32),
}

impl Status {
    /// The raw NTSTATUS value.
    pub const fn ntstatus(self) -> u32 {
        match self {
            Status::Success => 0x0000_0000,
            Status::InvalidParameter => 0xC000_000D,
            Status::InvalidDeviceRequest => 0xC000_0010,
            Status::MediaWriteProtected => 0xC000_00A2,
            Status::Cancelled => 0xC000_0120,
            Status::DeviceNotReady => 0xC000_00A3,
            Status::DeviceBusy => 0x8000_0011,
            Status::EndOfFile => 0xC000_0011,
            Status::InsufficientResources => 0xC000_009A,
            Status::InvalidUserBuffer => 0xC000_00E8,
            Status::IoDeviceError => 0xC000_0185,
            Status::Host(raw) => raw,
        }
    }

    /// The status for a raw NTSTATUS value (known values map to their variant).
    pub const fn from_ntstatus(raw: u32) -> Status {
        match raw {
            0x0000_0000 => Status::Success,
            0xC000_000D => Status::InvalidParameter,
            0xC000_0010 => Status::InvalidDeviceRequest,
            0xC000_00A2 => Status::MediaWriteProtected,
            0xC000_0120 => Status::Cancelled,
            0xC000_00A3 => Status::DeviceNotReady,
            0x8000_0011 => Status::DeviceBusy,
            0xC000_0011 => Status::EndOfFile,
            0xC000_009A => Status::InsufficientResources,
            0xC000_00E8 => Status::InvalidUserBuffer,
            0xC000_0185 => Status::IoDeviceError,
            other => Status::Host(other),
        }
    }

    /// True for STATUS_SUCCESS.
    pub const fn is_success(self) -> bool {
        matches!(self, Status::Success)
    }

    /// True for "out of memory": STATUS_INSUFFICIENT_RESOURCES or STATUS_NO_MEMORY. The one
    /// test for it: a registry read that failed so is an error, not a missing value, and a
    /// link call that failed so is tried again.
    pub const fn is_out_of_memory(self) -> bool {
        matches!(
            self,
            Status::InsufficientResources | Status::Host(0xC000_0017)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn every_status_round_trips_through_its_ntstatus() {
        let all = [
            Status::Success,
            Status::InvalidParameter,
            Status::InvalidDeviceRequest,
            Status::MediaWriteProtected,
            Status::Cancelled,
            Status::DeviceNotReady,
            Status::DeviceBusy,
            Status::EndOfFile,
            Status::InsufficientResources,
            Status::InvalidUserBuffer,
            Status::IoDeviceError,
            Status::Host(0xC000_0043),
        ];
        for s in all {
            assert_eq!(Status::from_ntstatus(s.ntstatus()), s);
        }
    }
}
