//! The client side of the vcdirect driver: builds IOCTL requests with `vcdirect::abi`, sends
//! them to `\\.\vcdirect` with DeviceIoControl (Windows), and turns replies into JSON.
//!
//! Owns: what vcctl does in user mode before a mount (open the header, pick the key and the
//! geometry, compute the hidden-volume protection range). Never: parses the ABI itself
//! (that is `vcdirect::abi`, shared with the driver).

use std::fmt;

use serde_json::{json, Value};
use vcdirect::abi::{
    self, AbiError, GatesMessage, ListReply, MountReply, MountRequest, StatusReply, Target,
};
use vcdirect::volume::{CounterSnapshot, LegacyReason, VolumeMemory};
use zeroize::Zeroizing;

use crate::volume::{self, Credentials, Kind};
use crate::VolumeError;

/// Why a driver command failed. Displays as one line.
#[derive(Debug)]
pub enum DriverError {
    /// Driver commands need Windows.
    NeedsWindows,
    /// Opening the volume header in user mode failed.
    Volume(VolumeError),
    /// A request could not be encoded or a reply decoded.
    Abi(AbiError),
    /// The control device could not be opened or the IOCTL failed.
    Io(String),
    /// Bad command-line value.
    Usage(String),
    /// The driver refused the IOCTL with STATUS_ACCESS_DENIED (W4): what was refused.
    AccessDenied(&'static str),
    /// The mount's drive letter is in use (STATUS_OBJECT_NAME_COLLISION, W2).
    LetterInUse,
    /// W1: a dismount refused because the filesystem on the volume is in use (`V:`).
    InUse(String),
    /// No mounted volume has this letter or id (nothing changed).
    NoSuchVolume(String),
    /// The mount's host is not one a volume can live on (STATUS_OBJECT_TYPE_MISMATCH, W11).
    HostType,
    /// With `--protect-hidden`: which of the two headers did not open, and why.
    Header(&'static str, VolumeError),
    /// The installed driver predates the mount request's extended layout (it refused the
    /// request's size): it mounts AES volumes only. Names the volume's cipher.
    DriverTooOld(&'static str),
}

/// ERROR_ACCESS_DENIED: how DeviceIoControl reports the driver's STATUS_ACCESS_DENIED.
const ERROR_ACCESS_DENIED: i32 = 5;
/// ERROR_BUSY: how DeviceIoControl reports STATUS_DEVICE_BUSY (a refused dismount, W1).
const ERROR_BUSY: i32 = 170;
/// ERROR_NOT_FOUND: how DeviceIoControl reports STATUS_NOT_FOUND (no such volume).
const ERROR_NOT_FOUND: i32 = 1168;
/// ERROR_INVALID_HANDLE: how DeviceIoControl reports STATUS_OBJECT_TYPE_MISMATCH, the mount
/// IOCTL's answer to a host no volume can live on (W11).
const ERROR_INVALID_HANDLE: i32 = 6;
/// ERROR_BAD_LENGTH: how DeviceIoControl reports STATUS_INFO_LENGTH_MISMATCH, an older
/// driver's answer to a mount request of the extended layout (a size it does not know).
pub const ERROR_BAD_LENGTH: i32 = 24;

/// The failure of the mount IOCTL that sent `request`: a request of the extended layout (any
/// algorithm but AES) refused for its length came to a driver older than that layout, which
/// is one line naming the cipher; anything else as `ioctl_error` says.
#[cfg_attr(not(windows), allow(dead_code))]
pub fn mount_error(request: &[u8], e: std::io::Error) -> DriverError {
    if request.len() == MountRequest::SIZE_EXTENDED && e.raw_os_error() == Some(ERROR_BAD_LENGTH) {
        let id = request
            .get(MountRequest::SIZE..MountRequest::SIZE + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .unwrap_or(0);
        let name = vcdirect::crypto::Algorithm::from_id(id).map_or("?", |a| a.name());
        return DriverError::DriverTooOld(name);
    }
    ioctl_error(abi::IOCTL_MOUNT, e)
}

/// How a volume is named in messages: `V:` or `volume 3`.
pub fn target_name(t: Target) -> String {
    match t {
        Target::Letter(c) => format!("{c}:"),
        Target::Id(id) => format!("volume {id}"),
    }
}

/// The failure of a dismount of `target`: in use (W1) and unknown volume are one line each.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn dismount_error(target: Target, e: std::io::Error) -> DriverError {
    match e.raw_os_error() {
        Some(ERROR_BUSY) => DriverError::InUse(target_name(target)),
        Some(ERROR_NOT_FOUND) => DriverError::NoSuchVolume(target_name(target)),
        _ => ioctl_error(abi::IOCTL_DISMOUNT, e),
    }
}

/// ERROR_ALREADY_EXISTS: how DeviceIoControl reports STATUS_OBJECT_NAME_COLLISION.
const ERROR_ALREADY_EXISTS: i32 = 183;

/// The failure of IOCTL `code`: one clear line for a refusal by the driver's policy (W4) or a
/// drive letter in use (W2).
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn ioctl_error(code: u32, e: std::io::Error) -> DriverError {
    if code == abi::IOCTL_MOUNT && e.raw_os_error() == Some(ERROR_ALREADY_EXISTS) {
        return DriverError::LetterInUse;
    }
    if code == abi::IOCTL_MOUNT && e.raw_os_error() == Some(ERROR_INVALID_HANDLE) {
        return DriverError::HostType;
    }
    if e.raw_os_error() != Some(ERROR_ACCESS_DENIED) {
        return DriverError::Io(format!("IOCTL {code:#x} failed: {e}"));
    }
    DriverError::AccessDenied(match code {
        abi::IOCTL_DISMOUNT | abi::IOCTL_STATUS => {
            "the volume was mounted by another user; only they or an administrator may do this"
        }
        abi::IOCTL_GATES_SET | abi::IOCTL_GATES_RELOAD => {
            "changing the gates needs an administrator"
        }
        abi::IOCTL_ERASE_KEYS => "erasing the keys needs an administrator",
        _ => "the driver refused this request",
    })
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::NeedsWindows => write!(
                f,
                "this command needs Windows and the vcdirect driver (\\\\.\\vcdirect)"
            ),
            DriverError::Volume(e) => write!(f, "{e}"),
            DriverError::Abi(e) => write!(f, "driver ABI: {e}"),
            DriverError::Io(s) => write!(f, "{s}"),
            DriverError::Usage(s) => write!(f, "{s}"),
            DriverError::AccessDenied(why) => write!(f, "access denied: {why}"),
            DriverError::LetterInUse => write!(
                f,
                "the drive letter is already in use (a drive, a mapped network drive or another volume): choose another with --letter"
            ),
            DriverError::InUse(v) => write!(
                f,
                "{v} is in use: close files and windows on it, or use --force"
            ),
            DriverError::NoSuchVolume(v) => write!(f, "no mounted volume {v} (nothing changed)"),
            DriverError::Header(which, e) => write!(f, "{which} did not open: {e}"),
            DriverError::DriverTooOld(cipher) => write!(
                f,
                "the installed driver is too old for cipher {cipher}: it mounts AES volumes only (install this vcctl's driver)"
            ),
            DriverError::HostType => write!(
                f,
                "the host is not a disk, a partition or a file on a disk or network file system (a pipe, a mailslot, a directory or a vcdirect volume cannot hold a volume)"
            ),
        }
    }
}

impl From<VolumeError> for DriverError {
    fn from(e: VolumeError) -> Self {
        DriverError::Volume(e)
    }
}

impl From<AbiError> for DriverError {
    fn from(e: AbiError) -> Self {
        DriverError::Abi(e)
    }
}

/// What `vcctl mount` was asked.
pub struct MountArgs {
    /// Host path (raw partition/drive or file).
    pub host: String,
    /// Credentials of the volume to mount.
    pub creds: Credentials,
    /// Normal (outer) or hidden volume.
    pub kind: Kind,
    /// Hidden volume's credentials when protecting it.
    pub hidden_creds: Option<Credentials>,
    /// Drive letter.
    pub letter: Option<char>,
    /// Read-only mount.
    pub read_only: bool,
    /// Shared instead of exclusive host open.
    pub shared: bool,
    /// Wine test build only: the test disk driver's name.
    pub wine_host_driver_name: Option<String>,
}

/// Opens the header(s) in user mode and builds the mount request. `raw_sector` is the logical
/// sector size of a raw partition or drive (`None` for a container file): headers are read in
/// whole sectors of it, and a volume whose sector size differs is refused here, as the driver
/// and VeraCrypt 1.26 refuse it. What the user must be told (the backup header was used, a
/// vulnerable master key) is added to `warnings`. With `--protect-hidden` an error names
/// the header that did not open.
pub fn mount_request<R: std::io::Read + std::io::Seek>(
    args: &MountArgs,
    file: &mut R,
    size: u64,
    raw_sector: Option<u32>,
    warnings: &mut Vec<String>,
) -> Result<Zeroizing<Vec<u8>>, DriverError> {
    let sector = raw_sector.unwrap_or(512);
    let protecting = args.hidden_creds.is_some();
    let which = |header: &'static str| {
        move |e: VolumeError| {
            if protecting {
                DriverError::Header(header, e)
            } else {
                DriverError::Volume(e)
            }
        }
    };
    let opened = volume::open_host(file, size, sector, &args.creds, args.kind)
        .map_err(which("the outer volume's header (outer password)"))?;
    warnings.extend(opened.warnings(&args.host));
    if let Some(host) = raw_sector.filter(|s| *s != opened.header.sector_size) {
        return Err(DriverError::Usage(format!(
            "sector size mismatch: the volume uses {}-byte sectors, the host {host}-byte sectors",
            opened.header.sector_size
        )));
    }
    let mut flags = 0;
    if args.read_only {
        flags |= abi::MOUNT_READ_ONLY;
    }
    if args.shared {
        flags |= abi::MOUNT_SHARED;
    }
    if args.kind == Kind::Hidden {
        flags |= abi::MOUNT_HIDDEN;
    }
    let mut protected_range = (0, 0);
    if let Some(hc) = &args.hidden_creds {
        let hidden = volume::open_host(file, size, sector, hc, Kind::Hidden).map_err(which(
            "the hidden volume's header (hidden password, for --protect-hidden)",
        ))?;
        warnings.extend(hidden.warnings(&args.host));
        flags |= abi::MOUNT_PROTECT_HIDDEN;
        // docs/design.md §4: [hidden encrypted-area start, + hidden-volume-size field).
        protected_range = (hidden.header.data_offset, hidden.header.hidden_volume_size);
    }
    let letter = match args.letter {
        None => None,
        Some(c) if c.is_ascii_alphabetic() => Some(c.to_ascii_uppercase()),
        Some(c) => return Err(DriverError::Usage(format!("bad drive letter {c:?}"))),
    };
    let req = MountRequest {
        flags,
        sector_size: opened.header.sector_size,
        data_offset: opened.header.data_offset,
        data_size: opened.header.data_size,
        protected_range,
        drive_letter: letter,
        algorithm: opened.algorithm,
        key: abi::MasterKey::try_new(opened.key_area())?,
        host_path: args.host.encode_utf16().collect(),
        wine_host_driver_name: args
            .wine_host_driver_name
            .as_deref()
            .unwrap_or("")
            .encode_utf16()
            .collect(),
    };
    Ok(req.build()?)
}

