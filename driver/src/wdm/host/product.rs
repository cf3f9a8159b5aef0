//! The product's host lookup (real Windows): one ZwCreateFile handle, as VeraCrypt opens the
//! host, the device object behind it, and Zw* I/O on that handle.
//!
//! Owns: the open (share mode, access checked against the mount IOCTL's caller), the
//! FILE_OBJECT reference and related device object (R10: no second handle), the device and
//! file system controls and the size query on the handle, and the legacy path's synchronous
//! reads. Never: sends child requests (`child_irp` does) or interprets the answers (`open`
//! does).

use core::mem::{align_of, offset_of, size_of};
use core::ptr::NonNull;

use wdk_sys::ntddk::{
    IoGetRelatedDeviceObject, ObReferenceObjectByHandle, ObfDereferenceObject, ZwClose,
    ZwCreateFile, ZwDeviceIoControlFile, ZwFsControlFile, ZwQueryInformationFile,
    ZwQueryVolumeInformationFile, ZwReadFile, ZwWriteFile,
};
use wdk_sys::{
    _FILE_INFORMATION_CLASS::{FilePipeInformation, FileStandardInformation},
    _FSINFOCLASS::FileFsDeviceInformation,
    _MODE::KernelMode,
    FILE_FS_DEVICE_INFORMATION, FILE_OBJECT, FILE_OPEN, FILE_PIPE_INFORMATION, FILE_SHARE_READ,
    FILE_SHARE_WRITE, FILE_STANDARD_INFORMATION, GENERIC_READ, GENERIC_WRITE, HANDLE,
    IO_STATUS_BLOCK, LARGE_INTEGER, OBJECT_ATTRIBUTES, OBJ_CASE_INSENSITIVE,
    OBJ_FORCE_ACCESS_CHECK, OBJ_KERNEL_HANDLE, PVOID, SYNCHRONIZE, UNICODE_STRING,
};

use super::super::codes::ioctl;
use super::super::remove_lock::RemoveLock;
use super::super::strings::{unicode, OwnedUnicode};
use super::open::{probe, OpenParams};
use super::KernelHost;
use crate::platform::{HostKind, HostLimits};
use crate::volume::host_type::{check_host_type, HostTypeFacts};
use crate::Status;

const FILE_WRITE_THROUGH: u32 = 0x0000_0002;
const FILE_NO_INTERMEDIATE_BUFFERING: u32 = 0x0000_0008;
const FILE_SYNCHRONOUS_IO_NONALERT: u32 = 0x0000_0020;
const FILE_RANDOM_ACCESS: u32 = 0x0000_0800;
const FILE_ATTRIBUTE_NORMAL: u32 = 0x80;
/// IO_TYPE_FILE: the Type field of a FILE_OBJECT.
const IO_TYPE_FILE: i16 = 5;

