//! The mount manager's request buffers (mountmgr.h), built and read as bytes.
//!
//! Owns: the IOCTL codes the driver sends to `\Device\MountPointManager`, one `#[repr(C)]`
//! declaration per input structure as mountmgr.h declares it (offsets and sizes come from
//! `offset_of!`/`size_of`, never literals), the encoders the glue sends and the decoders the
//! wine-host stand-in reads them back with. Never: sends anything (the glue does).

#![allow(non_camel_case_types, non_snake_case, dead_code)]

use alloc::vec::Vec;
use core::mem::{offset_of, size_of};

use crate::Status;

/// MOUNTMGRCONTROLTYPE ('m').
const MOUNTMGR_TYPE: u32 = 0x6D;
/// FILE_READ_ACCESS.
const READ: u32 = 1;
/// FILE_WRITE_ACCESS.
const WRITE: u32 = 2;

const fn ctl(function: u32, access: u32) -> u32 {
    (MOUNTMGR_TYPE << 16) | (access << 14) | (function << 2)
}

/// IOCTL_MOUNTMGR_CREATE_POINT (in: MOUNTMGR_CREATE_POINT_INPUT).
pub const IOCTL_CREATE_POINT: u32 = ctl(0, READ | WRITE);
/// IOCTL_MOUNTMGR_DELETE_POINTS (in: MOUNTMGR_MOUNT_POINT, out: MOUNTMGR_MOUNT_POINTS).
pub const IOCTL_DELETE_POINTS: u32 = ctl(1, READ | WRITE);
/// IOCTL_MOUNTMGR_VOLUME_ARRIVAL_NOTIFICATION (in: MOUNTMGR_TARGET_NAME).
pub const IOCTL_VOLUME_ARRIVAL_NOTIFICATION: u32 = ctl(11, READ);

/// IOCTL_MOUNTMGR_VOLUME_REMOVAL_NOTIFICATION (in: MOUNTMGR_TARGET_NAME).
pub const IOCTL_VOLUME_REMOVAL_NOTIFICATION: u32 = ctl(22, READ);

const _: () = assert!(IOCTL_VOLUME_REMOVAL_NOTIFICATION == 0x006D_4058);
const _: () = assert!(IOCTL_CREATE_POINT == 0x006D_C000);
const _: () = assert!(IOCTL_DELETE_POINTS == 0x006D_C004);
const _: () = assert!(IOCTL_VOLUME_ARRIVAL_NOTIFICATION == 0x006D_402C);

/// Output room for IOCTL_MOUNTMGR_DELETE_POINTS: the mount manager writes the points it
/// deleted (MOUNTMGR_MOUNT_POINTS with their names) and deletes nothing when they do not fit.
pub const DELETE_POINTS_OUTPUT: usize = 1024;

/// MOUNTMGR_TARGET_NAME.
#[repr(C)]
struct MOUNTMGR_TARGET_NAME {
    DeviceNameLength: u16,
    DeviceName: [u16; 1],
}

/// MOUNTMGR_CREATE_POINT_INPUT.
#[repr(C)]
struct MOUNTMGR_CREATE_POINT_INPUT {
    SymbolicLinkNameOffset: u16,
    SymbolicLinkNameLength: u16,
    DeviceNameOffset: u16,
    DeviceNameLength: u16,
}

/// MOUNTMGR_MOUNT_POINT.
#[repr(C)]
struct MOUNTMGR_MOUNT_POINT {
    SymbolicLinkNameOffset: u32,
    SymbolicLinkNameLength: u16,
    Reserved1: u16,
    UniqueIdOffset: u32,
    UniqueIdLength: u16,
    Reserved2: u16,
    DeviceNameOffset: u32,
    DeviceNameLength: u16,
    Reserved3: u16,
}

const _: () = assert!(size_of::<MOUNTMGR_CREATE_POINT_INPUT>() == 8);
const _: () = assert!(size_of::<MOUNTMGR_MOUNT_POINT>() == 24);
const _: () = assert!(offset_of!(MOUNTMGR_TARGET_NAME, DeviceName) == 2);

fn put16(buf: &mut [u8], at: usize, v: u16) {
    buf[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn get16(buf: &[u8], at: usize) -> Result<u16, Status> {
    buf.get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or(Status::InvalidParameter)
}
fn get32(buf: &[u8], at: usize) -> Result<u32, Status> {
    buf.get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(Status::InvalidParameter)
}
fn put_name(buf: &mut [u8], at: usize, name: &[u16]) {
    for (i, c) in name.iter().enumerate() {
        put16(buf, at + 2 * i, *c);
    }
}
/// The UTF-16 name of `bytes` bytes at `at` (an odd or out-of-bounds range is refused).
fn get_name(buf: &[u8], at: usize, bytes: usize) -> Result<Vec<u16>, Status> {
    if !bytes.is_multiple_of(2) {
        return Err(Status::InvalidParameter);
    }
    let end = at.checked_add(bytes).ok_or(Status::InvalidParameter)?;
    let raw = buf.get(at..end).ok_or(Status::InvalidParameter)?;
    let mut name = crate::io::try_vec(bytes / 2)?;
    name.extend(
        raw.chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]])),
    );
    Ok(name)
}