/// Parses `V`, `V:` or a volume id.
pub fn parse_target(s: &str) -> Result<Target, DriverError> {
    let t = s.trim_end_matches(['\\', ':']);
    let mut chars = t.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => Ok(Target::Letter(c.to_ascii_uppercase())),
        _ => match t.parse::<u32>() {
            Ok(id) if id > 0 => Ok(Target::Id(id)),
            _ => Err(DriverError::Usage(format!(
                "{s:?} is neither a drive letter (V:) nor a volume id"
            ))),
        },
    }
}

fn letter_json(c: Option<char>) -> Value {
    c.map_or(Value::Null, |c| Value::String(format!("{c}:")))
}

fn flags_json(flags: u32) -> Value {
    json!({
        "read_only": flags & abi::MOUNT_READ_ONLY != 0,
        "shared": flags & abi::MOUNT_SHARED != 0,
        "hidden": flags & abi::MOUNT_HIDDEN != 0,
        "protect_hidden": flags & abi::MOUNT_PROTECT_HIDDEN != 0,
    })
}

/// JSON for a mount reply.
pub fn mount_json(r: &MountReply) -> Value {
    json!({ "volume_id": r.volume_id, "letter": letter_json(r.drive_letter) })
}

/// JSON for a status reply.
pub fn status_json(s: &StatusReply) -> Value {
    json!({
        "volume_id": s.volume_id,
        "letter": letter_json(s.drive_letter),
        "flags": flags_json(s.flags),
        "gates": { "read": s.gates.read, "write": s.gates.write },
        "crypto_backend": String::from_utf8_lossy(&s.backend),
        "counters": counters_json(&s.counters, s.later_counters),
        "data_size": s.data_size,
        "volume_memory": memory_json(s.memory.as_ref()),
    })
}

