//! The glue's half of a dismount (docs/review.md W1): the "volume above" the engine's
//! sequence (`crate::dismount`) locks and dismounts, and, in the wine-host build, the
//! filesystem stand-in that answers it.
//!
//! Owns: opening the volume from a system thread with a kernel handle and sending
//! FSCTL_LOCK_VOLUME and FSCTL_DISMOUNT_VOLUME on it (product), or sending the same codes as
//! IRPs straight to the volume device (wine-host: under Wine 8.0 no filesystem mounts on a
//! driver's device, ZwCreateFile handles carry no device object and ntdll answers
//! FSCTL_LOCK_VOLUME itself, so the stand-in in the volume's dispatch answers them instead).
//! Never: decides the order or whether the volume is in use (`crate::dismount::run` does).

use alloc::sync::Arc;

use super::disk::MountedVolume;

#[cfg(feature = "wine-host")]
use crate::Status;

/// FSCTL_LOCK_VOLUME (CTL_CODE(FILE_DEVICE_FILE_SYSTEM, 6, METHOD_BUFFERED, FILE_ANY_ACCESS)).
pub(crate) const FSCTL_LOCK_VOLUME: u32 = 0x0009_0018;
/// FSCTL_DISMOUNT_VOLUME (function 8).
pub(crate) const FSCTL_DISMOUNT_VOLUME: u32 = 0x0009_0020;

/// Waits `crate::dismount::RETRY_INTERVAL_MS` on the calling thread (a forced dismount's
/// retry). IRQL: PASSIVE_LEVEL, on a system thread (the dismount's).
fn wait_retry_interval() {
    wait_ms(crate::dismount::RETRY_INTERVAL_MS);
}

/// Waits `ms` milliseconds on the calling thread: the glue's one KeDelayExecutionThread (a
/// forced dismount's retry; a namespace or mount-manager call tried again after it ran out
/// of memory, `crate::namespace::retried`).
///
/// IRQL: PASSIVE_LEVEL (APC_LEVEL at most: the control mutex is a KMUTEX, which leaves the
/// thread at PASSIVE_LEVEL), never on an I/O completion path.
pub(crate) fn wait_ms(ms: u32) {
    super::irql::check(crate::platform::irql::Call::Wait);
    use wdk_sys::ntddk::KeDelayExecutionThread;
    use wdk_sys::{_MODE::KernelMode, LARGE_INTEGER};
    // Relative time (negative), in 100 ns units.
    let mut interval = LARGE_INTEGER {
        QuadPart: -(i64::from(ms) * 10_000),
    };
    // SAFETY: `interval` is valid for the call; a non-alertable kernel-mode wait at
    // PASSIVE_LEVEL (or APC_LEVEL), which KeDelayExecutionThread allows (caller's contract).
    let _ = unsafe { KeDelayExecutionThread(KernelMode as i8, 0, &mut interval) };
}

/// The volume above `\Device\VcVolume<N>`, reached by name (product) or device (wine-host).
/// It keeps a reference to the mounted volume for its name (W6: no copy is made until the
/// open, which copies it fallibly).
pub(crate) struct KernelVolumeAbove {
    device: core::ptr::NonNull<wdk_sys::DEVICE_OBJECT>,
    mounted: Arc<MountedVolume>,
    #[cfg(not(feature = "wine-host"))]
    handle: wdk_sys::HANDLE,
}

impl KernelVolumeAbove {
    /// The volume whose device is `device`, named `name` (`\Device\VcVolume<N>`). Nothing is
    /// opened yet (`lock` opens).
    ///
    /// # Safety
    /// `device` is a volume device of this driver that stays undeleted until the sequence's
    /// `Teardown::delete_device` (every request or look that uses it, `lock`, `dismount`,
    /// `file_system_mounted` and `others_hold_device`, comes before that; `release` does not
    /// touch it).
    pub(crate) unsafe fn new(
        device: core::ptr::NonNull<wdk_sys::DEVICE_OBJECT>,
        mounted: &Arc<MountedVolume>,
    ) -> Self {
        KernelVolumeAbove {
            device,
            mounted: Arc::clone(mounted),
            #[cfg(not(feature = "wine-host"))]
            handle: core::ptr::null_mut(),
        }
    }
}

