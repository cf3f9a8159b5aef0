//! W1: the volume device is deleted by the dismount sequence itself, whoever else held a
//! reference to it for a moment (a status or erase-keys IOCTL that found it in the table).
//!
//! The table entry is removed first, so no new reference is taken; the references taken
//! before are held only while a control IOCTL builds its reply (no wait on anything of the
//! dismount). The sequence waits until its own is the last one, then drops it: the device is
//! deleted there, before the handle on the volume is closed and before the dismount IOCTL
//! completes, never later in another thread. The glue's teardown (`TableTeardown::
//! delete_device`) deletes through [`delete_when_sole`], the function the model tests call.

use alloc::sync::Arc;

use crate::faults::{self, Fault};

/// Waits until `count()` (the strong count of the sequence's reference) is 1, calling
/// `pause` between two looks. Returns how many pauses it made.
pub fn wait_until_sole(count: impl Fn() -> usize, mut pause: impl FnMut()) -> u32 {
    let mut pauses: u32 = 0;
    // The bug this wait replaces: the sequence dropped its reference whoever held another,
    // so the device was deleted later, in the thread that dropped the last one.
    if faults::is_on(Fault::W1DeleteBeforeLastReference) {
        return pauses;
    }
    while count() > 1 {
        pause();
        pauses = pauses.saturating_add(1);
    }
    pauses
}

/// Drops `ours` (the dismount sequence's reference to the volume device) once it is the
/// last, so the device's drop (its deletion) runs here, in the calling thread, before this
/// returns ([`wait_until_sole`], `pause` between two looks). Returns how many pauses it made.
pub fn delete_when_sole<T>(ours: Arc<T>, pause: impl FnMut()) -> u32 {
    let pauses = wait_until_sole(|| Arc::strong_count(&ours), pause);
    drop(ours);
    pauses
}
