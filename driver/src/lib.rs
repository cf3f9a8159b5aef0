//! vcdirect: the engine of a VeraCrypt-compatible encrypted volume driver.
//!
//! The engine is portable (`no_std` + `alloc`) and safe: it is generic over [`platform`], which
//! the kernel glue (`wdm`, feature `kernel`), the user-mode host and the deterministic simulator
//! implement. One read request travels `wdm -> volume -> (queue | direct) -> barrier -> crypto
//! -> completion -> wdm`.
#![no_std]
#![cfg_attr(not(test), warn(missing_docs))]

extern crate alloc;
#[cfg(any(test, feature = "fault-switches"))]
extern crate std;

pub mod abi;
pub mod access;
pub mod barrier;
pub mod completion;
pub mod control;
pub mod crypto;
pub mod direct;
pub mod disk_ioctl;
pub mod dismount;
pub mod faults;
pub mod io;
pub mod namespace;
pub mod platform;
pub mod queue;
pub mod registry;
pub mod secret;
pub mod status;
pub mod volume;

#[cfg(feature = "kernel")]
#[allow(unsafe_code)]
pub mod wdm;

pub use status::Status;
