//! The kernel side of `crate::namespace` (W2): symbolic links in the object namespace, the
//! mount manager, and fresh bytes from ExUuidCreate.
//!
//! Owns: [`KernelNamespace`] (ZwOpenSymbolicLinkObject/ZwQuerySymbolicLinkObject to read a
//! link, IoCreateSymbolicLink and IoDeleteSymbolicLink), the mount manager a mount talks to
//! ([`mount_manager`]: product build `\Device\MountPointManager` through
//! IoGetDeviceObjectPointer and device-control IRPs; wine-host build the in-process stand-in
//! below) and [`fresh_uuid`] (ExUuidCreate). Never: decides which links a mount makes or
//! removes (`crate::namespace::Links` does).
//!
//! wine-host build: Wine's mount manager runs in another winedevice process, which a driver
//! cannot reach (docs/build-on-linux.md), and Wine 8 has one `\??` directory and no
//! `\GLOBAL??`. The stand-in receives the same request buffers the product sends, prints one
//! `vcdirect: mount manager stand-in: ...` line per request (the Wine end-to-end test checks
//! their order), asks the volume device its MOUNTDEV answers on arrival as the mount manager
//! does (refusing the arrival if the device name it answers differs from the notification's),
//! creates `\??\X:` on a create point and deletes it on delete points. Unlike Windows' mount
//! manager it never makes a letter on arrival, so the Wine run always shows the create point.

#[cfg(feature = "wine-host")]
use alloc::string::String;
use alloc::vec::Vec;
use core::ptr::NonNull;

use wdk_sys::ntddk::{
    DbgPrint, ExUuidCreate, IoCreateSymbolicLink, IoDeleteSymbolicLink, ZwClose,
    ZwOpenSymbolicLinkObject, ZwQuerySymbolicLinkObject,
};
use wdk_sys::{
    DEVICE_OBJECT, HANDLE, OBJECT_ATTRIBUTES, OBJ_CASE_INSENSITIVE, OBJ_KERNEL_HANDLE,
    SYMBOLIC_LINK_QUERY, UNICODE_STRING, UUID,
};

use super::strings::OwnedUnicode;
use crate::namespace::{mountmgr, Directories, Leftover, MountManager, Namespace};
use crate::Status;

/// Where global links live in this build.
pub(crate) const DIRS: Directories = if cfg!(feature = "wine-host") {
    Directories::WINE
} else {
    Directories::WINDOWS
};

/// STATUS_OBJECT_NAME_NOT_FOUND.
const OBJECT_NAME_NOT_FOUND: i32 = 0xC000_0034_u32 as i32;
/// STATUS_OBJECT_PATH_NOT_FOUND.
const OBJECT_PATH_NOT_FOUND: i32 = 0xC000_003A_u32 as i32;
/// STATUS_OBJECT_TYPE_MISMATCH: the name exists but is not a symbolic link.
const OBJECT_TYPE_MISMATCH: i32 = 0xC000_0024_u32 as i32;
/// UTF-16 units of a link target we read (longer targets are "someone else's").
const TARGET_CHARS: usize = 512;

fn ok(status: i32) -> Result<(), Status> {
    if status < 0 {
        Err(Status::from_ntstatus(status as u32))
    } else {
        Ok(())
    }
}

/// DbgPrints `line` (no `%` interpretation; the wine-host stand-in's log).
#[cfg(feature = "wine-host")]
fn log(line: &str) {
    // SAFETY: NUL-terminated format; `%.*s` gets an int length and a pointer to that many
    // bytes of `line`.
    unsafe { DbgPrint(c"%.*s\n".as_ptr(), line.len() as i32, line.as_ptr()) };
}

// The log lines below are built without `core::fmt`: the W13 stack check follows `fmt`'s
// `dyn Write` calls into every vtable slot they could reach, which includes these trait
// methods, so formatting in them would read as recursion.

#[cfg(feature = "wine-host")]
fn text(name: &[u16]) -> String {
    char::decode_utf16(name.iter().copied())
        .map(|c| c.unwrap_or('?'))
        .collect()
}

/// The object namespace through the kernel's symbolic-link routines. Every call runs at
/// PASSIVE_LEVEL; a path under `\??` resolves in the calling thread's context (its process's
/// logon-session device map, then `\GLOBAL??`), which is why the letter check runs in the
/// caller's thread.
pub(crate) struct KernelNamespace;