#[cfg(not(feature = "wine-host"))]
mod product {
    use wdk_sys::ntddk::{IoAcquireVpbSpinLock, IoReleaseVpbSpinLock, ZwClose};
    use wdk_sys::{
        FILE_SHARE_READ, FILE_SHARE_WRITE, GENERIC_READ, HANDLE, KIRQL, SYNCHRONIZE, VPB_MOUNTED,
    };

    use super::super::host::{fs_control, zw_open, ZwName, ZwOpen};
    use super::super::strings::OwnedUnicode;
    use super::{KernelVolumeAbove, FSCTL_DISMOUNT_VOLUME, FSCTL_LOCK_VOLUME};
    use crate::dismount::VolumeAbove;
    use crate::Status;

    const FILE_SYNCHRONOUS_IO_NONALERT: u32 = 0x0000_0020;
    // VPB.Flags is a USHORT; the flag must fit it (W14: figures from the headers, checked).
    const _: () = assert!(VPB_MOUNTED <= u16::MAX as u32);
    const MOUNTED_FLAG: u16 = VPB_MOUNTED as u16;

    impl KernelVolumeAbove {
        /// Opens the volume as VeraCrypt does (read, share read/write, synchronous): the
        /// I/O manager routes the open, and the FSCTLs on it, to the filesystem mounted on
        /// the volume (mounting one, RAW at least, if none is yet).
        ///
        /// IRQL: PASSIVE_LEVEL, on a system thread (kernel handle, no access check against a
        /// user: the caller's right to dismount was checked in its own thread, W4).
        fn open(&mut self) -> Result<HANDLE, Status> {
            if !self.handle.is_null() {
                return Ok(self.handle);
            }
            let mut name = OwnedUnicode::copy(self.mounted.names.device_name())?;
            let handle = zw_open(
                ZwName::Owned(&mut name),
                ZwOpen {
                    access: GENERIC_READ | SYNCHRONIZE,
                    share: FILE_SHARE_READ | FILE_SHARE_WRITE,
                    options: FILE_SYNCHRONOUS_IO_NONALERT,
                    as_caller: false,
                },
            )?;
            self.handle = handle;
            Ok(handle)
        }

        fn fsctl(&mut self, code: u32, output: &mut [u8]) -> Result<(), Status> {
            let handle = self.open()?;
            // SAFETY: our kernel handle, opened for synchronous I/O (`open`), closed only by
            // `release`.
            unsafe { fs_control(handle, code, output) }
        }
    }

    impl VolumeAbove for KernelVolumeAbove {
        /// W3: the volume device's ReferenceCount (the I/O manager counts each file object
        /// opened on the device, a file system's own stream file objects included) above the
        /// one our own handle holds: something else keeps the device referenced, whatever the
        /// file system. Read as a snapshot (the I/O manager changes it with interlocked
        /// operations); the sequence asks after the links are gone, just before the deletion.
        ///
        /// IRQL: any; called at PASSIVE_LEVEL.
        fn others_hold_device(&mut self) -> bool {
            // SAFETY: our volume device, undeleted while this value is used (`new`'s
            // contract); taking a field's address touches nothing.
            let field = unsafe { &raw const (*self.device.as_ptr()).ReferenceCount };
            // SAFETY: an aligned LONG of a live device object; a volatile read of a value the
            // I/O manager updates atomically.
            let references = unsafe { core::ptr::read_volatile(field) };
            let ours = i32::from(!self.handle.is_null());
            references > ours
        }
        fn lock(&mut self) -> Result<(), Status> {
            self.fsctl(FSCTL_LOCK_VOLUME, &mut [])
        }
        fn dismount(&mut self) -> Result<(), Status> {
            // Opens first when `lock` could not (the sequence asks only when a file system
            // is mounted then).
            self.fsctl(FSCTL_DISMOUNT_VOLUME, &mut [])
        }
        fn has_handle(&self) -> bool {
            !self.handle.is_null()
        }
        /// The volume device's VPB says VPB_MOUNTED (IoCreateDevice gives a FILE_DEVICE_DISK
        /// device one; the I/O manager sets the flag when a file system, RAW included, mounts
        /// and a dismount swaps in an unmounted VPB), read under the VPB spin lock, which
        /// guards the device's Vpb pointer and the VPB's Flags.
        ///
        /// IRQL: up to DISPATCH_LEVEL (the spin lock); called at PASSIVE_LEVEL.
        fn file_system_mounted(&mut self) -> bool {
            let mut irql: KIRQL = 0;
            // SAFETY: `irql` is valid for the call; PASSIVE_LEVEL here (at most DISPATCH_LEVEL
            // is allowed).
            unsafe { IoAcquireVpbSpinLock(&mut irql) };
            // SAFETY: our volume device, undeleted while this value is used (`new`'s
            // contract); its Vpb pointer is read under the VPB spin lock.
            let vpb = unsafe { (*self.device.as_ptr()).Vpb };
            // SAFETY: a non-null Vpb of our live device stays allocated while the lock is
            // held (a file system swapping it does so under the same lock).
            let mounted = !vpb.is_null() && unsafe { (*vpb).Flags } & MOUNTED_FLAG != 0;
            // SAFETY: releases the lock acquired above with the IRQL it returned.
            unsafe { IoReleaseVpbSpinLock(irql) };
            mounted
        }
        fn wait_before_retry(&mut self) {
            super::wait_retry_interval();
        }
        fn release(&mut self) {
            let handle = core::mem::replace(&mut self.handle, core::ptr::null_mut());
            if !handle.is_null() {
                // SAFETY: our kernel handle, closed once (the lock goes with it).
                let _ = unsafe { ZwClose(handle) };
            }
        }
    }
}

