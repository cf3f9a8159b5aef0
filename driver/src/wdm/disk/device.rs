//! The volume's device object: `\Device\VcVolume<N>`, its links and its extension.
//!
//! Owns: creating the device and its links (through `crate::namespace::Links`, which records
//! exactly the links this mount made: `VcVolume<N>` and the letter, both global, W2), the
//! device extension (a remove lock and the reference to the mounted volume), and tearing them
//! down (links removed, volume dismounted, the remove lock released and waited for, the device
//! deleted). Never: serves requests (`dispatch` and `ioctl` do).

use alloc::sync::Arc;
use core::ptr::NonNull;
use core::sync::atomic::AtomicU32;

use wdk_sys::ntddk::{IoCreateDevice, IoDeleteDevice};
use wdk_sys::{
    DEVICE_OBJECT, DO_DEVICE_INITIALIZING, DO_DIRECT_IO, DRIVER_OBJECT, FILE_DEVICE_DISK,
    FILE_DEVICE_SECURE_OPEN, FILE_READ_ONLY_DEVICE,
};

use super::super::links::{self, KernelMountManager, KernelNamespace, DIRS};
use super::super::platform::KernelPlatform;
use super::super::remove_lock::RemoveLockCell;
use super::super::strings::OwnedUnicode;
use super::super::sync::SpinLock;
use crate::namespace::{Failed, LinkKind, Links, PreparedLinks, VolumeNames};
use crate::platform::Lock;
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
    /// Its names and the MOUNTDEV answers built from them (W2).
    pub names: VolumeNames,
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
/// only once it existed and pointed at this device), the only ones `drop` deletes.
pub struct VolumeDevice {
    device: NonNull<DEVICE_OBJECT>,
    mounted: Arc<MountedVolume>,
    links: SpinLock<Links>,
    /// The mount manager opened at publish (its referenced file object), kept until the
    /// links are removed, so their removal does not reopen it (which could fail for want of
    /// memory); `None` for a letterless mount, once the links are removed, or when it could
    /// not be opened.
    mount_manager: SpinLock<Option<KernelMountManager>>,
    /// The links' names and records' room made by `create`, kept here until `publish` (W13:
    /// not carried through the mount's frames).
    prepared: SpinLock<Option<PreparedLinks>>,
}

// SAFETY: the device object is ours until `delete`; its routines may run on any thread.
unsafe impl Send for VolumeDevice {}
// SAFETY: as above; shared access only reads, except the links, behind their spin lock.
unsafe impl Sync for VolumeDevice {}

