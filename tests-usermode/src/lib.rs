//! User-mode host of the vcdirect engine: the std platform (real threads), host devices
//! (memory, file with O_DIRECT, modelled NVMe), the test request and buffer types, the
//! deterministic simulator, and the tools (`vcbench`, `vcsim`).

pub mod bench;
mod condvar_sync;
pub mod fs_above;
pub mod host;
pub mod irql;
pub mod key_blocks;
pub mod loom_platform;
pub mod mount;
pub mod request;
pub mod security;
pub mod sim;
pub mod stack_scan;
pub mod std_platform;