pub(super) fn open(params: &OpenParams<'_>) -> Result<KernelHost, Status> {
    let mut name = OwnedUnicode::copy(params.path)?;
    // W6: the child requests' remove lock, allocated fallibly before anything needs undoing.
    let children = RemoveLock::try_new()?;
    let access = if params.read_only {
        GENERIC_READ | SYNCHRONIZE
    } else {
        GENERIC_READ | GENERIC_WRITE | SYNCHRONIZE
    };
    let share = if params.shared {
        FILE_SHARE_READ | FILE_SHARE_WRITE
    } else {
        0
    };
    let options = FILE_RANDOM_ACCESS
        | FILE_WRITE_THROUGH
        | FILE_SYNCHRONOUS_IO_NONALERT
        | FILE_NO_INTERMEDIATE_BUFFERING;
    // The open is checked against the mount IOCTL's caller (we run in its thread): a user can
    // only mount a host they could open themselves.
    let handle = zw_open(
        ZwName::Owned(&mut name),
        ZwOpen {
            access,
            share,
            options,
            as_caller: true,
        },
    )?;
    let mut object: PVOID = core::ptr::null_mut();
    // SAFETY: `handle` is the kernel handle just opened; no type filter (checked below).
    let status = unsafe {
        ObReferenceObjectByHandle(
            handle,
            access,
            core::ptr::null_mut(),
            KernelMode as i8,
            &mut object,
            core::ptr::null_mut(),
        )
    };
    let file = object.cast::<FILE_OBJECT>();
    // SAFETY: on success `object` is a referenced object; its first field is the Type.
    if status < 0 || unsafe { (*file).Type } != IO_TYPE_FILE {
        if status >= 0 {
            // SAFETY: the reference just taken.
            unsafe { ObfDereferenceObject(object) };
        }
        // SAFETY: our handle, closed once.
        let _ = unsafe { ZwClose(handle) };
        return Err(Status::InvalidParameter);
    }
    // W11: what was opened decides raw device or container, not the path's text: a device
    // open (a volume or disk, by name or through any link: `\??\X:`, `Volume{GUID}`,
    // `PhysicalDriveN`) leaves the FILE_OBJECT's FileName empty, a file open names the file
    // below the device. Read right after the open, before anyone else has the object (the
    // name is set during create and freed with the object). The path's text agrees for the
    // forms `HostKind::of_path` knows; where they differ, the file object wins.
    // SAFETY: `file` is a referenced FILE_OBJECT (checked above); its FileName is read only.
    let raw = unsafe { (*file).FileName.Length } == 0;
    // W11: what the open reached must be able to hold a volume. A named pipe or mailslot that
    // stops answering would block the legacy I/O thread forever (and dismount and shutdown
    // with it), a directory has no bytes, and one of our own volumes opened raw would feed
    // its I/O back into this driver: refused before anything is asked of the host (a
    // container on a file system mounted on one of our volumes is allowed: own_volume
    // refuses only the raw open).
    // SAFETY: `file` is a referenced FILE_OBJECT; its DeviceObject (the device the open
    // reached) is referenced with it and read only.
    let reached = unsafe { (*file).DeviceObject };
    let facts = HostTypeFacts {
        kind: if raw {
            HostKind::RawDevice
        } else {
            HostKind::FileContainer
        },
        // SAFETY: our kernel handle; `reached` as above (NULL checked).
        device_type: unsafe { fs_device_type(handle) }
            .or_else(|| unsafe { reached.as_ref() }.map(|d| d.DeviceType))
            .unwrap_or(0),
        // SAFETY: our kernel handle.
        directory: unsafe { standard_information(handle) }.is_some_and(|(_, dir)| dir),
        // SAFETY: our kernel handle.
        pipe: unsafe { is_pipe(handle) },
        // SAFETY: as above.
        own_volume: unsafe { reached.as_ref() }
            .is_some_and(|d| core::ptr::eq(d.DriverObject, params.own_driver)),
    };
    // W1: a container on one of our volumes: that volume must outlive this one in a forced
    // dismount of every volume (`crate::control::order`).
    let below = (facts.own_volume && !raw).then_some(reached as usize);
    if let Err(status) = check_host_type(&facts) {
        // SAFETY: as above, undo the reference and the handle.
        unsafe { ObfDereferenceObject(object) };
        // SAFETY: our handle, closed once.
        let _ = unsafe { ZwClose(handle) };
        return Err(status);
    }
    // SAFETY: `file` is a referenced FILE_OBJECT; the device stack behind it lives as
    // long as the file object (R10: the same handle, no second open).
    let device = unsafe { IoGetRelatedDeviceObject(file) };
    let Some(device) = NonNull::new(device) else {
        // SAFETY: as above, undo the reference and the handle.
        unsafe { ObfDereferenceObject(object) };
        // SAFETY: our handle, closed once.
        let _ = unsafe { ZwClose(handle) };
        return Err(Status::InvalidDeviceRequest);
    };
    // W6, W11: the device referenced for the mount's lifetime and the child-operation slots
    // sized for its stack; a failure fails the mount with nothing left behind.
    // SAFETY: `device` lives as long as the referenced `file` (above).
    let slots = match unsafe { KernelHost::reference_device(device) } {
        Ok(slots) => slots,
        Err(status) => {
            // SAFETY: as above, undo the reference and the handle.
            unsafe { ObfDereferenceObject(object) };
            // SAFETY: our handle, closed once.
            let _ = unsafe { ZwClose(handle) };
            return Err(status);
        }
    };
    let mut host = KernelHost {
        kind: if raw {
            HostKind::RawDevice
        } else {
            HostKind::FileContainer
        },
        size: 0,
        limits: HostLimits::unlimited(),
        device,
        slots,
        file,
        handle,
        children,
        write_protected: false,
        below,
    };
    if raw {
        // Lets reads and writes reach the whole device past the file system's idea of
        // its end (VeraCrypt does the same); harmless when refused.
        // SAFETY: the kernel handle opened above, closed only when `host` drops.
        let _ = unsafe { fs_control(handle, ioctl::FSCTL_ALLOW_EXTENDED_DASD_IO, &mut []) };
    }
    let probed = probe(host.kind, |code, buf, input| {
        // SAFETY: as above.
        unsafe { device_control(handle, code, buf, input) }
    });
    let size = if raw {
        probed.size
    } else {
        // SAFETY: as above.
        unsafe { file_size(handle) }
    };
    host.describe(size, probed)?;
    Ok(host)
}