/// `len` zero bytes in room for at least `room` (the reply the request's buffer must also
/// hold), allocated fallibly (W6: STATUS_INSUFFICIENT_RESOURCES, asks the injection).
pub fn zeroed(len: usize, room: usize) -> Result<Vec<u8>, Status> {
    let mut buf = crate::io::try_vec(len.max(room))?;
    buf.resize(len, 0);
    Ok(buf)
}
fn bytes16(name: &[u16]) -> Result<u16, Status> {
    u16::try_from(name.len() * 2).map_err(|_| Status::InvalidParameter)
}

/// The arrival and removal notifications' input: MOUNTMGR_TARGET_NAME naming `device`.
pub fn target_name(device: &[u16]) -> Result<Vec<u8>, Status> {
    let at = offset_of!(MOUNTMGR_TARGET_NAME, DeviceName);
    let mut buf = zeroed(at + 2 * device.len(), 0)?;
    put16(
        &mut buf,
        offset_of!(MOUNTMGR_TARGET_NAME, DeviceNameLength),
        bytes16(device)?,
    );
    put_name(&mut buf, at, device);
    Ok(buf)
}

/// Reads a MOUNTMGR_TARGET_NAME back (the stand-in).
pub fn parse_target_name(buf: &[u8]) -> Result<Vec<u16>, Status> {
    let len = get16(buf, offset_of!(MOUNTMGR_TARGET_NAME, DeviceNameLength))?;
    get_name(
        buf,
        offset_of!(MOUNTMGR_TARGET_NAME, DeviceName),
        usize::from(len),
    )
}

/// The create-point input: MOUNTMGR_CREATE_POINT_INPUT, then the link, then the device name.
pub fn create_point_input(link: &[u16], device: &[u16]) -> Result<Vec<u8>, Status> {
    let head = size_of::<MOUNTMGR_CREATE_POINT_INPUT>();
    let (link_len, device_len) = (bytes16(link)?, bytes16(device)?);
    let link_at = head;
    let device_at = link_at + usize::from(link_len);
    let total = device_at + usize::from(device_len);
    let device_at16 = u16::try_from(device_at).map_err(|_| Status::InvalidParameter)?;
    let mut buf = zeroed(total, 0)?;
    put16(
        &mut buf,
        offset_of!(MOUNTMGR_CREATE_POINT_INPUT, SymbolicLinkNameOffset),
        link_at as u16,
    );
    put16(
        &mut buf,
        offset_of!(MOUNTMGR_CREATE_POINT_INPUT, SymbolicLinkNameLength),
        link_len,
    );
    put16(
        &mut buf,
        offset_of!(MOUNTMGR_CREATE_POINT_INPUT, DeviceNameOffset),
        device_at16,
    );
    put16(
        &mut buf,
        offset_of!(MOUNTMGR_CREATE_POINT_INPUT, DeviceNameLength),
        device_len,
    );
    put_name(&mut buf, link_at, link);
    put_name(&mut buf, device_at, device);
    Ok(buf)
}

/// Reads a create-point input back: (link, device).
pub fn parse_create_point_input(buf: &[u8]) -> Result<(Vec<u16>, Vec<u16>), Status> {
    let f = |o| get16(buf, o).map(usize::from);
    let link = get_name(
        buf,
        f(offset_of!(
            MOUNTMGR_CREATE_POINT_INPUT,
            SymbolicLinkNameOffset
        ))?,
        f(offset_of!(
            MOUNTMGR_CREATE_POINT_INPUT,
            SymbolicLinkNameLength
        ))?,
    )?;
    let device = get_name(
        buf,
        f(offset_of!(MOUNTMGR_CREATE_POINT_INPUT, DeviceNameOffset))?,
        f(offset_of!(MOUNTMGR_CREATE_POINT_INPUT, DeviceNameLength))?,
    )?;
    Ok((link, device))
}

