//! The engine's `Platform` in the kernel.
//!
//! Owns: [`KernelPlatform`], which lends the engine the wrappers of this module.
//! Never: does I/O. `Host` is a placeholder ([`NoHost`], no value exists) until the lead wires
//! host devices; `Request` is the real [`Irp`].

use alloc::boxed::Box;
use core::ptr::NonNull;

use wdk_sys::ntddk::KeQueryActiveProcessorCountEx;
use wdk_sys::DEVICE_OBJECT;

use super::irp::Irp;
use super::sync::{KernelEvent, KernelSemaphore, SpinLock};
use super::thread::SystemThread;
use super::work_item::queue_work_item;
use crate::platform::{HostDevice, HostIo, HostKind, HostLimits, Platform, ThreadRole};
use crate::Status;

/// ALL_PROCESSOR_GROUPS for KeQueryActiveProcessorCountEx.
const ALL_PROCESSOR_GROUPS: u16 = 0xffff;

/// The kernel as the engine sees it: a handle to this driver's control device (the owner of
/// work items).
#[derive(Clone)]
pub struct KernelPlatform {
    device: NonNull<DEVICE_OBJECT>,
}

// SAFETY: the device object lives until Unload, after every engine object using the platform
// was torn down; the kernel routines taking it are callable from any thread.
unsafe impl Send for KernelPlatform {}
// SAFETY: as above; the platform has no mutable state of its own.
unsafe impl Sync for KernelPlatform {}

impl KernelPlatform {
    /// A platform whose work items belong to `device`.
    ///
    /// # Safety
    /// `device` is a device object of this driver that outlives every clone of the platform.
    pub unsafe fn new(device: NonNull<DEVICE_OBJECT>) -> Self {
        KernelPlatform { device }
    }
}

impl Platform for KernelPlatform {
    type Lock<T: Send> = SpinLock<T>;
    type Event = KernelEvent;
    type Semaphore = KernelSemaphore;
    type Thread = SystemThread;
    type Request = Irp;
    type Host = NoHost;

    fn spawn(
        &self,
        _role: ThreadRole,
        body: Box<dyn FnOnce() + Send>,
    ) -> Result<Self::Thread, Status> {
        SystemThread::spawn(body)
    }

    fn queue_work_item(&self, item: Box<dyn FnOnce() + Send>) {
        queue_work_item(self.device.as_ptr(), item);
    }

    fn cpu_count(&self) -> usize {
        // SAFETY: no preconditions; callable at any IRQL.
        let count = unsafe { KeQueryActiveProcessorCountEx(ALL_PROCESSOR_GROUPS) };
        (count as usize).max(1)
    }
}

/// Placeholder host device: no value of it exists, so no code path can use it. The lead
/// replaces it with the real host (IRPs to a raw device, ZwReadFile on a container).
pub enum NoHost {}

/// Placeholder host operation (no value exists).
pub enum NoHostIo {}

impl HostIo for NoHostIo {
    fn wait(self) -> Result<usize, Status> {
        match self {}
    }
}

impl HostDevice for NoHost {
    type Io<'a> = NoHostIo;

    fn kind(&self) -> HostKind {
        match *self {}
    }
    fn size(&self) -> u64 {
        match *self {}
    }
    fn limits(&self) -> HostLimits {
        match *self {}
    }
    fn start_read<'a>(&'a self, _offset: u64, _buf: &'a mut [u8]) -> Self::Io<'a> {
        match *self {}
    }
    fn start_write<'a>(&'a self, _offset: u64, _buf: &'a [u8]) -> Self::Io<'a> {
        match *self {}
    }
    fn flush(&self) -> Result<(), Status> {
        match *self {}
    }
}