/// A device control on the handle, input and output in `buf`.
///
/// # Safety
/// `handle` is an open synchronous kernel handle of ours.
unsafe fn device_control(
    handle: HANDLE,
    code: u32,
    buf: &mut [u8],
    input: usize,
) -> Result<usize, Status> {
    let mut iosb = IO_STATUS_BLOCK::default();
    let len = buf.len() as u32;
    // An empty buffer is NULL, not a dangling non-null pointer (IOCTL_DISK_IS_WRITABLE has
    // neither input nor output), as `fs_control` passes it.
    let ptr = match buf.is_empty() {
        true => core::ptr::null_mut(),
        false => buf.as_mut_ptr().cast(),
    };
    // SAFETY: `buf` is valid for `len` bytes as input (first `input` bytes) and output;
    // the handle is ours and synchronous (contract), so the call returns when the request is done.
    let status = unsafe {
        ZwDeviceIoControlFile(
            handle,
            core::ptr::null_mut(),
            None,
            core::ptr::null_mut(),
            &mut iosb,
            code,
            if input == 0 {
                core::ptr::null_mut()
            } else {
                ptr
            },
            input as u32,
            ptr,
            len,
        )
    };
    if status < 0 {
        return Err(Status::from_ntstatus(status as u32));
    }
    // W6: never more than the buffer holds, whatever the host reports (`probe` reads its
    // replies within the buffer).
    Ok((iosb.Information as usize).min(buf.len()))
}

/// How [`zw_open`] opens a name (FILE_OPEN: an existing object only).
pub(crate) struct ZwOpen {
    /// DesiredAccess.
    pub access: u32,
    /// ShareAccess.
    pub share: u32,
    /// CreateOptions.
    pub options: u32,
    /// Checked against the calling thread's user (OBJ_FORCE_ACCESS_CHECK) with
    /// FILE_ATTRIBUTE_NORMAL, as the host open asks; else a plain kernel open (FileAttributes
    /// 0), as the dismount's volume open and the unload probe ask.
    pub as_caller: bool,
}

