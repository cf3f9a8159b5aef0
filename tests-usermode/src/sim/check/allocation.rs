//! Allocation failure (docs/review.md W6): a mount whose n-th fallible allocation fails (the
//! seed draws n) fails with STATUS_INSUFFICIENT_RESOURCES, panics nowhere and leaves no engine
//! thread behind (one left blocked makes the seed end in a reported deadlock); a draw past the
//! mount's last allocation mounts normally. The real mount of the seed follows and must serve
//! as always.

use vcdirect::volume::{MountParams, Volume};
use vcdirect::Status;

use crate::mount::mount_params;
use crate::sim::host::SimHost;
use crate::sim::log::{DATA_OFFSET, DATA_SECTORS, SECTOR};
use crate::sim::platform::SimPlatform;
use crate::sim::workload::SimConfig;

/// Mounts with the `n`-th fallible allocation failing (W6): the mount fails with
/// STATUS_INSUFFICIENT_RESOURCES and leaves nothing running (a thread it left blocked is a
/// deadlock at the end of the seed), or, when it makes fewer than `n`, it mounts and dismounts.
pub(crate) fn check_failed_mount(
    cfg: &SimConfig,
    host: SimHost,
    key: &[u8; 64],
    n: u64,
) -> Vec<String> {
    let params = MountParams {
        read_only: cfg.read_only,
        ..mount_params(DATA_OFFSET, DATA_SECTORS * SECTOR, cfg.gates)
    };
    vcdirect::faults::fail_allocation_at(n);
    let result = Volume::mount(SimPlatform::default(), host, key, params);
    let made = vcdirect::faults::allocations_seen();
    vcdirect::faults::fail_allocation_at(0);
    match result {
        Err(Status::InsufficientResources) => Vec::new(),
        Ok(volume) if made < n => {
            volume.dismount();
            Vec::new()
        }
        Ok(volume) => {
            volume.dismount();
            vec![format!(
                "W6: allocation {n} of {made} failed but the mount succeeded"
            )]
        }
        Err(status) => vec![format!(
            "W6: allocation {n} failed: the mount failed with {status:?}, not STATUS_INSUFFICIENT_RESOURCES"
        )],
    }
}
