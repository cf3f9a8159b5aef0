//! The invariants every seed is checked against, one file each (or one per small group). The
//! workload (`super::workload`) records the run; these say what the record must show.
//!
//! - [`completion_thread`]: docs/review.md R1, no upper completion on an engine thread (checked in
//!   each completion as it runs).
//! - [`key_block`]: docs/review.md R2, no host data transfer starts after the key block (checked by
//!   the simulated host as each operation starts).
//! - [`dismount`]: docs/review.md R13 and R3, dismount drains everything, leaves no engine thread
//!   behind and no cancel hand-shake open, no crypto user outlives the erasure, and the keys
//!   end erased.
//! - [`bounds`]: the direct path's in-flight bound, and docs/review.md R12 (no wait on a
//!   non-overlapping request).
//! - [`overtaking`]: docs/review.md R12, a read the dispatching thread issues overtakes no job
//!   queued in the direct FIFO before it (checked by the simulated host as it starts).
//! - [`requests`]: each request's status and bytes, and each read's data against the model;
//!   docs/review.md W7, a request whose buffer cannot be mapped fails, nothing issued.
//! - [`medium`]: the final medium against the model.
//! - [`flushes`]: docs/review.md R7 and flush ordering.
//! - [`paths`]: every eligible request goes direct.
//! - [`filesystem_above`]: docs/review.md W1, a dismount with a filesystem stand-in above the
//!   volume (its own workload, `vcsim --filesystem-above`): refused while files are open,
//!   otherwise nothing the filesystem wrote is lost and nothing reaches the deleted device.
//! - [`short_transfers`]: docs/review.md W12, a short host transfer fails its request with no
//!   bytes reported, and no host write of a request starts after one of its writes failed.
//!
//! - [`allocation`]: docs/review.md W6, a failed allocation fails the mount cleanly.
//! - [`irql`]: docs/review.md W9, no call above its IRQL contract (checked by every platform
//!   wrapper as it runs, recorded, and added to the seed's report).
//!
//! Each violation names its invariant first (`R13: ...`, `W9 violation: ...`), so a fault switch can be matched to
//! the violation it must cause.

pub(crate) mod allocation;
pub(crate) mod bounds;
pub(crate) mod completion_thread;
pub(crate) mod dismount;
pub(crate) mod filesystem_above;
pub(crate) mod flushes;
pub(crate) mod irql;
pub(crate) mod key_block;
pub(crate) mod medium;
pub(crate) mod overtaking;
pub(crate) mod paths;
pub(crate) mod requests;
pub(crate) mod short_transfers;