impl Namespace for KernelNamespace {
    fn query(&self, path: &[u16]) -> Result<Option<Vec<u16>>, Status> {
        // W9 (wine-host build): ZwOpenSymbolicLinkObject, ZwQuerySymbolicLinkObject, ZwClose.
        super::irql::check(crate::platform::irql::Call::ZwCall);
        let mut name = OwnedUnicode::copy(path)?;
        let mut attributes = OBJECT_ATTRIBUTES {
            Length: core::mem::size_of::<OBJECT_ATTRIBUTES>() as u32,
            RootDirectory: core::ptr::null_mut(),
            ObjectName: name.as_mut(),
            Attributes: OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE,
            SecurityDescriptor: core::ptr::null_mut(),
            SecurityQualityOfService: core::ptr::null_mut(),
        };
        let mut handle: HANDLE = core::ptr::null_mut();
        // SAFETY: every pointer is valid for the call (`name` outlives it); a kernel handle
        // (OBJ_KERNEL_HANDLE), closed below.
        let status =
            unsafe { ZwOpenSymbolicLinkObject(&mut handle, SYMBOLIC_LINK_QUERY, &mut attributes) };
        match status {
            OBJECT_NAME_NOT_FOUND | OBJECT_PATH_NOT_FOUND => return Ok(None),
            // Something that is not a link holds the name: in use, not ours.
            OBJECT_TYPE_MISMATCH => return Ok(Some(Vec::new())),
            s => ok(s)?,
        }
        let mut target = Vec::new();
        if target.try_reserve_exact(TARGET_CHARS).is_err() {
            // SAFETY: our kernel handle, closed once.
            let _ = unsafe { ZwClose(handle) };
            return Err(Status::InsufficientResources);
        }
        // W6: the room was reserved above, so this cannot allocate.
        target.resize(TARGET_CHARS, 0);
        let mut header = UNICODE_STRING {
            Length: 0,
            MaximumLength: (TARGET_CHARS * 2) as u16,
            Buffer: target.as_mut_ptr(),
        };
        let mut returned = 0u32;
        // SAFETY: the handle opened above; `header` describes `target`'s writable buffer,
        // which outlives the call.
        let status = unsafe { ZwQuerySymbolicLinkObject(handle, &mut header, &mut returned) };
        // SAFETY: our kernel handle, closed once.
        let _ = unsafe { ZwClose(handle) };
        if status < 0 {
            // Out of memory is that error (the caller may try again); too long to read (or
            // unreadable): it exists, and is not ours.
            let status = Status::from_ntstatus(status as u32);
            if status.is_out_of_memory() {
                return Err(status);
            }
            return Ok(Some(Vec::new()));
        }
        target.truncate(usize::from(header.Length) / 2);
        Ok(Some(target))
    }

    fn create(&self, path: &[u16], target: &[u16]) -> Result<(), Status> {
        let mut link = OwnedUnicode::copy(path)?;
        let mut to = OwnedUnicode::copy(target)?;
        // SAFETY: both names are valid for the call; IoCreateSymbolicLink copies them.
        ok(unsafe { IoCreateSymbolicLink(link.as_mut(), to.as_mut()) })
    }

    fn delete(&self, path: &[u16]) -> Result<(), Status> {
        let mut link = OwnedUnicode::copy(path)?;
        // SAFETY: the name is valid for the call.
        ok(unsafe { IoDeleteSymbolicLink(link.as_mut()) })
    }

    /// KeDelayExecutionThread, `MEMORY_RETRY_MS` (PASSIVE_LEVEL: the mount's and the
    /// teardown's threads).
    fn wait_for_memory(&self) {
        super::dismount::wait_ms(crate::namespace::MEMORY_RETRY_MS);
    }

    /// What the removal could not undo, once, after its tries: logged, as a link stays
    /// until someone deletes it (or reboot), pointing at a deleted device, and a request not
    /// served leaves the mount manager's record.
    fn left_behind(&self, what: Leftover, path: &[u16], status: Status) {
        // The path's ASCII units (link and device paths are ASCII), without allocating (the
        // failure may be for want of memory).
        let mut line = [0u8; 64];
        let n = path.len().min(line.len());
        for (b, &u) in line.iter_mut().zip(path) {
            *b = if u < 0x80 { u as u8 } else { b'?' };
        }
        let format = match what {
            Leftover::Link => c"vcdirect: link %.*s left (0x%08x): delete it or reboot\n",
            Leftover::DeletePoints => c"vcdirect: mount manager did not delete %.*s (0x%08x)\n",
            Leftover::Removal => c"vcdirect: mount manager not told of %.*s's removal (0x%08x)\n",
        };
        // SAFETY: NUL-terminated format; `%.*s` gets an int length and a pointer to that many
        // bytes of `line`, `%08x` a u32. PASSIVE_LEVEL (the removal's thread).
        unsafe { DbgPrint(format.as_ptr(), n as i32, line.as_ptr(), status.ntstatus()) };
    }
}