/// Nonpaged bytes by purpose and their total (null from a driver without the memory block).
fn memory_json(m: Option<&VolumeMemory>) -> Value {
    let Some(m) = m else {
        return Value::Null;
    };
    let mut map = serde_json::Map::new();
    for (name, v) in m.fields() {
        map.insert(name.to_string(), v.into());
    }
    map.insert("total_bytes".to_string(), m.total().into());
    map.into()
}

/// Every counter; the ones an older driver's reply does not carry (`later` false) are null.
fn counters_json(c: &CounterSnapshot, later: bool) -> Value {
    let mut map = serde_json::Map::new();
    for (i, (name, v)) in c.fields().into_iter().enumerate() {
        let carried = later || i < abi::STATUS_COUNTERS;
        map.insert(
            name.to_string(),
            if carried { v.into() } else { Value::Null },
        );
    }
    let reasons: serde_json::Map<String, Value> = LegacyReason::ALL
        .iter()
        .zip(c.legacy_by_reason)
        .map(|(r, v)| (r.name().to_string(), v.into()))
        .collect();
    map.insert("legacy_by_reason".to_string(), reasons.into());
    map.into()
}

/// JSON for a list reply.
pub fn list_json(l: &ListReply) -> Value {
    Value::Array(
        l.entries
            .iter()
            .map(|e| {
                json!({
                    "volume_id": e.volume_id,
                    "letter": letter_json(e.drive_letter),
                    // W2: "mount manager", "global link" or "none".
                    "letter_via": e.letter_kind.name(),
                    "flags": flags_json(e.flags),
                })
            })
            .collect(),
    )
}

