//! The disk device of a mounted volume: `\Device\VcVolume<N>`, `\DosDevices\VcVolume<N>` and
//! optionally `\DosDevices\X:`.
//!
//! Owns, one Windows object per file: the device object, its links and extension
//! ([`device`]: creation and deletion, the remove lock and the volume reference in the
//! extension), the dispatch routine and the cancel routine of the IRPs sent to it
//! ([`dispatch`]: READ/WRITE/FLUSH_BUFFERS handed to `Volume::dispatch`, pended; the engine
//! completes each exactly once), and the disk IOCTLs a file system and DiskSpd ask
//! ([`ioctl`]). Never: validates or orders I/O (the engine does).

mod device;
mod dispatch;
mod ioctl;

pub use device::{MountedVolume, VolumeDevice};
pub(crate) use dispatch::{dispatch, is_volume_device};
