//! Dismount with a filesystem on the volume (docs/review.md W1), as VeraCrypt does it.
//!
//! Owns: the order of a dismount and the decision that the volume is in use. The "volume
//! above" (whatever filesystem Windows mounted on the volume device) is first asked to lock
//! the volume (FSCTL_LOCK_VOLUME: it writes its dirty data and fails while files are open),
//! then to dismount (FSCTL_DISMOUNT_VOLUME: it writes what is left and lets go of the device).
//! Only then is the volume's admission closed and drained (docs/review.md R13, `Volume::dismount`),
//! its links removed and its device deleted, so no write the filesystem still had to make is
//! lost and none reaches a deleted device.
//! Never: talks to the kernel (the glue implements [`VolumeAbove`] with ZwCreateFile and
//! ZwFsControlFile from a system thread, and [`Teardown`] with the volume device's code), or
//! decides which links exist (the namespace code behind [`Teardown::remove_links`] does).
//!
//! The in-use decision is the lock's result, as VeraCrypt's (1.26, `UnmountDevice`): the
//! filesystem that holds the files is the one that knows whether any is open. A handle count
//! on the disk device says nothing once a filesystem is mounted (opens then go to the
//! filesystem's device), which is why the old check was replaced.

use crate::Status;

/// What a refused (not forced) dismount reports: STATUS_DEVICE_BUSY, which DeviceIoControl
/// turns into ERROR_BUSY and vcctl into "V: is in use: close files and windows on it, or use
/// --force". VeraCrypt answers the same situation with its own ERR_FILES_OPEN in the reply;
/// vcdirect's ABI carries outcomes as NTSTATUS, and STATUS_DEVICE_BUSY is the one that says
/// "in use, nothing changed" (STATUS_ACCESS_DENIED already means "not your volume": W4).
pub const IN_USE: Status = Status::DeviceBusy;

/// STATUS_VOLUME_DISMOUNTED: what a filesystem answers a second FSCTL_DISMOUNT_VOLUME with;
/// VeraCrypt counts it as a dismount that happened.
pub const VOLUME_DISMOUNTED: Status = Status::Host(0xC000_026E);

/// The filesystem (or whatever else) mounted on the volume device, as the dismount sees it.
///
/// The glue opens the volume from a system thread and sends the FSCTLs on that handle; each
/// method returns the status the request completed with. A failure to open the volume is a
/// failed `lock` (VeraCrypt treats both as "files open").
pub trait VolumeAbove {
    /// Opens the volume (once) and sends FSCTL_LOCK_VOLUME.
    fn lock(&mut self) -> Result<(), Status>;
    /// Sends FSCTL_DISMOUNT_VOLUME on the handle `lock` opened (when it could open one).
    fn dismount(&mut self) -> Result<(), Status>;
    /// Closes the handle (and with it the lock). Called exactly once, on every path out.
    fn release(&mut self);
}

/// The volume's own side of a dismount, in the order the sequence calls it.
pub trait Teardown {
    /// Closes admission and drains: every admitted request served, every child operation
    /// completed, threads joined, keys erased (docs/review.md R13).
    fn drain(&self);
    /// Removes exactly the links this mount created (the namespace code decides which).
    fn remove_links(&self);
    /// Deletes the volume device; nothing reaches the volume afterwards.
    fn delete_device(&self);
}

/// What the filesystem answered (for the log and the tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    /// FSCTL_LOCK_VOLUME's result (or the open's failure).
    pub lock: Result<(), Status>,
    /// FSCTL_DISMOUNT_VOLUME's result; `None` when it was not sent (no handle).
    pub dismount: Option<Result<(), Status>>,
    /// The request was forced.
    pub forced: bool,
}

/// One step of the sequence, in the order it ran (for the tests' recorders).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// FSCTL_LOCK_VOLUME sent.
    Lock,
    /// FSCTL_DISMOUNT_VOLUME sent.
    Dismount,
    /// Handle closed.
    Release,
    /// Admission closed and drained.
    Drain,
    /// Links removed.
    RemoveLinks,
    /// Device deleted.
    DeleteDevice,
}

/// The order a completed dismount runs its steps in (a refused one: `Lock`, `Release`).
pub const ORDER: [Step; 6] = [
    Step::Lock,
    Step::Dismount,
    Step::Drain,
    Step::RemoveLinks,
    Step::Release,
    Step::DeleteDevice,
];

/// True when `status` says the filesystem let go of the volume.
fn dismounted(status: Result<(), Status>) -> bool {
    match status {
        Ok(()) => true,
        Err(s) => s == VOLUME_DISMOUNTED,
    }
}

