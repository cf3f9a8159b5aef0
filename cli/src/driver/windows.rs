//! DeviceIoControl on `\\.\vcdirect`. The only unsafe code of vcctl.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::os::windows::io::AsRawHandle;

use serde_json::{json, Value};
use vcdirect::abi::{self, EmptyRequest, EraseReply, GatesMessage, ListReply, MountReply};
use vcdirect::abi::{StatusReply, Target, VolumeRequest};
use windows_sys::Win32::System::IO::DeviceIoControl;

use super::{gates_json, list_json, mount_json, parse_target, status_json, DriverError, MountArgs};

/// IOCTL_DISK_GET_LENGTH_INFO: the length of a raw partition or drive.
const IOCTL_DISK_GET_LENGTH_INFO: u32 = 0x0007_405C;
/// IOCTL_DISK_GET_DRIVE_GEOMETRY: the logical sector size of a raw partition or drive.
const IOCTL_DISK_GET_DRIVE_GEOMETRY: u32 = 0x0007_0000;

fn control() -> Result<File, DriverError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(abi::DEVICE_PATH)
        .map_err(|e| {
            DriverError::Io(format!(
                "cannot open {}: {e} (is the driver started?)",
                abi::DEVICE_PATH
            ))
        })
}

/// Sends one IOCTL; returns the bytes the driver wrote.
fn ioctl(file: &File, code: u32, input: &[u8], out_len: usize) -> Result<Vec<u8>, DriverError> {
    ioctl_raw(file, code, input, out_len).map_err(|e| super::ioctl_error(code, e))
}

/// Sends one IOCTL; the OS error as it came on failure.
fn ioctl_raw(file: &File, code: u32, input: &[u8], out_len: usize) -> std::io::Result<Vec<u8>> {
    let mut out = vec![0u8; out_len];
    let mut returned: u32 = 0;
    let too_large = |what| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
    let in_len = u32::try_from(input.len()).map_err(|_| too_large("input too large"))?;
    let out_cap = u32::try_from(out.len()).map_err(|_| too_large("output too large"))?;
    // SAFETY: the handle is owned by `file`, which outlives the call; the input and output
    // pointers come from live slices whose lengths are passed alongside; the call is
    // synchronous (no OVERLAPPED), so nothing uses the buffers after it returns.
    let ok = unsafe {
        DeviceIoControl(
            file.as_raw_handle(),
            code,
            input.as_ptr().cast(),
            in_len,
            out.as_mut_ptr().cast(),
            out_cap,
            &mut returned,
            std::ptr::null_mut(),
        )
    };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    out.truncate(returned as usize);
    Ok(out)
}

/// The host's size and, for a raw partition or drive, its logical sector size (`None`: a file,
/// or a device that did not say).
fn host_geometry(file: &File) -> Result<(u64, Option<u32>), DriverError> {
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > 0 {
        return Ok((len, None));
    }
    // A raw partition or drive: ask the disk stack.
    let out = ioctl(file, IOCTL_DISK_GET_LENGTH_INFO, &[], 8)?;
    let bytes: [u8; 8] = out
        .as_slice()
        .try_into()
        .map_err(|_| DriverError::Io("IOCTL_DISK_GET_LENGTH_INFO returned no length".into()))?;
    // DISK_GEOMETRY: Cylinders (8), MediaType, TracksPerCylinder, SectorsPerTrack,
    // BytesPerSector (4 each). A host that does not answer is read in 512-byte sectors and
    // left to the driver's own check.
    let sector = ioctl(file, IOCTL_DISK_GET_DRIVE_GEOMETRY, &[], 24)
        .ok()
        .and_then(|geo| geo.get(20..24).and_then(|b| b.try_into().ok()))
        .map(u32::from_le_bytes)
        .filter(|s| matches!(s, 512 | 1024 | 2048 | 4096));
    Ok((u64::from_le_bytes(bytes), sector))
}

/// Opens the header in user mode and asks the driver to mount.
pub fn mount(args: &MountArgs) -> Result<Value, DriverError> {
    let mut host = File::open(&args.host)
        .map_err(|e| DriverError::Io(format!("cannot open {}: {e}", args.host)))?;
    let (size, raw_sector) = host_geometry(&host)?;
    let mut warnings = Vec::new();
    let req = super::mount_request(args, &mut host, size, raw_sector, &mut warnings)?;
    drop(host);
    for w in &warnings {
        eprintln!("vcctl: {w}");
    }
    let out = ioctl_raw(&control()?, abi::IOCTL_MOUNT, &req, MountReply::SIZE)
        .map_err(|e| super::mount_error(&req, e))?;
    let reply = MountReply::parse(&out)?;
    // W2: Explorer and other programs learn about the new drive.
    if let Some(c) = reply.drive_letter {
        super::broadcast::arrived(c);
    }
    let mut json = mount_json(&reply);
    json["warnings"] = warnings.into();
    Ok(json)
}

