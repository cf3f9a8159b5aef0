//! The one constructor of mount parameters for the user-mode hosts (tests, simulator, loom
//! models, vcbench): each caller changes only the fields its case is about.

use vcdirect::registry::{Gates, Tunables};
use vcdirect::volume::MountParams;

/// A writable, non-hidden, unprotected volume of `data_size` bytes at host byte `data_offset`,
/// 512-byte sectors, the default tunables.
pub fn mount_params(data_offset: u64, data_size: u64, gates: Gates) -> MountParams {
    MountParams {
        data_offset,
        data_size,
        sector_size: 512,
        read_only: false,
        hidden: false,
        protected_range: None,
        gates,
        tunables: Tunables::default(),
        algorithm: vcdirect::crypto::AES,
    }
}