/// The name [`zw_open`] opens: only kinds whose buffer the kernel can trust for the call
/// (a `UNICODE_STRING` header whose Buffer, Length and MaximumLength describe memory that
/// stays valid), so the open is a safe function.
pub(crate) enum ZwName<'a> {
    /// A name built at run time; its header describes its own buffer (`OwnedUnicode`'s
    /// invariant), borrowed for the call.
    Owned(&'a mut OwnedUnicode),
    /// A name fixed at build time (`'static`: never dangles).
    Static(&'static [u16]),
}

/// ZwCreateFile(FILE_OPEN) of `name` with a kernel handle (OBJ_KERNEL_HANDLE: no user process
/// can use it), case-insensitive: the glue's one open by name (the host open, the dismount's
/// volume open, the unload probe of the control device). The caller closes the handle.
///
/// IRQL: PASSIVE_LEVEL.
pub(crate) fn zw_open(name: ZwName<'_>, how: ZwOpen) -> Result<HANDLE, Status> {
    let mut header;
    let name: &mut UNICODE_STRING = match name {
        ZwName::Owned(owned) => owned.as_mut(),
        ZwName::Static(chars) => {
            header = unicode(chars);
            &mut header
        }
    };
    let mut attributes = OBJECT_ATTRIBUTES {
        Length: core::mem::size_of::<OBJECT_ATTRIBUTES>() as u32,
        RootDirectory: core::ptr::null_mut(),
        ObjectName: name,
        Attributes: OBJ_CASE_INSENSITIVE
            | OBJ_KERNEL_HANDLE
            | if how.as_caller {
                OBJ_FORCE_ACCESS_CHECK
            } else {
                0
            },
        SecurityDescriptor: core::ptr::null_mut(),
        SecurityQualityOfService: core::ptr::null_mut(),
    };
    let mut handle: HANDLE = core::ptr::null_mut();
    let mut iosb = IO_STATUS_BLOCK::default();
    // SAFETY: every pointer is valid for the call: `name` (behind `attributes`) describes a
    // buffer that outlives it (`ZwName`: an `OwnedUnicode` borrowed for the call or a
    // `'static` name), `handle` and `iosb` are ours; no EA buffer. PASSIVE_LEVEL (contract). On success the
    // handle is a kernel handle the caller owns and closes.
    let status = unsafe {
        ZwCreateFile(
            &mut handle,
            how.access,
            &mut attributes,
            &mut iosb,
            core::ptr::null_mut(),
            if how.as_caller {
                FILE_ATTRIBUTE_NORMAL
            } else {
                0
            },
            how.share,
            FILE_OPEN,
            how.options,
            core::ptr::null_mut(),
            0,
        )
    };
    if status < 0 {
        return Err(Status::from_ntstatus(status as u32));
    }
    Ok(handle)
}

/// A file system control on the handle, without input, with `output` (may be empty) for the
/// reply: the glue's one ZwFsControlFile wrapper (the host open's FSCTL_ALLOW_EXTENDED_DASD_IO,
/// the dismount sequence's lock, dismount and NTFS query).
///
/// IRQL: PASSIVE_LEVEL.
///
/// # Safety
/// `handle` is an open kernel handle of ours, opened for synchronous I/O (the call returns
/// when the request is done, so `output`, a kernel buffer, outlives it).
pub(crate) unsafe fn fs_control(
    handle: HANDLE,
    code: u32,
    output: &mut [u8],
) -> Result<(), Status> {
    let mut iosb = IO_STATUS_BLOCK::default();
    let (out, out_len) = match output.is_empty() {
        true => (core::ptr::null_mut(), 0),
        false => (output.as_mut_ptr().cast(), output.len() as u32),
    };
    // SAFETY: our synchronous kernel handle (contract); `output` is valid for `out_len` bytes
    // (or none) until the call returns; no input buffer.
    let status = unsafe {
        ZwFsControlFile(
            handle,
            core::ptr::null_mut(),
            None,
            core::ptr::null_mut(),
            &mut iosb,
            code,
            core::ptr::null_mut(),
            0,
            out,
            out_len,
        )
    };
    if status < 0 {
        return Err(Status::from_ntstatus(status as u32));
    }
    Ok(())
}

/// EndOfFile of a container (FILE_STANDARD_INFORMATION: AllocationSize, EndOfFile, ...).
///
/// # Safety
/// As [`device_control`].
unsafe fn file_size(handle: HANDLE) -> Option<u64> {
    // SAFETY: the caller's contract.
    unsafe { standard_information(handle) }.map(|(size, _)| size)
}

/// FileStandardInformation of the open: its EndOfFile and whether it is a directory.
///
/// # Safety
/// `handle` is the mount's open kernel handle.
unsafe fn standard_information(handle: HANDLE) -> Option<(u64, bool)> {
    // A FILE_STANDARD_INFORMATION in u64 words (8-aligned); EndOfFile's word and the
    // Directory byte by the binding.
    const WORDS: usize = size_of::<FILE_STANDARD_INFORMATION>().div_ceil(8);
    const END_OF_FILE: usize = offset_of!(FILE_STANDARD_INFORMATION, EndOfFile);
    const DIRECTORY: usize = offset_of!(FILE_STANDARD_INFORMATION, Directory);
    const _: () =
        assert!(END_OF_FILE.is_multiple_of(8) && align_of::<FILE_STANDARD_INFORMATION>() <= 8);
    const _: () = assert!(DIRECTORY < WORDS * 8);
    let mut info = [0u64; WORDS];
    let mut iosb = IO_STATUS_BLOCK::default();
    // SAFETY: our kernel handle (contract); `info` (8-aligned) holds a
    // FILE_STANDARD_INFORMATION.
    let status = unsafe {
        ZwQueryInformationFile(
            handle,
            &mut iosb,
            info.as_mut_ptr().cast(),
            core::mem::size_of_val(&info) as u32,
            FileStandardInformation,
        )
    };
    let directory = info[DIRECTORY / 8].to_le_bytes()[DIRECTORY % 8] != 0;
    (status >= 0).then_some((info[END_OF_FILE / 8], directory))
}

/// Whether the open reached a named pipe, local or remote: only a pipe answers
/// FilePipeInformation.
///
/// # Safety
/// `handle` is the mount's open kernel handle.
unsafe fn is_pipe(handle: HANDLE) -> bool {
    let mut info = FILE_PIPE_INFORMATION::default();
    let mut iosb = IO_STATUS_BLOCK::default();
    // SAFETY: our kernel handle (contract); `info` is a writable FILE_PIPE_INFORMATION.
    let status = unsafe {
        ZwQueryInformationFile(
            handle,
            &mut iosb,
            (&raw mut info).cast(),
            size_of::<FILE_PIPE_INFORMATION>() as u32,
            FilePipeInformation,
        )
    };
    status >= 0
}

/// FileFsDeviceInformation of the open: the device type of what it reached (FILE_DEVICE_*),
/// or `None` when the query fails.
///
/// # Safety
/// `handle` is the mount's open kernel handle.
unsafe fn fs_device_type(handle: HANDLE) -> Option<u32> {
    let mut info = FILE_FS_DEVICE_INFORMATION::default();
    let mut iosb = IO_STATUS_BLOCK::default();
    // SAFETY: our kernel handle (contract); `info` is a writable FILE_FS_DEVICE_INFORMATION.
    let status = unsafe {
        ZwQueryVolumeInformationFile(
            handle,
            &mut iosb,
            (&raw mut info).cast(),
            size_of::<FILE_FS_DEVICE_INFORMATION>() as u32,
            FileFsDeviceInformation,
        )
    };
    (status >= 0).then_some(info.DeviceType)
}

/// Synchronous ZwReadFile/ZwWriteFile on the mount's handle (the legacy I/O thread's host
/// access, as VeraCrypt's).
///
/// # Safety
/// `handle` is the mount's open kernel handle; `buf` is valid for `len` bytes (writable for a
/// read) for the whole call.
pub(super) unsafe fn transfer(
    handle: HANDLE,
    write: bool,
    offset: u64,
    buf: *mut u8,
    len: usize,
) -> Result<usize, Status> {
    let len = u32::try_from(len).map_err(|_| Status::InvalidParameter)?;
    let offset = i64::try_from(offset).map_err(|_| Status::InvalidParameter)?;
    let mut at = LARGE_INTEGER { QuadPart: offset };
    let mut iosb = IO_STATUS_BLOCK::default();
    let status = if write {
        // SAFETY: `buf` holds `len` readable bytes for the whole (synchronous) call (contract).
        unsafe {
            ZwWriteFile(
                handle,
                core::ptr::null_mut(),
                None,
                core::ptr::null_mut(),
                &mut iosb,
                buf.cast(),
                len,
                &mut at,
                core::ptr::null_mut(),
            )
        }
    } else {
        // SAFETY: `buf` holds `len` writable bytes for the whole (synchronous) call (contract).
        unsafe {
            ZwReadFile(
                handle,
                core::ptr::null_mut(),
                None,
                core::ptr::null_mut(),
                &mut iosb,
                buf.cast(),
                len,
                &mut at,
                core::ptr::null_mut(),
            )
        }
    };
    if status < 0 {
        return Err(Status::from_ntstatus(status as u32));
    }
    Ok(iosb.Information as usize)
}