/// 16 fresh bytes from ExUuidCreate (time and node based, unique across boots; never key
/// material): the unique id of a mount without a letter, the first volume id of a load.
///
/// IRQL: PASSIVE_LEVEL.
pub(crate) fn fresh_uuid() -> Result<[u8; 16], Status> {
    let mut uuid = UUID::default();
    // SAFETY: `uuid` is a writable GUID for the call.
    ok(unsafe { ExUuidCreate(&mut uuid) })?;
    let mut nonce = [0u8; 16];
    nonce[..4].copy_from_slice(&uuid.Data1.to_le_bytes());
    nonce[4..6].copy_from_slice(&uuid.Data2.to_le_bytes());
    nonce[6..8].copy_from_slice(&uuid.Data3.to_le_bytes());
    nonce[8..].copy_from_slice(&uuid.Data4);
    Ok(nonce)
}

/// The mount manager for the volume device `volume`, or `None` when it cannot be reached
/// (the letter then becomes an explicit global link). `volume` is only used by the wine-host
/// stand-in, to ask the device its MOUNTDEV answers as the mount manager does.
///
/// IRQL: PASSIVE_LEVEL.
///
/// # Safety
/// `volume` is a live volume device of this driver for as long as the result lives.
pub(crate) unsafe fn mount_manager(volume: NonNull<DEVICE_OBJECT>) -> Option<KernelMountManager> {
    KernelMountManager::open(volume).ok()
}

/// [`mount_manager`] for the removal of a volume's links: an open that fails for want of
/// memory (IoGetDeviceObjectPointer's own allocations) is tried again
/// (`crate::namespace::retried`, KeDelayExecutionThread between), so the delete points and the
/// volume removal are not skipped for lack of memory while it lasts less than the bound.
///
/// IRQL: PASSIVE_LEVEL.
///
/// # Safety
/// As [`mount_manager`].
pub(crate) unsafe fn mount_manager_for_removal(
    volume: NonNull<DEVICE_OBJECT>,
) -> Option<KernelMountManager> {
    crate::namespace::retried(&KernelNamespace, || KernelMountManager::open(volume)).ok()
}

#[cfg(not(feature = "wine-host"))]
pub(crate) use product::KernelMountManager;
#[cfg(feature = "wine-host")]
pub(crate) use stand_in::KernelMountManager;

#[cfg(not(feature = "wine-host"))]
mod product {
    use super::*;
    use wdk_sys::ntddk::{IoGetDeviceObjectPointer, ObfDereferenceObject};
    use wdk_sys::{FILE_READ_ATTRIBUTES, PFILE_OBJECT};

    use super::super::device_control::device_control;
    use super::super::strings::{unicode, utf16};

    static MOUNT_POINT_MANAGER: [u16; 25] = utf16("\\Device\\MountPointManager");

    /// `\Device\MountPointManager`, referenced through the file object
    /// IoGetDeviceObjectPointer returns (which keeps its device alive), dereferenced on drop.
    ///
    /// # Invariants
    /// `file` is a referenced file object on `device`'s stack; `device` stays valid while it is.
    pub(crate) struct KernelMountManager {
        file: PFILE_OBJECT,
        device: NonNull<DEVICE_OBJECT>,
    }

    // SAFETY: a referenced file object and its device are kernel objects, not tied to the
    // thread that opened them: the requests (IoBuildDeviceIoControlRequest, IoCallDriver at
    // PASSIVE_LEVEL) and ObfDereferenceObject may come from any thread, so a volume device may
    // keep it from publish (caller's thread) to its links' removal (a system thread).
    unsafe impl Send for KernelMountManager {}