/// The drive letter of the volume `target` names, if it has one (for the broadcast after a
/// dismount; a volume named by id is looked up in the list first).
fn letter_of(dev: &File, target: Target) -> Option<char> {
    match target {
        Target::Letter(c) => Some(c),
        Target::Id(id) => {
            let out = ioctl(
                dev,
                abi::IOCTL_LIST,
                &EmptyRequest::build(),
                ListReply::MAX_SIZE,
            );
            let list = ListReply::parse(&out.ok()?).ok()?;
            list.entries
                .iter()
                .find(|e| e.volume_id == id)
                .and_then(|e| e.drive_letter)
        }
    }
}

/// Dismounts a volume.
pub fn dismount(volume: &str, force: bool) -> Result<Value, DriverError> {
    let target = parse_target(volume)?;
    dismount_target(&control()?, target, force)?;
    Ok(json!({ "dismounted": volume }))
}

fn dismount_target(file: &File, target: Target, force: bool) -> Result<(), DriverError> {
    let req = VolumeRequest {
        target,
        flags: if force { abi::DISMOUNT_FORCE } else { 0 },
    }
    .build()?;
    let letter = letter_of(file, target);
    ioctl_raw(file, abi::IOCTL_DISMOUNT, &req, 0).map_err(|e| super::dismount_error(target, e))?;
    // W2: the drive is gone.
    if let Some(c) = letter {
        super::broadcast::removed(c);
    }
    // W3: say so when this dismount (or an earlier one) latched "unload disabled".
    let out = ioctl(
        file,
        abi::IOCTL_LIST,
        &EmptyRequest::build(),
        ListReply::MAX_SIZE,
    );
    if let Some(list) = out.ok().and_then(|o| ListReply::parse(&o).ok()) {
        if list.unload_disabled {
            eprintln!("{}", abi::UNLOAD_DISABLED_NOTE);
        }
    }
    Ok(())
}

/// Dismounts every volume the caller sees, each as `dismount` would; the ones refused are
/// named in the error (the others are dismounted).
pub fn dismount_all(force: bool) -> Result<Value, DriverError> {
    let file = control()?;
    let out = ioctl(
        &file,
        abi::IOCTL_LIST,
        &EmptyRequest::build(),
        ListReply::MAX_SIZE,
    )?;
    let mut done = Vec::new();
    let mut refused = Vec::new();
    for e in ListReply::parse(&out)?.entries {
        let target = Target::Id(e.volume_id);
        match dismount_target(&file, target, force) {
            Ok(()) => done.push(e.volume_id),
            Err(err) => refused.push(format!("volume {}: {err}", e.volume_id)),
        }
    }
    if !refused.is_empty() {
        return Err(DriverError::Io(refused.join("; ")));
    }
    Ok(json!({ "dismounted": done }))
}

/// Lists mounted volumes.
pub fn list() -> Result<Value, DriverError> {
    let out = ioctl(
        &control()?,
        abi::IOCTL_LIST,
        &EmptyRequest::build(),
        ListReply::MAX_SIZE,
    )?;
    let reply = ListReply::parse(&out)?;
    if reply.unload_disabled {
        eprintln!("{}", abi::UNLOAD_DISABLED_NOTE);
    }
    Ok(list_json(&reply))
}

/// Status of one volume.
pub fn status(volume: &str) -> Result<Value, DriverError> {
    let req = VolumeRequest {
        target: parse_target(volume)?,
        flags: 0,
    }
    .build()?;
    let out = ioctl(&control()?, abi::IOCTL_STATUS, &req, StatusReply::SIZE)?;
    Ok(status_json(&StatusReply::parse(&out)?))
}

/// Gates the driver holds for future mounts.
pub fn gates_get() -> Result<Value, DriverError> {
    let out = ioctl(
        &control()?,
        abi::IOCTL_GATES_GET,
        &EmptyRequest::build(),
        GatesMessage::SIZE,
    )?;
    Ok(gates_json(&GatesMessage::parse(&out)?))
}

/// Sets the gates for future mounts (unset ones keep their value).
pub fn gates_set(read: Option<bool>, write: Option<bool>) -> Result<Value, DriverError> {
    let dev = control()?;
    let now = GatesMessage::parse(&ioctl(
        &dev,
        abi::IOCTL_GATES_GET,
        &EmptyRequest::build(),
        GatesMessage::SIZE,
    )?)?;
    let want = GatesMessage {
        read: read.unwrap_or(now.read),
        write: write.unwrap_or(now.write),
    };
    let out = ioctl(
        &dev,
        abi::IOCTL_GATES_SET,
        &want.build(),
        GatesMessage::SIZE,
    )?;
    Ok(gates_json(&GatesMessage::parse(&out)?))
}

/// Makes the driver re-read the gates from the registry.
pub fn gates_reload() -> Result<Value, DriverError> {
    let out = ioctl(
        &control()?,
        abi::IOCTL_GATES_RELOAD,
        &EmptyRequest::build(),
        GatesMessage::SIZE,
    )?;
    Ok(gates_json(&GatesMessage::parse(&out)?))
}

/// Erases the keys of every mounted volume.
pub fn erase_keys() -> Result<Value, DriverError> {
    let out = ioctl(
        &control()?,
        abi::IOCTL_ERASE_KEYS,
        &EmptyRequest::build(),
        EraseReply::SIZE,
    )?;
    Ok(json!({ "volumes_erased": EraseReply::parse(&out)?.volumes }))
}