/// The delete-points input: MOUNTMGR_MOUNT_POINT naming only the symbolic link `link`
/// (unique id and device name empty), then the link.
pub fn delete_points_input(link: &[u16]) -> Result<Vec<u8>, Status> {
    let head = size_of::<MOUNTMGR_MOUNT_POINT>();
    let len = bytes16(link)?;
    let mut buf = zeroed(head + usize::from(len), DELETE_POINTS_OUTPUT)?;
    put32(
        &mut buf,
        offset_of!(MOUNTMGR_MOUNT_POINT, SymbolicLinkNameOffset),
        head as u32,
    );
    put16(
        &mut buf,
        offset_of!(MOUNTMGR_MOUNT_POINT, SymbolicLinkNameLength),
        len,
    );
    put_name(&mut buf, head, link);
    Ok(buf)
}

/// Reads a delete-points input back: the link it names (refused unless it names only a
/// symbolic link, the one form the driver sends).
pub fn parse_delete_points_input(buf: &[u8]) -> Result<Vec<u16>, Status> {
    let unique = get16(buf, offset_of!(MOUNTMGR_MOUNT_POINT, UniqueIdLength))?;
    let device = get16(buf, offset_of!(MOUNTMGR_MOUNT_POINT, DeviceNameLength))?;
    if unique != 0 || device != 0 {
        return Err(Status::InvalidParameter);
    }
    let at = get32(
        buf,
        offset_of!(MOUNTMGR_MOUNT_POINT, SymbolicLinkNameOffset),
    )?;
    let len = get16(
        buf,
        offset_of!(MOUNTMGR_MOUNT_POINT, SymbolicLinkNameLength),
    )?;
    get_name(buf, at as usize, usize::from(len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::namespace::utf16;

    #[test]
    fn w2_mount_manager_buffers_have_mountmgr_h_layout_and_read_back() {
        let dev = utf16("\\Device\\VcVolume12");
        let link = utf16("\\DosDevices\\V:");
        let t = target_name(&dev).unwrap();
        assert_eq!(t.len(), 2 + 2 * dev.len());
        assert_eq!(u16::from_le_bytes([t[0], t[1]]) as usize, 2 * dev.len());
        assert_eq!(parse_target_name(&t).unwrap(), dev);

        let c = create_point_input(&link, &dev).unwrap();
        // SymbolicLinkNameOffset 8, length, DeviceNameOffset 8 + link bytes, length.
        let w = |i: usize| u16::from_le_bytes([c[2 * i], c[2 * i + 1]]) as usize;
        assert_eq!(
            [w(0), w(1), w(2), w(3)],
            [8, 2 * link.len(), 8 + 2 * link.len(), 2 * dev.len()]
        );
        assert_eq!(c.len(), 8 + 2 * (link.len() + dev.len()));
        assert_eq!(parse_create_point_input(&c).unwrap(), (link.clone(), dev));

        let d = delete_points_input(&link).unwrap();
        assert_eq!(d.len(), 24 + 2 * link.len());
        assert_eq!(u32::from_le_bytes([d[0], d[1], d[2], d[3]]), 24);
        assert!(d[6..24].iter().all(|b| *b == 0), "no unique id, no device");
        assert_eq!(parse_delete_points_input(&d).unwrap(), link);
    }

    /// W6: every request buffer is allocated fallibly (the delete-points one with the room
    /// for its reply, so sending it allocates nothing more).
    #[cfg(feature = "fault-switches")]
    #[test]
    fn w6_a_request_buffer_that_cannot_be_allocated_is_insufficient_resources() {
        use crate::faults::fail_allocation_at;
        let (dev, link) = (utf16("\\Device\\VcVolume3"), utf16("\\DosDevices\\V:"));
        let builds: [&dyn Fn() -> Result<Vec<u8>, Status>; 3] = [
            &|| target_name(&dev),
            &|| create_point_input(&link, &dev),
            &|| delete_points_input(&link),
        ];
        for (i, build) in builds.iter().enumerate() {
            fail_allocation_at(1);
            assert_eq!(build().err(), Some(Status::InsufficientResources), "{i}");
            fail_allocation_at(0);
            assert!(build().is_ok(), "{i}");
        }
        let d = delete_points_input(&link).unwrap();
        assert!(
            d.capacity() >= DELETE_POINTS_OUTPUT,
            "the reply's room is made with it"
        );
    }

    #[test]
    fn w2_malformed_mount_manager_buffers_are_refused() {
        assert!(parse_target_name(&[]).is_err());
        assert!(parse_target_name(&[9, 0, 1]).is_err()); // odd length
        assert!(parse_target_name(&[40, 0, 1, 0]).is_err()); // past the end
        let mut c = create_point_input(&utf16("\\DosDevices\\V:"), &utf16("\\Device\\X")).unwrap();
        c[4] = 0xF0; // device offset past the end
        assert!(parse_create_point_input(&c).is_err());
        let mut d = delete_points_input(&utf16("\\DosDevices\\V:")).unwrap();
        d[20] = 2; // a device name: not what the driver sends
        assert!(parse_delete_points_input(&d).is_err());
    }
}
