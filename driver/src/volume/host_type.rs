//! Which hosts a volume may be mounted on (W11).
//!
//! Owns: the decision, from what the host open reached, whether it can hold a VeraCrypt
//! volume. Never: opens or asks anything (the glue gathers the facts: the product from the
//! open handle, FileFsDeviceInformation and FileStandardInformation; the Wine build from the
//! host's device object).
//!
//! Why it matters: the legacy I/O thread reads and writes its host synchronously, and R13
//! forbids abandoning it. A host that never answers (a named pipe whose server stops, a
//! mailslot) would block it forever, and with it dismount and shutdown; a directory has no
//! bytes to serve; a vcdirect volume opened raw as the host of another would send the
//! volume's I/O back into this driver's own threads. Any user who may open such an object
//! could mount it, so the refusal comes before anything else of the mount. As VeraCrypt, a
//! volume lives on a disk, a partition, or a file on a disk or network file system.

use crate::platform::HostKind;
use crate::Status;

/// The status a mount gets when its host is not one a volume can live on:
/// STATUS_OBJECT_TYPE_MISMATCH (0xC0000024; vcctl names the cause).
pub const HOST_TYPE_REFUSED: Status = Status::Host(0xC000_0024);

/// FILE_DEVICE_* values (the DeviceType of a DEVICE_OBJECT or of FILE_FS_DEVICE_INFORMATION).
pub mod device_type {
    /// FILE_DEVICE_CD_ROM.
    pub const CD_ROM: u32 = 0x02;
    /// FILE_DEVICE_DFS.
    pub const DFS: u32 = 0x06;
    /// FILE_DEVICE_DISK: a disk or partition, and a file system volume on one.
    pub const DISK: u32 = 0x07;
    /// FILE_DEVICE_MAILSLOT.
    pub const MAILSLOT: u32 = 0x0C;
    /// FILE_DEVICE_NAMED_PIPE.
    pub const NAMED_PIPE: u32 = 0x11;
    /// FILE_DEVICE_MULTI_UNC_PROVIDER: the multiple UNC provider, the device a file opened
    /// by a UNC path is reached through.
    pub const MULTI_UNC_PROVIDER: u32 = 0x10;
    /// FILE_DEVICE_NETWORK.
    pub const NETWORK: u32 = 0x12;
    /// FILE_DEVICE_NETWORK_FILE_SYSTEM: a file on a redirector (SMB and others).
    pub const NETWORK_FILE_SYSTEM: u32 = 0x14;
    /// FILE_DEVICE_NULL.
    pub const NULL: u32 = 0x15;
    /// FILE_DEVICE_VIRTUAL_DISK.
    pub const VIRTUAL_DISK: u32 = 0x24;
    /// FILE_DEVICE_MASS_STORAGE.
    pub const MASS_STORAGE: u32 = 0x2D;
    /// FILE_DEVICE_DVD.
    pub const DVD: u32 = 0x33;
}

/// The device types a raw host may have: a disk, a partition or a volume on one, a virtual
/// disk (VHD), optical media.
pub const RAW_HOST_TYPES: &[u32] = &[
    device_type::DISK,
    device_type::VIRTUAL_DISK,
    device_type::MASS_STORAGE,
    device_type::CD_ROM,
    device_type::DVD,
];

/// The device types a file host's open may reach: those of a raw host (a file on a local file
/// system, whose volume reports its disk's type) and a network file system's.
pub const FILE_HOST_TYPES: &[u32] = &[
    device_type::DISK,
    device_type::VIRTUAL_DISK,
    device_type::MASS_STORAGE,
    device_type::CD_ROM,
    device_type::DVD,
    device_type::NETWORK_FILE_SYSTEM,
    device_type::MULTI_UNC_PROVIDER,
    device_type::NETWORK,
    device_type::DFS,
];

/// What the host open reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostTypeFacts {
    /// A device itself (raw) or a file below it.
    pub kind: HostKind,
    /// The device type the open reached (FILE_DEVICE_*): FileFsDeviceInformation's DeviceType
    /// in the product, the host device object's DeviceType in the Wine build.
    pub device_type: u32,
    /// The open reached a directory (FileStandardInformation's Directory).
    pub directory: bool,
    /// The open reached a named pipe, wherever it is served (FilePipeInformation answered):
    /// a remote pipe by UNC path passes the device-type test through the UNC provider.
    pub pipe: bool,
    /// The device the open reached belongs to this driver: one of our volumes (opened raw,
    /// or a file on a file system mounted on it).
    pub own_volume: bool,
}

