//! The volume's device object: `\Device\VcVolume<N>`, its links and its extension.
//!
//! Owns: creating the device and its links, the device extension (a remove lock and the
//! reference to the mounted volume), and tearing them down (links removed, volume dismounted,
//! the remove lock released and waited for, the device deleted). Never: serves requests
//! (`dispatch` and `ioctl` do).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::AtomicU32;

use wdk_sys::ntddk::{IoCreateDevice, IoCreateSymbolicLink, IoDeleteDevice, IoDeleteSymbolicLink};
use wdk_sys::{
    DEVICE_OBJECT, DO_DEVICE_INITIALIZING, DO_DIRECT_IO, DRIVER_OBJECT, FILE_DEVICE_DISK,
    FILE_DEVICE_SECURE_OPEN,
};

use super::super::platform::KernelPlatform;
use super::super::remove_lock::RemoveLockCell;
use super::super::strings::OwnedUnicode;
use crate::volume::Volume;
use crate::Status;

/// Marks a volume device's extension (the control device has none).
const EXTENSION_MAGIC: u32 = u32::from_le_bytes(*b"vcVo");

/// A mounted volume with its device.
pub struct MountedVolume {
    /// The id the mount reply gave (also the N of `VcVolume<N>`).
    pub id: u32,
    /// `MOUNT_*` flags of the mount request.
    pub flags: u32,
    /// Drive letter, if the mount asked for one.
    pub drive_letter: Option<char>,
    /// The engine's volume.
    pub volume: Arc<Volume<KernelPlatform>>,
    /// Handles open on the volume device (CREATE minus CLOSE).
    pub open_handles: AtomicU32,
    pub(super) device_name: Vec<u16>,
    /// IOCTL_MOUNTDEV_QUERY_UNIQUE_ID's bytes: the device name's UTF-16LE bytes.
    pub(super) unique_id: Vec<u8>,
    link_name: Vec<u16>,
    pub(super) letter_link: Option<Vec<u16>>,
    pub(super) read_only: bool,
    pub(super) sector_size: u32,
}

/// The volume device's extension.
///
/// # Invariants
/// Only volume devices have an extension, and theirs is this one (`magic` set), initialized
/// by `create` before the device is usable: `lock` initialized in place (the extension never
/// moves), `volume` the live `Arc::into_raw` reference until `delete_device` takes it back
/// after the lock's release-and-wait.
#[repr(C)]
pub(super) struct Extension {
    magic: u32,
    /// Held by each dispatch call; dismount releases and waits before the volume goes.
    pub(super) lock: RemoveLockCell,
    /// `Arc::into_raw` of the mounted volume; null after dismount.
    pub(super) volume: *const MountedVolume,
}

/// The created device, owned by the control module's table entry.
///
/// # Invariants
/// `device` is a volume device this value created (its extension initialized), not deleted
/// until `drop`; `links` holds exactly the symbolic links this value created (each recorded
/// only after IoCreateSymbolicLink succeeded), the only ones `drop` deletes.
pub struct VolumeDevice {
    device: NonNull<DEVICE_OBJECT>,
    mounted: Arc<MountedVolume>,
    links: Vec<Vec<u16>>,
}

