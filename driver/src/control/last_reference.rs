//! W1: the volume device is deleted by the dismount sequence itself, whoever else held a
//! reference to it for a moment (a status or erase-keys IOCTL that found it in the table).
//!
//! The table entry is removed first, so no new reference is taken; the references taken
//! before are held only while a control IOCTL builds its reply (no wait on anything of the
//! dismount). The sequence waits until its own is the last one, then drops it: the device is
//! deleted there, before the handle on the volume is closed and before the dismount IOCTL
//! completes, never later in another thread.

/// Waits until `count()` (the strong count of the sequence's reference) is 1, calling
/// `pause` between two looks. Returns how many pauses it made.
pub fn wait_until_sole(count: impl Fn() -> usize, mut pause: impl FnMut()) -> u32 {
    let mut pauses: u32 = 0;
    while count() > 1 {
        pause();
        pauses = pauses.saturating_add(1);
    }
    pauses
}
