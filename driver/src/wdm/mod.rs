//! Kernel glue (WDM): the only place of the engine that talks to the Windows kernel.
//!
//! Owns: small safe wrappers over kernel objects (spin lock, events, semaphores, system
//! threads, work items, remove locks, pool memory, IRPs), the [`KernelPlatform`] that lends
//! them to the engine, the control device and the driver's entry points.
//! Never: holds engine policy (ordering, crypto, queueing decisions); it hands requests to
//! `volume` and completes what the engine hands back.
//!
//! Every `unsafe` block of the crate lives here, each with a `// SAFETY:` comment (the
//! workspace lints `clippy::undocumented_unsafe_blocks` and `multiple_unsafe_ops_per_block`
//! enforce it, and `unsafe_op_in_unsafe_fn` asks for blocks inside `unsafe fn`). The wrappers
//! state their IRQL contract in their doc comments; callers above them never see a raw pointer.
//! Built only with feature `kernel` (the `sys/` crate links it into vcdirect.sys).

#[cfg(target_arch = "aarch64")]
mod arm64;
mod chkstk;
mod codes;
mod control;
mod device_control;
mod disk;
mod dismount;
mod encryption_pool;
mod host;
mod identity;
mod irp;
mod irql;
mod layout;
mod layout_arm64;
mod links;
mod mutex;
mod panic;
mod platform;
pub mod pool;
mod registry;
mod remove_lock;
#[cfg(feature = "wine-host")]
mod selftest;
mod strings;
mod sync;
mod thread;
#[cfg(all(target_arch = "x86_64", not(feature = "wine-host")))]
mod vector_state;
mod work_item;

pub use control::{driver_entry, DRIVER_TAG};
pub use host::KernelHost;
pub use irp::Irp;
pub use panic::on_panic;
pub use platform::{ClientSecurity, KernelPlatform};
pub use pool::KernelAllocator;
pub use remove_lock::{RemoveLock, RemoveLockGuard};
pub use sync::{KernelEvent, KernelSemaphore, SpinLock};
pub use thread::SystemThread;

/// Converts an engine status to the raw NTSTATUS the kernel expects (the one place it happens).
pub(crate) fn nt(status: crate::Status) -> wdk_sys::NTSTATUS {
    status.ntstatus() as wdk_sys::NTSTATUS
}