// SAFETY: the device object is ours until `delete`; its routines may run on any thread.
unsafe impl Send for VolumeDevice {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for VolumeDevice {}

fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

fn decimal(mut n: u32) -> Vec<u16> {
    let mut digits = Vec::new();
    loop {
        digits.push(u16::from(b'0') + (n % 10) as u16);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    digits
}

impl VolumeDevice {
    /// Creates the device `\Device\VcVolume<id>` and its links for `volume`, with the
    /// descriptor that limits raw opens to system, administrators and `owner` (W4).
    ///
    /// IRQL: PASSIVE_LEVEL.
    ///
    /// # Safety
    /// `driver` is this driver's object.
    pub unsafe fn create(
        driver: *mut DRIVER_OBJECT,
        id: u32,
        flags: u32,
        drive_letter: Option<char>,
        read_only: bool,
        volume: Arc<Volume<KernelPlatform>>,
        owner: &crate::access::Sid,
    ) -> Result<VolumeDevice, Status> {
        let mut device_name = utf16("\\Device\\VcVolume");
        device_name.extend(decimal(id));
        let mut link_name = utf16("\\DosDevices\\VcVolume");
        link_name.extend(decimal(id));
        let letter_link = drive_letter.map(|c| {
            let mut l = utf16("\\DosDevices\\");
            l.push(c as u16);
            l.push(u16::from(b':'));
            l
        });
        let sector_size = volume_sector(&volume);
        let unique_id = device_name.iter().flat_map(|c| c.to_le_bytes()).collect();
        let mounted = Arc::new(MountedVolume {
            id,
            flags,
            drive_letter,
            volume,
            open_handles: AtomicU32::new(0),
            device_name,
            unique_id,
            link_name,
            letter_link,
            read_only,
            sector_size,
        });
        let mut name = OwnedUnicode::copy(&mounted.device_name)?;
        let mut device: *mut DEVICE_OBJECT = core::ptr::null_mut();
        // SAFETY: `driver` is our driver object (contract); the name is valid for the call.
        let status = unsafe {
            IoCreateDevice(
                driver,
                core::mem::size_of::<Extension>() as u32,
                name.as_mut(),
                FILE_DEVICE_DISK,
                FILE_DEVICE_SECURE_OPEN,
                0,
                &mut device,
            )
        };
        if status < 0 {
            return Err(Status::from_ntstatus(status as u32));
        }
        let Some(device) = NonNull::new(device) else {
            return Err(Status::InsufficientResources);
        };
        // SAFETY: a device we just created and nobody dispatches to yet
        // (DO_DEVICE_INITIALIZING is still set): ours to initialize.
        let d = unsafe { &mut *device.as_ptr() };
        // SAFETY: its extension is `size_of::<Extension>()` bytes of zeroed nonpaged pool,
        // suitably aligned, not shared with anyone yet.
        let ext = unsafe { &mut *d.DeviceExtension.cast::<Extension>() };
        ext.magic = EXTENSION_MAGIC;
        ext.volume = Arc::into_raw(Arc::clone(&mounted));
        // SAFETY: the lock lives in the zeroed extension, which never moves; initialized once,
        // before the device can be dispatched to.
        unsafe { ext.lock.init() };
        d.Flags |= DO_DIRECT_IO;
        d.SectorSize = sector_size as u16;
        let mut this = VolumeDevice {
            device,
            mounted,
            links: Vec::new(),
        };
        // W4: raw opens for system, administrators and the mounting user, set before the
        // device can be opened; on failure Drop deletes the device.
        // SAFETY: the device created above, not deleted.
        if let Err(status) = unsafe {
            super::super::identity::protect(
                device.as_ptr(),
                super::super::identity::DeviceAccess::Volume { owner },
            )
        } {
            drop(this);
            return Err(status);
        }
        d.Flags &= !DO_DEVICE_INITIALIZING;
        let links: [Option<Vec<u16>>; 2] = [
            Some(this.mounted.link_name.clone()),
            this.mounted.letter_link.clone(),
        ];
        for link in links {
            let Some(link) = link else { continue };
            // An error here drops `this` too (links made so far removed, device deleted).
            this.links
                .try_reserve(1)
                .map_err(|_| Status::InsufficientResources)?;
            let mut l = OwnedUnicode::copy(&link)?;
            let mut n = OwnedUnicode::copy(&this.mounted.device_name)?;
            // SAFETY: both names are valid for the call.
            let status = unsafe { IoCreateSymbolicLink(l.as_mut(), n.as_mut()) };
            if status < 0 {
                // Drop removes only the links made so far (never one that existed before,
                // such as a global `\DosDevices\C:` that made this one collide) and deletes
                // the device; the caller still owns the (not yet dismounted) volume's other
                // reference.
                drop(this);
                return Err(Status::from_ntstatus(status as u32));
            }
            // Recorded only now that it exists and is ours (capacity reserved above).
            this.links.push(link);
        }
        Ok(this)
    }

    /// The mounted volume.
    pub fn mounted(&self) -> &Arc<MountedVolume> {
        &self.mounted
    }

    fn delete_device(&self) {
        // SAFETY: `device` is our live volume device (type invariant).
        let ext = unsafe { extension(self.device.as_ptr()) };
        if let Some(ext) = ext {
            // Acquire, then release-and-wait, as the remove lock protocol requires; afterwards
            // every acquisition fails (STATUS_DELETE_PENDING).
            // SAFETY: `ext` is the live extension of our device (just looked up).
            if let Ok(guard) = unsafe { remove_lock(ext) }.acquire() {
                guard.release_and_wait();
            }
            // SAFETY: a live extension; taking a field's address touches nothing.
            let field = unsafe { &raw mut (*ext).volume };
            // SAFETY: no dispatch holds the lock any more and none can take it, so nobody
            // reads `volume`; reclaim the reference given to the extension.
            let raw = unsafe { core::ptr::replace(field, core::ptr::null()) };
            if !raw.is_null() {
                // SAFETY: `raw` came from Arc::into_raw in `create`, reclaimed once.
                drop(unsafe { Arc::from_raw(raw) });
            }
        }
        // SAFETY: our device; open handles keep the object (not the volume) alive, and its
        // dispatch fails from now on (remove lock released).
        unsafe { IoDeleteDevice(self.device.as_ptr()) };
    }
}

impl Drop for VolumeDevice {
    /// Removes the links it created, dismounts the volume (which waits for every request and child
    /// request: R13), stops new dispatches, waits for the ones running and deletes the device.
    ///
    /// IRQL: PASSIVE_LEVEL.
    fn drop(&mut self) {
        for link in &self.links {
            delete_link(link);
        }
        self.mounted.volume.dismount();
        self.delete_device();
    }
}

fn delete_link(link: &[u16]) {
    let Ok(mut l) = OwnedUnicode::copy(link) else {
        return; // never made: `create` fails with the same name
    };
    // SAFETY: the name is valid for the call; a missing link just fails.
    let _ = unsafe { IoDeleteSymbolicLink(l.as_mut()) };
}

fn volume_sector(volume: &Volume<KernelPlatform>) -> u32 {
    // The sector size the volume presents (validated at mount: a power of two >= 512).
    volume.params.sector_size
}

/// The remove lock inside `ext`.
///
/// # Safety
/// `ext` is the live extension of one of our volume devices, and stays so for `'a`.
pub(super) unsafe fn remove_lock<'a>(ext: *mut Extension) -> &'a RemoveLockCell {
    // SAFETY: a live extension (contract) whose lock was initialized by `create` (type
    // invariant); the reference covers only the lock, an UnsafeCell shared by design.
    unsafe { &(*ext).lock }
}

/// The volume extension of `device`, or `None` for the control device.
///
/// # Safety
/// `device` is a live device object of this driver (the control device or a volume device).
pub(super) unsafe fn extension(device: *mut DEVICE_OBJECT) -> Option<*mut Extension> {
    // SAFETY: `device` is a live device object of this driver (contract).
    let ext = unsafe { (*device).DeviceExtension }.cast::<Extension>();
    if ext.is_null() {
        return None;
    }
    // SAFETY: a non-null extension of our devices is an `Extension` (only volume devices
    // have one); reading its first field is valid.
    (unsafe { (*ext).magic } == EXTENSION_MAGIC).then_some(ext)
}