/// Whether a volume may be mounted on the host the facts describe: `Ok`, or
/// [`HOST_TYPE_REFUSED`] for a named pipe (local or remote), a mailslot, a directory, a vcdirect
/// volume opened raw, and any device type that is not a disk's (raw), or a disk or network file
/// system's (a file). A container file on a file system mounted on one of our volumes is a
/// file like any other (nested volumes are VeraCrypt's too): only the raw open is refused.
pub fn check_host_type(facts: &HostTypeFacts) -> Result<(), Status> {
    let own_raw = facts.own_volume && facts.kind == HostKind::RawDevice;
    if facts.directory || facts.pipe || own_raw {
        return Err(HOST_TYPE_REFUSED);
    }
    let accepted = match facts.kind {
        HostKind::RawDevice => RAW_HOST_TYPES,
        HostKind::FileContainer => FILE_HOST_TYPES,
    };
    if accepted.contains(&facts.device_type) {
        Ok(())
    } else {
        Err(HOST_TYPE_REFUSED)
    }
}

#[cfg(test)]
mod tests {
    use super::device_type::*;
    use super::*;

    fn facts(kind: HostKind, device_type: u32) -> HostTypeFacts {
        HostTypeFacts {
            kind,
            device_type,
            directory: false,
            pipe: false,
            own_volume: false,
        }
    }

    #[test]
    fn host_type_table() {
        use HostKind::{FileContainer as File, RawDevice as Raw};
        let refused = Err(HOST_TYPE_REFUSED);
        let dir = HostTypeFacts {
            directory: true,
            ..facts(File, DISK)
        };
        let own = HostTypeFacts {
            own_volume: true,
            ..facts(Raw, DISK)
        };
        let nested = HostTypeFacts {
            own_volume: true,
            ..facts(File, DISK)
        };
        let remote_pipe = HostTypeFacts {
            pipe: true,
            ..facts(File, MULTI_UNC_PROVIDER)
        };
        let table: &[(&str, HostTypeFacts, Result<(), Status>)] = &[
            ("a disk or partition", facts(Raw, DISK), Ok(())),
            ("a virtual disk", facts(Raw, VIRTUAL_DISK), Ok(())),
            ("a file on a disk file system", facts(File, DISK), Ok(())),
            ("a network file", facts(File, NETWORK_FILE_SYSTEM), Ok(())),
            ("a file on DFS", facts(File, DFS), Ok(())),
            (
                "a file by UNC path",
                facts(File, MULTI_UNC_PROVIDER),
                Ok(()),
            ),
            ("a directory", dir, refused),
            ("a named pipe", facts(File, NAMED_PIPE), refused),
            (
                "a named pipe opened as a device",
                facts(Raw, NAMED_PIPE),
                refused,
            ),
            ("a mailslot", facts(File, MAILSLOT), refused),
            ("the null device", facts(Raw, NULL), refused),
            ("a vcdirect volume opened raw", own, refused),
            (
                "a container on a file system on a vcdirect volume",
                nested,
                Ok(()),
            ),
            ("a remote named pipe by UNC path", remote_pipe, refused),
            (
                "a network redirector opened raw",
                facts(Raw, NETWORK_FILE_SYSTEM),
                refused,
            ),
            ("an unknown device type", facts(Raw, 0x8000), refused),
        ];
        for (what, f, want) in table {
            assert_eq!(check_host_type(f), *want, "{what}: {f:?}");
        }
        assert_eq!(HOST_TYPE_REFUSED.ntstatus(), 0xC000_0024);
    }

    #[test]
    fn host_type_only_disk_and_file_system_types_pass() {
        // Every device type but the accepted ones is refused, raw and as a file; a file may
        // live wherever a raw host may.
        assert!(RAW_HOST_TYPES.iter().all(|t| FILE_HOST_TYPES.contains(t)));
        for t in 0..0x100u32 {
            let raw = check_host_type(&facts(HostKind::RawDevice, t)).is_ok();
            let file = check_host_type(&facts(HostKind::FileContainer, t)).is_ok();
            assert_eq!(raw, RAW_HOST_TYPES.contains(&t), "{t:#x}");
            assert_eq!(file, FILE_HOST_TYPES.contains(&t), "{t:#x}");
        }
    }
}