impl VolumeDevice {
    /// Creates the device `\Device\VcVolume<id>` for `volume`, with the descriptor that
    /// limits raw opens to system, administrators and `owner` (W4), and the names of `names`
    /// (`VolumeNames::new(id, letter, unique id)`, W2). The device stays initializing and has
    /// no links until [`VolumeDevice::publish`]: everything fallible of the mount happens
    /// between the two (W6), so a failure there deletes a device nobody could open. The caller
    /// checked that the letter is free (`crate::namespace::letter_free`) before anything of
    /// the mount was created. The links' names and records' room are made here (W6:
    /// `Links::prepare`) and kept in the device for [`VolumeDevice::publish`]. On failure the
    /// volume is not dismounted (the caller's).
    ///
    /// IRQL: PASSIVE_LEVEL.
    ///
    /// # Safety
    /// `driver` is this driver's object.
    pub unsafe fn create(
        driver: *mut DRIVER_OBJECT,
        id: u32,
        flags: u32,
        names: VolumeNames,
        read_only: bool,
        volume: Arc<Volume<KernelPlatform>>,
        owner: &crate::access::Sid,
    ) -> Result<VolumeDevice, Status> {
        let drive_letter = names.letter();
        // W6: every name and record of the links, before anything exists.
        let prepared = Links::prepare(&DIRS, &names)?;
        let sector_size = volume_sector(&volume);
        // W11: what the device says about itself matches a disk on this host.
        let host_alignment = volume.host().alignment_requirement();
        // W6: allocated fallibly, before the device exists.
        let mounted = super::super::pool::try_arc(MountedVolume {
            id,
            flags,
            drive_letter,
            volume,
            open_handles: AtomicU32::new(0),
            names,
            read_only,
            sector_size,
        })?;
        let mut name = OwnedUnicode::copy(mounted.names.device_name())?;
        let mut device: *mut DEVICE_OBJECT = core::ptr::null_mut();
        // SAFETY: `driver` is our driver object (contract); the name is valid for the call.
        let status = unsafe {
            IoCreateDevice(
                driver,
                core::mem::size_of::<Extension>() as u32,
                name.as_mut(),
                FILE_DEVICE_DISK,
                // W11: a read-only mount says so to the file systems above.
                if read_only {
                    FILE_DEVICE_SECURE_OPEN | FILE_READ_ONLY_DEVICE
                } else {
                    FILE_DEVICE_SECURE_OPEN
                },
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
        // W11: our own location and the 6 VeraCrypt adds to its volume devices against
        // drivers that overrun their stack, as VeraCrypt sets it (7): upper IRPs are never
        // forwarded down the host's stack (child IRPs are allocated with the host's own
        // StackSize); the host's alignment.
        d.StackSize = 1 + EXTRA_STACK_LOCATIONS;
        d.AlignmentRequirement = d.AlignmentRequirement.max(host_alignment);
        let this = VolumeDevice {
            device,
            mounted,
            links: SpinLock::new(Links::default()),
            mount_manager: SpinLock::new(None),
            prepared: SpinLock::new(Some(prepared)),
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
        Ok(this)
    }

    /// Makes the created device usable: clears DO_DEVICE_INITIALIZING, then creates its
    /// links from what `create` prepared ( once the device can be opened: the
    /// mount manager asks it its names; a letterless mount never reaches the mount manager).
    /// The caller made everything else of the mount first, and the links' names and records
    /// were made by `create`, so only the kernel's link calls can fail from here (W6: their
    /// own name copies, ZwOpenSymbolicLinkObject, the mount manager's request buffers, IRP
    /// and event are fallible allocations, as is the mount manager's open; from the arrival
    /// on each is tried again while out of memory, and a mount manager that cannot be opened
    /// or cannot serve a request makes the letter an explicit global link).
    ///
    /// On failure: `Err(status)`, with whatever links are left kept here (none when the mount
    /// manager had not accepted the arrival: `Links` removed what it made; announced, the
    /// links made so far, and the mount manager kept for the removal notification). The
    /// device could be opened from the moment DO_DEVICE_INITIALIZING was cleared, so a file
    /// system may have mounted: the caller undoes the mount with
    /// `crate::dismount::undo_failed_publish` (links first, then the forced W1 sequence only
    /// if one did).
    ///
    /// IRQL: PASSIVE_LEVEL. Called once per device.
    pub fn publish(self: &Arc<Self>) -> Result<(), Status> {
        let Some(prepared) = self.prepared.with(Option::take) else {
            return Err(Status::InvalidParameter);
        };
        let device = self.device;
        // SAFETY: our live volume device (type invariant); nobody dispatches to it while it
        // is initializing, and the I/O manager reads Flags only after we clear the bit.
        unsafe { (*device.as_ptr()).Flags &= !DO_DEVICE_INITIALIZING };
        // SAFETY: `device` is our live volume device until `self` drops; `mm` is kept in
        // `self.mount_manager` and dropped by `remove_links`, which runs before the device is
        // deleted (Drop, and the W1 sequence's links step before its delete).
        let mm = self
            .mounted
            .drive_letter
            .and_then(|_| unsafe { links::mount_manager(device) });
        let (made, result) = match prepared.establish_or_hand_back(&KernelNamespace, mm.as_ref()) {
            Ok(links) => (Some(links), Ok(())),
            Err(Failed { status, announced }) => (announced, Err(status)),
        };
        if let Some(made) = made {
            // Kept only while its arrival is to be taken back; otherwise dropped
            // (dereferenced) at the end of this call.
            if made.announced() {
                self.mount_manager.with(|m| *m = mm);
            }
            self.links.with(|l| *l = made);
        }
        result
    }

    /// The mounted volume.
    pub fn mounted(&self) -> &Arc<MountedVolume> {
        &self.mounted
    }

    /// The device object (live until this value drops).
    pub fn device_object(&self) -> NonNull<DEVICE_OBJECT> {
        self.device
    }

    /// How its drive letter was made (W2; `LinkKind::None` without one or once removed).
    pub fn letter_kind(&self) -> LinkKind {
        self.links.with(|l| l.kind())
    }

    /// Removes every link this mount created, each by its full path and only while it still
    /// points at this device (the mount manager's delete-points request first for a letter it
    /// made), then sends the mount manager's volume removal notification when it accepted the
    /// arrival (W2: it forgets the device before the device is deleted). Idempotent; runs in any thread context (every link is global), so a dismount
    /// sequence on a system thread may call it before the device goes; `drop` always calls it
    /// (after such a call, a no-op).
    ///
    /// IRQL: PASSIVE_LEVEL (the links are taken out under the spin lock, removed after it).
    pub fn remove_links(&self) {
        let mut links = self.links.with(core::mem::take);
        // The mount manager kept since publish; reopened (with retries) only if it was not.
        let kept = self.mount_manager.with(Option::take);
        let mm = match kept {
            Some(mm) => Some(mm),
            None => links
                .announced()
                // SAFETY: `device` is our live volume device (type invariant) for the whole
                // call, and `mm` is dropped at its end.
                .then(|| unsafe { links::mount_manager_for_removal(self.device) })
                .flatten(),
        };
        // `mm` is dropped (dereferenced) at the end of this call, before the device is deleted.
        links.remove_all(&KernelNamespace, mm.as_ref());
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
        self.remove_links();
        self.mounted.volume.dismount();
        self.delete_device();
    }
}

/// Stack locations VeraCrypt adds to its volume devices' StackSize (against the
/// NO_MORE_IRP_STACK_LOCATIONS bugcheck some drivers above cause).
const EXTRA_STACK_LOCATIONS: i8 = 6;

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