/// JSON for gates.
pub fn gates_json(g: &GatesMessage) -> Value {
    json!({ "read": g.read, "write": g.write })
}

/// The `dbcv_unitmask` of a DEV_BROADCAST_VOLUME for drive `letter` (bit 0 = A:), as the
/// WM_DEVICECHANGE broadcast after a letter appears or disappears carries it (W2).
pub fn unit_mask(letter: char) -> Option<u32> {
    let c = letter.to_ascii_uppercase();
    c.is_ascii_uppercase()
        .then(|| 1u32 << (c as u32 - 'A' as u32))
}

#[cfg(windows)]
mod broadcast;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::{
    dismount, dismount_all, erase_keys, gates_get, gates_reload, gates_set, list, mount, status,
};

#[cfg(not(windows))]
mod elsewhere {
    //! Every driver command on a system without the driver.
    use super::{DriverError, MountArgs};
    use serde_json::Value;

    /// Mounts a volume (Windows only).
    pub fn mount(_: &MountArgs) -> Result<Value, DriverError> {
        Err(DriverError::NeedsWindows)
    }
    /// Dismounts a volume (Windows only).
    pub fn dismount(_: &str, _: bool) -> Result<Value, DriverError> {
        Err(DriverError::NeedsWindows)
    }
    /// Dismounts every volume (Windows only).
    pub fn dismount_all(_: bool) -> Result<Value, DriverError> {
        Err(DriverError::NeedsWindows)
    }
    /// Lists volumes (Windows only).
    pub fn list() -> Result<Value, DriverError> {
        Err(DriverError::NeedsWindows)
    }
    /// Volume status (Windows only).
    pub fn status(_: &str) -> Result<Value, DriverError> {
        Err(DriverError::NeedsWindows)
    }
    /// Gates (Windows only).
    pub fn gates_get() -> Result<Value, DriverError> {
        Err(DriverError::NeedsWindows)
    }
    /// Sets gates (Windows only).
    pub fn gates_set(_: Option<bool>, _: Option<bool>) -> Result<Value, DriverError> {
        Err(DriverError::NeedsWindows)
    }
    /// Reloads gates (Windows only).
    pub fn gates_reload() -> Result<Value, DriverError> {
        Err(DriverError::NeedsWindows)
    }
    /// Erases all keys (Windows only).
    pub fn erase_keys() -> Result<Value, DriverError> {
        Err(DriverError::NeedsWindows)
    }
}
#[cfg(not(windows))]
pub use elsewhere::{
    dismount, dismount_all, erase_keys, gates_get, gates_reload, gates_set, list, mount, status,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_type_refused_mount_is_one_clear_line() {
        let refused = std::io::Error::from_raw_os_error(ERROR_INVALID_HANDLE);
        let line = ioctl_error(abi::IOCTL_MOUNT, refused).to_string();
        assert!(line.starts_with("the host is not a disk"), "{line}");
        assert!(!line.contains('\n'));
        // Only the mount's answer is about the host.
        let other = std::io::Error::from_raw_os_error(ERROR_INVALID_HANDLE);
        assert!(!ioctl_error(abi::IOCTL_STATUS, other)
            .to_string()
            .starts_with("the host is not"));
    }

    #[test]
    fn w2_letter_in_use_is_one_clear_line_and_unit_masks_name_the_drive() {
        let exists = std::io::Error::from_raw_os_error(ERROR_ALREADY_EXISTS);
        let line = ioctl_error(abi::IOCTL_MOUNT, exists).to_string();
        assert!(line.starts_with("the drive letter is already in use"));
        assert!(!line.contains('\n'));
        // Only the mount's collision is about a letter.
        let exists = std::io::Error::from_raw_os_error(ERROR_ALREADY_EXISTS);
        assert!(matches!(
            ioctl_error(abi::IOCTL_STATUS, exists),
            DriverError::Io(_)
        ));
        assert_eq!(unit_mask('A'), Some(1));
        assert_eq!(unit_mask('v'), Some(1 << 21));
        assert_eq!(unit_mask('Z'), Some(1 << 25));
        assert_eq!(unit_mask('1'), None);
    }

    #[test]
    fn w2_list_json_says_how_each_letter_was_made() {
        let l = ListReply {
            entries: vec![
                abi::ListEntry {
                    volume_id: 1,
                    flags: 0,
                    drive_letter: Some('V'),
                    letter_kind: abi::LinkKind::MountManager,
                },
                abi::ListEntry {
                    volume_id: 2,
                    flags: 0,
                    drive_letter: None,
                    letter_kind: abi::LinkKind::None,
                },
            ],
            unload_disabled: false,
        };
        let j = list_json(&l);
        assert_eq!(j[0]["letter"], "V:");
        assert_eq!(j[0]["letter_via"], "mount manager");
        assert_eq!(j[1]["letter"], Value::Null);
        assert_eq!(j[1]["letter_via"], "none");
    }

    #[test]
    fn w1_in_use_refusal_is_one_line() {
        let busy = std::io::Error::from_raw_os_error(ERROR_BUSY);
        let line = dismount_error(Target::Letter('V'), busy).to_string();
        assert_eq!(
            line,
            "V: is in use: close files and windows on it, or use --force"
        );
        let missing = std::io::Error::from_raw_os_error(ERROR_NOT_FOUND);
        let line = dismount_error(Target::Id(7), missing).to_string();
        assert_eq!(line, "no mounted volume volume 7 (nothing changed)");
        let denied = std::io::Error::from_raw_os_error(ERROR_ACCESS_DENIED);
        assert!(matches!(
            dismount_error(Target::Letter('V'), denied),
            DriverError::AccessDenied(_)
        ));
    }

    #[test]
    fn w4_access_denied_is_one_clear_line() {
        let denied = || std::io::Error::from_raw_os_error(ERROR_ACCESS_DENIED);
        let line = ioctl_error(abi::IOCTL_ERASE_KEYS, denied()).to_string();
        assert_eq!(
            line,
            "access denied: erasing the keys needs an administrator"
        );
        let line = ioctl_error(abi::IOCTL_DISMOUNT, denied()).to_string();
        assert!(line.starts_with("access denied: the volume was mounted by another user"));
        assert!(!line.contains('\n'));
        assert!(matches!(
            ioctl_error(abi::IOCTL_GATES_SET, denied()),
            DriverError::AccessDenied(_)
        ));
        // Any other error keeps the OS's text.
        assert!(matches!(
            ioctl_error(abi::IOCTL_LIST, std::io::Error::from_raw_os_error(87)),
            DriverError::Io(_)
        ));
    }

    #[test]
    fn status_json_names_gates_backend_and_every_counter() {
        let counters = CounterSnapshot {
            direct_reads: 5,
            legacy_by_reason: [2, 0, 0, 0],
            ..Default::default()
        };
        let reply = StatusReply {
            volume_id: 3,
            flags: abi::MOUNT_READ_ONLY,
            gates: GatesMessage {
                read: true,
                write: false,
            },
            drive_letter: Some('V'),
            backend: b"aes-ni".to_vec(),
            counters,
            data_size: 1 << 20,
            memory: Some(VolumeMemory {
                direct_bounce: 8 << 20,
                legacy_fragments: 1 << 20,
                ..Default::default()
            }),
            later_counters: true,
        };
        let parsed = StatusReply::parse(&reply.build().unwrap()).unwrap();
        let j = status_json(&parsed);
        assert_eq!(j["volume_memory"]["direct_bounce"], 8 << 20);
        assert_eq!(j["volume_memory"]["legacy_unaligned"], 0);
        assert_eq!(j["volume_memory"]["total_bytes"], 9 << 20);
        assert_eq!(j["letter"], "V:");
        assert_eq!(j["gates"]["read"], true);
        assert_eq!(j["gates"]["write"], false);
        assert_eq!(j["crypto_backend"], "aes-ni");
        assert_eq!(j["flags"]["read_only"], true);
        assert_eq!(j["counters"]["direct_reads"], 5);
        assert_eq!(j["counters"]["slot_waits"], 0);
        assert_eq!(j["counters"]["dispatch_issued"], 0);
        assert_eq!(j["counters"]["detached"], 0);
        assert_eq!(j["counters"]["legacy_by_reason"]["gate_off"], 2);
        // An older driver's reply (no memory block, no later counters) still prints, with
        // null figures.
        let older = StatusReply {
            memory: None,
            later_counters: false,
            ..parsed
        };
        let j = status_json(&StatusReply::parse(&older.build().unwrap()).unwrap());
        assert!(j["volume_memory"].is_null());
        assert!(j["counters"]["dispatch_issued"].is_null());
        assert!(j["counters"]["detached"].is_null());
        assert_eq!(j["counters"]["direct_reads"], 5);
    }

    #[test]
    fn mount_request_carries_header_geometry_key_and_protection() {
        use crate::create::{create, CreateSpec, Fill, VolumeSpec};
        use crate::kdf::Prf;
        let path = std::env::temp_dir().join(format!("vcctl-mountreq-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let spec = |pw: &[u8]| VolumeSpec {
            password: Zeroizing::new(pw.to_vec()),
            prf: Prf::Sha256,
            pim: 1,
        };
        let layout = create(
            &path,
            &CreateSpec {
                size: 1 << 20,
                outer: spec(b"o"),
                hidden: Some((65536, spec(b"h"))),
                fill: Fill::Random,
                algorithm: crate::cipher::AES,
                hidden_algorithm: None,
                filesystem: crate::create::Filesystem::Fat,
            },
        )
        .unwrap();
        let creds = |pw: &[u8]| Credentials {
            password: Zeroizing::new(pw.to_vec()),
            prf: None,
            pim: 1,
            keyfiles: Vec::new(),
        };
        let args = MountArgs {
            host: r"\?\GLOBALROOT\Device\Harddisk1\Partition2".to_string(),
            creds: creds(b"o"),
            kind: Kind::Normal,
            hidden_creds: Some(creds(b"h")),
            letter: Some('v'),
            read_only: false,
            shared: false,
            wine_host_driver_name: None,
        };
        let mut file = std::fs::File::open(&path).unwrap();
        let mut warnings = Vec::new();
        let bytes = mount_request(&args, &mut file, 1 << 20, None, &mut warnings).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let req = MountRequest::parse(&bytes, false).unwrap();
        assert_eq!(req.flags, abi::MOUNT_PROTECT_HIDDEN);
        assert_eq!((req.data_offset, req.data_size), layout.outer);
        assert_eq!(req.protected_range, layout.hidden.unwrap());
        assert_eq!(req.drive_letter, Some('V'));
        assert_eq!(req.sector_size, 512);

        // A failed protect-hidden mount names the header that did not open; without
        // --protect-hidden the error is the volume's own, as before.
        let host = args.host.clone();
        let fails = |outer: &[u8], hidden: Option<&[u8]>| {
            let args = MountArgs {
                host: host.clone(),
                creds: creds(outer),
                kind: Kind::Normal,
                hidden_creds: hidden.map(creds),
                letter: None,
                read_only: false,
                shared: false,
                wine_host_driver_name: None,
            };
            let mut file = std::fs::File::open(&path).unwrap();
            let err = mount_request(&args, &mut file, 1 << 20, None, &mut Vec::new());
            err.unwrap_err().to_string()
        };
        for (outer, hidden, named) in [
            (b"x" as &[u8], b"h" as &[u8], "the outer volume's header"),
            (b"o", b"x", "the hidden volume's header"),
        ] {
            let err = fails(outer, Some(hidden));
            assert!(
                err.starts_with(named) && err.contains("wrong password"),
                "{err}"
            );
            assert!(!err.contains('\n'));
        }
        let err = fails(b"x", None);
        assert!(
            err.contains("wrong password") && !err.contains("header did not open"),
            "{err}"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn targets_parse_letters_and_ids() {
        assert_eq!(parse_target("v:").unwrap(), Target::Letter('V'));
        assert_eq!(parse_target("V:\\").unwrap(), Target::Letter('V'));
        assert_eq!(parse_target("7").unwrap(), Target::Id(7));
        assert!(parse_target("0").is_err());
        assert!(parse_target("VV").is_err());
    }
}