/// Dismounts: lock; if the lock fails and `force` is not set, [`IN_USE`] and nothing changed
/// (the volume keeps serving). Otherwise dismount the filesystem (a forced request sends it
/// even when the lock failed, as VeraCrypt does), then drain, remove the links, close the
/// handle and delete the device. A non-forced dismount the filesystem refuses is [`IN_USE`]
/// too. The handle stays open until the links are gone, so nothing can open the volume and
/// mount a filesystem again in between.
pub fn run<A, T>(above: &mut A, volume: &T, force: bool) -> Result<Report, Status>
where
    A: VolumeAbove + ?Sized,
    T: Teardown + ?Sized,
{
    let lock = above.lock();
    if lock.is_err() && !force {
        above.release();
        return Err(IN_USE);
    }
    let dismount = above.dismount();
    if !dismounted(dismount) && !force {
        above.release();
        return Err(IN_USE);
    }
    volume.drain();
    volume.remove_links();
    above.release();
    volume.delete_device();
    Ok(Report {
        lock,
        dismount: Some(dismount),
        forced: force,
    })
}

/// The glue's unload and shutdown path: the same sequence, forced (VeraCrypt dismounts every
/// volume with "ignore open files" when shutdown is pending).
pub fn run_forced<A, T>(above: &mut A, volume: &T) -> Report
where
    A: VolumeAbove + ?Sized,
    T: Teardown + ?Sized,
{
    match run(above, volume, true) {
        Ok(report) => report,
        // `run` refuses only a request that is not forced.
        Err(_) => Report {
            lock: Err(IN_USE),
            dismount: None,
            forced: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use core::cell::RefCell;

    /// Records every step; the filesystem answers with the statuses given.
    struct Recorder {
        steps: RefCell<Vec<Step>>,
        lock: Result<(), Status>,
        dismount: Result<(), Status>,
    }

    impl Recorder {
        fn new(lock: Result<(), Status>, dismount: Result<(), Status>) -> Self {
            Recorder {
                steps: RefCell::new(Vec::new()),
                lock,
                dismount,
            }
        }
        fn steps(&self) -> Vec<Step> {
            self.steps.borrow().clone()
        }
    }

    struct Above<'a>(&'a Recorder);

    impl VolumeAbove for Above<'_> {
        fn lock(&mut self) -> Result<(), Status> {
            self.0.steps.borrow_mut().push(Step::Lock);
            self.0.lock
        }
        fn dismount(&mut self) -> Result<(), Status> {
            self.0.steps.borrow_mut().push(Step::Dismount);
            self.0.dismount
        }
        fn release(&mut self) {
            self.0.steps.borrow_mut().push(Step::Release);
        }
    }

    impl Teardown for Recorder {
        fn drain(&self) {
            self.steps.borrow_mut().push(Step::Drain);
        }
        fn remove_links(&self) {
            self.steps.borrow_mut().push(Step::RemoveLinks);
        }
        fn delete_device(&self) {
            self.steps.borrow_mut().push(Step::DeleteDevice);
        }
    }

    const DENIED: Status = Status::Host(0xC000_0022);

    #[test]
    fn w1_clean_dismount_locks_and_dismounts_before_the_volume_goes() {
        let r = Recorder::new(Ok(()), Ok(()));
        let report = run(&mut Above(&r), &r, false).unwrap();
        assert_eq!(r.steps(), ORDER);
        assert_eq!(report.lock, Ok(()));
        assert_eq!(report.dismount, Some(Ok(())));
    }

    #[test]
    fn w1_lock_refused_without_force_is_in_use_and_changes_nothing() {
        let r = Recorder::new(Err(DENIED), Ok(()));
        assert_eq!(run(&mut Above(&r), &r, false), Err(IN_USE));
        assert_eq!(r.steps(), [Step::Lock, Step::Release]);
    }

    #[test]
    fn w1_forced_dismount_sends_the_dismount_even_when_the_lock_failed() {
        let r = Recorder::new(Err(DENIED), Ok(()));
        let report = run(&mut Above(&r), &r, true).unwrap();
        assert_eq!(r.steps(), ORDER);
        assert_eq!(report.lock, Err(DENIED));
        assert!(report.forced);
    }

    #[test]
    fn w1_dismount_refused_without_force_is_in_use() {
        let r = Recorder::new(Ok(()), Err(DENIED));
        assert_eq!(run(&mut Above(&r), &r, false), Err(IN_USE));
        assert_eq!(r.steps(), [Step::Lock, Step::Dismount, Step::Release]);
        // An already dismounted filesystem is a dismount that happened.
        let r = Recorder::new(Ok(()), Err(VOLUME_DISMOUNTED));
        assert!(run(&mut Above(&r), &r, false).is_ok());
        assert_eq!(r.steps(), ORDER);
    }

    #[test]
    fn w1_unload_and_shutdown_path_is_forced() {
        let r = Recorder::new(Err(DENIED), Err(DENIED));
        let report = run_forced(&mut Above(&r), &r);
        assert_eq!(r.steps(), ORDER);
        assert!(report.forced);
    }
}