    impl KernelMountManager {
        /// Opens the mount manager (FILE_READ_ATTRIBUTES, as VeraCrypt does; the requests are
        /// kernel-mode IRPs, which the mount manager accepts from a driver).
        pub(super) fn open(_volume: NonNull<DEVICE_OBJECT>) -> Result<Self, Status> {
            let mut name = unicode(&MOUNT_POINT_MANAGER);
            let mut file: PFILE_OBJECT = core::ptr::null_mut();
            let mut device: *mut DEVICE_OBJECT = core::ptr::null_mut();
            // SAFETY: the name is a static string; both out pointers are valid. On success
            // `file` is referenced for us (dropped in Drop).
            ok(unsafe {
                IoGetDeviceObjectPointer(&mut name, FILE_READ_ATTRIBUTES, &mut file, &mut device)
            })?;
            match NonNull::new(device) {
                Some(device) if !file.is_null() => Ok(KernelMountManager { file, device }),
                _ => {
                    if !file.is_null() {
                        // SAFETY: the reference IoGetDeviceObjectPointer took.
                        unsafe { ObfDereferenceObject(file.cast()) };
                    }
                    Err(Status::InsufficientResources)
                }
            }
        }

        fn send(&self, code: u32, mut buf: Vec<u8>, output: usize) -> Result<(), Status> {
            let input = buf.len();
            // W6: room for the reply (`mountmgr::delete_points_input` made it already; a
            // no-op then), fallibly, so the resize below never allocates.
            buf.try_reserve_exact(output.saturating_sub(input))
                .map_err(|_| Status::InsufficientResources)?;
            buf.resize(input.max(output), 0);
            // SAFETY: `device` is kept alive by the referenced `file` (type invariant); we are
            // at PASSIVE_LEVEL (the mount and dismount paths).
            unsafe { device_control(self.device, code, &mut buf, input) }.map(|_| ())
        }
    }

    impl Drop for KernelMountManager {
        fn drop(&mut self) {
            // SAFETY: the reference IoGetDeviceObjectPointer took for us, dropped once.
            unsafe { ObfDereferenceObject(self.file.cast()) };
        }
    }

    impl MountManager for KernelMountManager {
        fn volume_arrival(&self, device: &[u16]) -> Result<(), Status> {
            let buf = mountmgr::target_name(device)?;
            self.send(mountmgr::IOCTL_VOLUME_ARRIVAL_NOTIFICATION, buf, 0)
        }
        fn create_point(&self, link: &[u16], device: &[u16]) -> Result<(), Status> {
            let buf = mountmgr::create_point_input(link, device)?;
            self.send(mountmgr::IOCTL_CREATE_POINT, buf, 0)
        }
        fn delete_point(&self, link: &[u16]) -> Result<(), Status> {
            let buf = mountmgr::delete_points_input(link)?;
            let out = mountmgr::DELETE_POINTS_OUTPUT;
            // A failure is reported once by the removal (`left_behind`), not per try.
            self.send(mountmgr::IOCTL_DELETE_POINTS, buf, out)
        }
        fn volume_removal(&self, device: &[u16]) -> Result<(), Status> {
            let buf = mountmgr::target_name(device)?;
            self.send(mountmgr::IOCTL_VOLUME_REMOVAL_NOTIFICATION, buf, 0)
        }
    }
}

#[cfg(feature = "wine-host")]
mod stand_in {
    use super::*;

    use super::super::device_control::device_control;
    use super::super::layout as at;
    use crate::disk_ioctl::code;

    /// `n` in decimal, appended to `out`.
    fn push_decimal(out: &mut String, n: usize) {
        let mut digits = [0u8; 20];
        let (mut n, mut len) = (n, 0);
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for d in digits[..len].iter().rev() {
            out.push(char::from(*d));
        }
    }

    /// The wine-host mount-manager stand-in (see the module comment).
    ///
    /// # Invariants
    /// `volume` is a live volume device of this driver while `self` lives (`mount_manager`'s
    /// contract).
    pub(crate) struct KernelMountManager {
        volume: NonNull<DEVICE_OBJECT>,
    }

    // SAFETY: `volume` is our own volume device, which keeps this value in itself and drops it
    // before the device is deleted; the stand-in's requests (IRPs to it) may come from any
    // thread at PASSIVE_LEVEL.
    unsafe impl Send for KernelMountManager {}

    fn note(what: &str, name: &[u16], rest: &str) {
        let mut line = String::from("vcdirect: mount manager stand-in: ");
        line.push_str(what);
        line.push(' ');
        line.push_str(&text(name));
        line.push_str(rest);
        log(&line);
    }

    impl KernelMountManager {
        pub(super) fn open(volume: NonNull<DEVICE_OBJECT>) -> Result<Self, Status> {
            Ok(KernelMountManager { volume })
        }