#[cfg(feature = "wine-host")]
mod wine {
    use core::sync::atomic::Ordering;

    use super::{KernelVolumeAbove, FSCTL_DISMOUNT_VOLUME, FSCTL_LOCK_VOLUME};
    use crate::dismount::VolumeAbove;
    use crate::Status;

    impl KernelVolumeAbove {
        fn fsctl(&mut self, code: u32) -> Result<(), Status> {
            let mut none = [0u8; 0];
            // SAFETY: our volume device, undeleted while this value lives (`new`'s contract).
            unsafe { super::super::device_control::device_control(self.device, code, &mut none, 0) }
                .map(|_| ())
        }
    }

    impl VolumeAbove for KernelVolumeAbove {
        /// W3: handles still open on the volume device (its CREATE minus CLOSE count: the
        /// stand-in's open files), the reference state the Wine build can see (no file
        /// system mounts there, and the sequence opens no handle of its own).
        fn others_hold_device(&mut self) -> bool {
            self.mounted.open_handles.load(Ordering::Acquire) > 0
        }
        fn lock(&mut self) -> Result<(), Status> {
            self.fsctl(FSCTL_LOCK_VOLUME)
        }
        fn dismount(&mut self) -> Result<(), Status> {
            self.fsctl(FSCTL_DISMOUNT_VOLUME)
        }
        /// The volume device itself is the handle: always there.
        fn has_handle(&self) -> bool {
            true
        }
        /// True: Wine's IoAcquireVpbSpinLock is a stub and no file system mounts on a
        /// driver's device there; the stand-in in the volume's dispatch plays a mounted one,
        /// so a failed publish runs the forced sequence as it would over NTFS.
        fn file_system_mounted(&mut self) -> bool {
            true
        }
        fn wait_before_retry(&mut self) {
            super::wait_retry_interval();
        }
        fn release(&mut self) {}
    }
}

/// The wine-host build's filesystem stand-in, in the volume device's dispatch: answers
/// FSCTL_LOCK_VOLUME with STATUS_ACCESS_DENIED while any handle is open on the volume (what
/// RAW and NTFS do with open files; a client holding the device open plays "files open"),
/// otherwise success, and FSCTL_DISMOUNT_VOLUME with success; each answer goes to the
/// debugger log, so the Wine test sees their order. `None`: not one of its codes.
#[cfg(feature = "wine-host")]
pub(crate) fn fs_stand_in(id: u32, open_handles: u32, code: u32) -> Option<Status> {
    let (what, status) = match code {
        FSCTL_LOCK_VOLUME if open_handles > 0 => (c"lock", Status::Host(0xC000_0022)),
        FSCTL_LOCK_VOLUME => (c"lock", Status::Success),
        FSCTL_DISMOUNT_VOLUME => (c"dismount", Status::Success),
        _ => return None,
    };
    // SAFETY: NUL-terminated format; `%u`/`%x` get u32 arguments, `%s` a NUL-terminated static
    // C string. (DbgPrint, not core::fmt: this runs in a dispatch routine, W13's stack budget.)
    unsafe {
        wdk_sys::ntddk::DbgPrint(
            c"vcdirect: fs stand-in: VcVolume%u %s -> 0x%08x (%u open)\n".as_ptr(),
            id,
            what.as_ptr(),
            status.ntstatus(),
            open_handles,
        )
    };
    Some(status)
}