        /// One MOUNTDEV query to the volume device, as the mount manager sends it.
        fn ask(&self, ioctl: u32) -> Result<Vec<u8>, Status> {
            let mut buf = alloc::vec![0u8; 512];
            // SAFETY: a live volume device of ours (type invariant); PASSIVE_LEVEL (mount).
            let n = unsafe { device_control(self.volume, ioctl, &mut buf, 0) }?;
            buf.truncate(n);
            Ok(buf)
        }

        /// A counted reply: its length field at `len_at`, the bytes right after it.
        fn counted(reply: &[u8], len_at: usize) -> Result<Vec<u8>, Status> {
            let len = reply
                .get(len_at..len_at + 2)
                .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
                .ok_or(Status::InvalidParameter)?;
            reply
                .get(len_at + 2..len_at + 2 + len)
                .map(<[u8]>::to_vec)
                .ok_or(Status::InvalidParameter)
        }

        fn units(bytes: &[u8]) -> Vec<u16> {
            bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        }

        /// The letter `X:` of `\DosDevices\X:`.
        fn letter(link: &[u16]) -> Result<Vec<u16>, Status> {
            let prefix = crate::namespace::utf16("\\DosDevices\\");
            let rest = link
                .strip_prefix(&prefix[..])
                .ok_or(Status::InvalidParameter)?;
            match rest {
                [c, colon]
                    if *colon == u16::from(b':')
                        && (u16::from(b'A')..=u16::from(b'Z')).contains(c) =>
                {
                    Ok(alloc::vec![*c, *colon])
                }
                _ => Err(Status::InvalidParameter),
            }
        }

        fn global(letter: &[u16]) -> Vec<u16> {
            let mut path = crate::namespace::utf16(DIRS.global);
            path.extend_from_slice(letter);
            path
        }
    }

    impl MountManager for KernelMountManager {
        fn volume_arrival(&self, device: &[u16]) -> Result<(), Status> {
            // The bytes the product sends, read back as the mount manager would.
            let buf = mountmgr::target_name(device)?;
            let named = mountmgr::parse_target_name(&buf)?;
            let answered = Self::units(&Self::counted(
                &self.ask(code::MOUNTDEV_QUERY_DEVICE_NAME)?,
                at::MOUNTDEV_NAME_LENGTH,
            )?);
            let unique = Self::counted(
                &self.ask(code::MOUNTDEV_QUERY_UNIQUE_ID)?,
                at::MOUNTDEV_NAME_LENGTH,
            )?;
            let suggested = match self.ask(code::MOUNTDEV_QUERY_SUGGESTED_LINK_NAME) {
                Ok(r) => Self::units(&Self::counted(&r, at::SUGGESTED_LINK_NAME_LENGTH)?),
                Err(_) => Vec::new(),
            };
            if answered != named || unique.is_empty() {
                note("volume arrival MISMATCH", &named, "");
                return Err(Status::InvalidParameter);
            }
            let mut rest = String::from(" (unique id ");
            push_decimal(&mut rest, unique.len());
            rest.push_str(" bytes, suggested link ");
            rest.push_str(&text(&suggested));
            rest.push(')');
            note("volume arrival", &named, &rest);
            Ok(())
        }

        fn create_point(&self, link: &[u16], device: &[u16]) -> Result<(), Status> {
            let buf = mountmgr::create_point_input(link, device)?;
            let (link, device) = mountmgr::parse_create_point_input(&buf)?;
            let mut rest = String::from(" -> ");
            rest.push_str(&text(&device));
            note("create point", &link, &rest);
            KernelNamespace.create(&Self::global(&Self::letter(&link)?), &device)
        }

        fn delete_point(&self, link: &[u16]) -> Result<(), Status> {
            let buf = mountmgr::delete_points_input(link)?;
            let link = mountmgr::parse_delete_points_input(&buf)?;
            note("delete points", &link, "");
            let path = Self::global(&Self::letter(&link)?);
            // Only a link to one of our volumes (what this stand-in creates).
            let ours = crate::namespace::utf16("\\Device\\VcVolume");
            match KernelNamespace.query(&path)? {
                Some(t) if t.starts_with(&ours) => KernelNamespace.delete(&path),
                _ => Err(crate::namespace::OBJECT_NAME_NOT_FOUND),
            }
        }

        fn volume_removal(&self, device: &[u16]) -> Result<(), Status> {
            // The bytes the product sends, read back as the mount manager would.
            let buf = mountmgr::target_name(device)?;
            let named = mountmgr::parse_target_name(&buf)?;
            note("volume removal", &named, "");
            Ok(())
        }
    }
}
