//! Dismount with a filesystem on the volume (docs/review.md W1), as VeraCrypt does it.
//!
//! Owns: the order of a dismount and the decision that the volume is in use. The "volume
//! above" (whatever filesystem Windows mounted on the volume device) is first asked to lock
//! the volume (FSCTL_LOCK_VOLUME: it writes its dirty data and fails while files are open),
//! then to dismount (FSCTL_DISMOUNT_VOLUME: it writes what is left and lets go of the device).
//! Only then is the volume's admission closed and drained (docs/review.md R13, `Volume::dismount`),
//! its links removed and its device deleted (the handle closed last), so no write the filesystem still had to make is
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
/// failed `lock` (VeraCrypt treats both as "files open"). When no handle could be opened the
/// sequence asks [`VolumeAbove::file_system_mounted`]: nothing mounted, nothing to dismount,
/// so it opens nothing more (an open would mount a file system just to dismount it), sends
/// nothing and does not wait; a file system mounted, the dismount is asked for (it opens the
/// volume again) and a failed open is a failed dismount, tried again like one (a sharing
/// conflict may end, memory may come back, and the file system may still hold data).
pub trait VolumeAbove {
    /// W3: something other than this sequence's own handle still holds the volume device
    /// (the device's own reference state: the product reads the device object's
    /// ReferenceCount, less the one its own open handle holds; a file system that keeps the
    /// device referenced after its dismount, NTFS or any other, or files a forced dismount
    /// left open, show there). Asked once, after the links are gone and before the device is
    /// deleted.
    fn others_hold_device(&mut self) -> bool;
    /// Opens the volume (once) and sends FSCTL_LOCK_VOLUME.
    fn lock(&mut self) -> Result<(), Status>;
    /// Sends FSCTL_DISMOUNT_VOLUME on the handle, opening the volume first when no earlier
    /// call could (the open's failure is then the result).
    fn dismount(&mut self) -> Result<(), Status>;
    /// The volume is open (an earlier call opened it; a lock the file system refused leaves
    /// it open).
    fn has_handle(&self) -> bool;
    /// A file system (RAW included) is mounted on the volume now; asked without opening
    /// anything (the kernel: the volume device's VPB says VPB_MOUNTED).
    fn file_system_mounted(&mut self) -> bool;
    /// Waits [`RETRY_INTERVAL_MS`] before a forced dismount sends FSCTL_DISMOUNT_VOLUME again.
    fn wait_before_retry(&mut self);
    /// Closes the handle (and with it the lock). Called exactly once, on every path out; after
    /// a completed dismount, last (after the device was deleted).
    fn release(&mut self);
}

/// The volume's own side of a dismount, in the order the sequence calls it.
pub trait Teardown {
    /// Latches "unload disabled" for the rest of the boot ([`keeps_driver`] said so): called
    /// before the device is deleted, so the last dismount never restores DriverUnload.
    fn keep_driver_loaded(&self);
    /// Closes admission and drains: every admitted request served, every child operation
    /// completed, threads joined, keys erased (docs/review.md R13).
    fn drain(&self);
    /// Removes exactly the links this mount created (the namespace code decides which).
    /// Idempotent: a second call finds nothing left to remove.
    fn remove_links(&self);
    /// Deletes the volume device; nothing reaches the volume afterwards.
    fn delete_device(&self);
}

/// What the filesystem answered (for the log and the tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    /// FSCTL_LOCK_VOLUME's result (or the open's failure).
    pub lock: Result<(), Status>,
    /// FSCTL_DISMOUNT_VOLUME's result (or the open's failure, when the lock's open failed and
    /// a file system was mounted); `None` when it was not asked for: no handle and nothing
    /// mounted.
    pub dismount: Option<Result<(), Status>>,
    /// The request was forced.
    pub forced: bool,
    /// Something other than the sequence's handle still held the device before its deletion
    /// ([`VolumeAbove::others_hold_device`]; false when not asked: nothing was mounted).
    pub referenced: bool,
    /// The driver must stay loaded for the rest of the boot ([`keeps_driver`]).
    pub keeps_driver: bool,
}

/// One step of the sequence, in the order it ran (for the tests' recorders).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Asked whether anything else holds the device ([`VolumeAbove::others_hold_device`]).
    ReferenceCheck,
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
    /// Unload disabled for the rest of the boot.
    KeepDriverLoaded,
    /// Waited before another forced FSCTL_DISMOUNT_VOLUME.
    Wait,
    /// Device deleted.
    DeleteDevice,
    /// Asked whether a file system is mounted ([`VolumeAbove::file_system_mounted`]).
    MountCheck,
}

/// The order a completed dismount runs its steps in when the driver may unload afterwards (a
/// refused one: `Lock`, `Release`); one that [`keeps_driver`] adds `KeepDriverLoaded` before
/// `DeleteDevice`.
pub const ORDER: [Step; 7] = [
    Step::Lock,
    Step::Dismount,
    Step::Drain,
    Step::RemoveLinks,
    Step::ReferenceCheck,
    Step::DeleteDevice,
    Step::Release,
];

/// How often a forced dismount sends FSCTL_DISMOUNT_VOLUME at most before it goes on regardless
/// (VeraCrypt 1.26 retries up to 200 times, 100 ms apart: at most about 20 s).
pub const DISMOUNT_ATTEMPTS: u32 = 200;
/// The wait between two forced FSCTL_DISMOUNT_VOLUME attempts.
pub const RETRY_INTERVAL_MS: u32 = 100;

/// True when `status` says the filesystem let go of the volume.
fn dismounted(status: Result<(), Status>) -> bool {
    match status {
        Ok(()) => true,
        Err(s) => s == VOLUME_DISMOUNTED,
    }
}

/// True when another FSCTL_DISMOUNT_VOLUME may help: one was asked for and the filesystem has
/// not let go yet. Not asked for (`None`: nothing mounted), there is nothing to wait for.
fn worth_retrying(status: Option<Result<(), Status>>) -> bool {
    matches!(status, Some(s) if !dismounted(s))
}

/// W3: after this dismount the driver must not unload again this boot. A file system may
/// keep the deleted volume device referenced after its dismount (NTFS does on a writable
/// volume from Windows 7 on, which VeraCrypt 1.26 recognises by FSCTL_GET_NTFS_VOLUME_DATA;
/// FAT, exFAT or ReFS may too), and a forced dismount whose lock failed leaves the files'
/// handles (and their references) behind; with the device referenced, `sc stop` would only
/// defer the unload and mark every device unload-pending, the control device included, so no
/// later open of `\\.\vcdirect` would succeed until reboot. Decided from the device's own
/// reference state (`referenced`: anything but the sequence's handle holds it just before
/// its deletion), not from the file system's kind.
pub fn keeps_driver(referenced: bool, forced: bool, lock: Result<(), Status>) -> bool {
    referenced || (forced && lock.is_err())
}

/// Dismounts: lock; if the lock fails and `force` is not
/// set, [`IN_USE`] and nothing changed (the volume keeps serving). Otherwise dismount the
/// filesystem (a forced request sends it even when the lock failed, as VeraCrypt does), then
/// drain, remove the links, ask whether anything else holds the device, latch the driver when
/// [`keeps_driver`] says so, delete the device
/// and only then close the handle. A non-forced dismount the filesystem refuses is [`IN_USE`]
/// too. Without a handle and with nothing mounted, the dismount is not asked for (`None`): a
/// forced sequence goes on at once, and its failed lock latches nothing by itself; the mount
/// check is made again once the links are gone, and a file system found then latches the
/// driver (it holds the device). The handle (and its lock) stays open until the device is deleted, so nothing (Explorer,
/// an antivirus) can open the drained volume and mount RAW on it in between; after the
/// deletion no new open reaches the device, and closing a handle to a deleted device is legal.
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
    let mut dismount =
        (above.has_handle() || above.file_system_mounted()).then(|| above.dismount());
    if !dismount.is_some_and(dismounted) && !force {
        above.release();
        return Err(IN_USE);
    }
    // Forced: the filesystem may still be busy letting go; ask again, bounded, until it
    // dismounted (or says it already is).
    let mut attempts = 1;
    while worth_retrying(dismount) && attempts < DISMOUNT_ATTEMPTS {
        above.wait_before_retry();
        dismount = Some(above.dismount());
        attempts += 1;
    }
    volume.drain();
    volume.remove_links();
    // Asked for: the device's reference state decides (W3). Not asked for (nothing was
    // mounted at the check): only a file system that an open mounted since, while the links
    // still led to the volume, holds the device.
    let (keeps, referenced) = match dismount {
        Some(_) => {
            let referenced = above.others_hold_device();
            (keeps_driver(referenced, force, lock), referenced)
        }
        None => (above.file_system_mounted(), false),
    };
    if keeps {
        volume.keep_driver_loaded();
    }
    volume.delete_device();
    above.release();
    Ok(Report {
        lock,
        dismount,
        forced: force,
        referenced,
        keeps_driver: keeps,
    })
}

/// How [`undo_failed_publish`] undid a mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undone {
    /// A file system had mounted: the forced sequence ran ([`run_forced`]).
    Forced(Report),
    /// Nothing was mounted: drained and deleted without opening the volume. `late_mount`: a
    /// file system mounted after the first check (an open in between), found by the second
    /// one after the drain; it keeps the deleted device referenced, so the driver was latched.
    Plain {
        /// A file system was found mounted after the drain.
        late_mount: bool,
    },
}

/// Undoes a mount whose device was published but whose links could not all be made (W1, W6):
/// the links go first (so nothing new finds the volume by name, and the mount manager is
/// told it is gone), then, only if a file system mounted meanwhile, the forced sequence;
/// otherwise the volume is drained and its device deleted without opening it (an open would
/// mount a file system just to dismount it, and under lasting memory pressure its failure
/// would latch the driver for nothing). The mount check is made again after the drain: a
/// file system that an open mounted in between holds the device, so the driver stays loaded
/// ([`Teardown::keep_driver_loaded`], W3) rather than have a later unload wait forever.
pub fn undo_failed_publish<A, T>(above: &mut A, volume: &T) -> Undone
where
    A: VolumeAbove + ?Sized,
    T: Teardown + ?Sized,
{
    volume.remove_links();
    if above.file_system_mounted() {
        return Undone::Forced(run_forced(above, volume));
    }
    volume.drain();
    let late_mount = above.file_system_mounted();
    if late_mount {
        volume.keep_driver_loaded();
    }
    volume.delete_device();
    above.release();
    Undone::Plain { late_mount }
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
            referenced: false,
            keeps_driver: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;
    use core::cell::RefCell;

    /// Records every step; the filesystem answers with the statuses given.
    struct Recorder {
        steps: RefCell<Vec<Step>>,
        lock: Result<(), Status>,
        dismount: Result<(), Status>,
        /// What the reference check answers.
        referenced: bool,
        /// Dismount attempts refused before `dismount` answers.
        busy_dismounts: core::cell::Cell<u32>,
        /// The volume can be opened (false: every open fails, for lack of memory).
        opens: bool,
        /// What the mount checks answer, in turn (the last one from then on).
        mounted: RefCell<Vec<bool>>,
    }

    impl Recorder {
        fn new(lock: Result<(), Status>, dismount: Result<(), Status>) -> Self {
            Recorder {
                steps: RefCell::new(Vec::new()),
                lock,
                dismount,
                referenced: false,
                busy_dismounts: core::cell::Cell::new(0),
                opens: true,
                mounted: RefCell::new(Vec::new()),
            }
        }
        fn steps(&self) -> Vec<Step> {
            self.steps.borrow().clone()
        }
    }

    struct Above<'a>(&'a Recorder);

    impl VolumeAbove for Above<'_> {
        fn wait_before_retry(&mut self) {
            self.0.steps.borrow_mut().push(Step::Wait);
        }
        fn others_hold_device(&mut self) -> bool {
            self.0.steps.borrow_mut().push(Step::ReferenceCheck);
            self.0.referenced
        }
        fn lock(&mut self) -> Result<(), Status> {
            self.0.steps.borrow_mut().push(Step::Lock);
            self.0.lock
        }
        fn file_system_mounted(&mut self) -> bool {
            self.0.steps.borrow_mut().push(Step::MountCheck);
            let mut mounted = self.0.mounted.borrow_mut();
            if mounted.len() > 1 {
                mounted.remove(0)
            } else {
                mounted.first().copied().unwrap_or(true)
            }
        }
        fn has_handle(&self) -> bool {
            self.0.opens
        }
        fn dismount(&mut self) -> Result<(), Status> {
            self.0.steps.borrow_mut().push(Step::Dismount);
            if !self.0.opens {
                return Err(Status::InsufficientResources);
            }
            let busy = self.0.busy_dismounts.get();
            if busy > 0 {
                self.0.busy_dismounts.set(busy - 1);
                return Err(DENIED);
            }
            self.0.dismount
        }
        fn release(&mut self) {
            self.0.steps.borrow_mut().push(Step::Release);
        }
    }

    impl Teardown for Recorder {
        fn keep_driver_loaded(&self) {
            self.steps.borrow_mut().push(Step::KeepDriverLoaded);
        }
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

    /// [`ORDER`] with the unload latched before the device is deleted.
    fn order_keeping_driver() -> Vec<Step> {
        let mut order = ORDER.to_vec();
        let at = order.iter().position(|s| *s == Step::DeleteDevice).unwrap();
        order.insert(at, Step::KeepDriverLoaded);
        order
    }

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
        assert_eq!(r.steps(), order_keeping_driver());
        assert!(report.keeps_driver);
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
        let r = Recorder::new(Err(DENIED), Err(VOLUME_DISMOUNTED));
        let report = run_forced(&mut Above(&r), &r);
        assert_eq!(r.steps(), order_keeping_driver());
        assert!(report.forced);
    }

    #[test]
    fn w3_latch_follows_the_devices_reference_state_not_the_file_system() {
        // (something else holds the device, forced, lock result) -> latched. No file system
        // kind is asked: a FAT, exFAT or ReFS that keeps the device referenced latches like
        // NTFS did.
        let table: &[(bool, bool, Result<(), Status>, bool)] = &[
            (true, false, Ok(()), true),
            (true, true, Ok(()), true),
            (false, false, Ok(()), false),
            (false, true, Ok(()), false),
            (false, true, Err(DENIED), true),
            (true, true, Err(DENIED), true),
        ];
        for &(referenced, force, lock, latched) in table {
            let mut r = Recorder::new(lock, Ok(()));
            r.referenced = referenced;
            let report = run(&mut Above(&r), &r, force).unwrap();
            assert_eq!(
                report.keeps_driver, latched,
                "referenced {referenced}, forced {force}, lock {lock:?}"
            );
            assert_eq!(report.referenced, referenced);
            let want = if latched {
                order_keeping_driver()
            } else {
                ORDER.to_vec()
            };
            assert_eq!(r.steps(), want);
            assert_eq!(keeps_driver(referenced, force, lock), latched);
        }
    }

    #[test]
    fn w1_refused_dismount_latches_nothing() {
        let mut r = Recorder::new(Err(DENIED), Ok(()));
        r.referenced = true;
        assert_eq!(run(&mut Above(&r), &r, false), Err(IN_USE));
        assert!(!r.steps().contains(&Step::KeepDriverLoaded));
    }

    #[test]
    fn w1_forced_dismount_retries_the_filesystem_dismount_bounded() {
        // Busy twice, then dismounted: two waits, three attempts, then the sequence goes on.
        let r = Recorder::new(Ok(()), Ok(()));
        r.busy_dismounts.set(2);
        let report = run(&mut Above(&r), &r, true).unwrap();
        assert_eq!(report.dismount, Some(Ok(())));
        let steps = r.steps();
        assert_eq!(steps.iter().filter(|s| **s == Step::Dismount).count(), 3);
        assert_eq!(steps.iter().filter(|s| **s == Step::Wait).count(), 2);
        assert_eq!(steps.last(), Some(&Step::Release));
        // Never lets go: exactly DISMOUNT_ATTEMPTS attempts, then the volume goes all the same.
        let r = Recorder::new(Ok(()), Err(DENIED));
        let report = run(&mut Above(&r), &r, true).unwrap();
        assert_eq!(report.dismount, Some(Err(DENIED)));
        let steps = r.steps();
        let n = steps.iter().filter(|s| **s == Step::Dismount).count();
        assert_eq!(n, DISMOUNT_ATTEMPTS as usize);
        assert!(steps.contains(&Step::DeleteDevice));
        // Not forced: one attempt, no wait.
        let r = Recorder::new(Ok(()), Ok(()));
        r.busy_dismounts.set(1);
        assert_eq!(run(&mut Above(&r), &r, false), Err(IN_USE));
        assert!(!r.steps().contains(&Step::Wait));
    }

    #[test]
    fn w1_nothing_to_dismount_is_not_retried() {
        // The open fails (lack of memory) and nothing is mounted: forced, the sequence opens
        // nothing more, sends nothing, waits for nothing and goes on at once; still nothing
        // mounted once the links are gone, so nothing is latched.
        let mut r = Recorder::new(Err(Status::InsufficientResources), Ok(()));
        r.opens = false;
        *r.mounted.borrow_mut() = vec![false];
        let report = run(&mut Above(&r), &r, true).unwrap();
        assert_eq!(report.dismount, None);
        assert!(!report.keeps_driver);
        let unasked = |late: bool| {
            let mut want = ORDER.to_vec();
            for step in [Step::Dismount, Step::ReferenceCheck] {
                let at = want.iter().position(|s| *s == step).unwrap();
                want[at] = Step::MountCheck;
            }
            if late {
                let at = want.iter().position(|s| *s == Step::DeleteDevice).unwrap();
                want.insert(at, Step::KeepDriverLoaded);
            }
            want
        };
        assert_eq!(r.steps(), unasked(false));
        // A file system an open mounted after the check (while the links still led to the
        // volume) holds the device: latched (W3).
        let mut r = Recorder::new(Err(Status::InsufficientResources), Ok(()));
        r.opens = false;
        *r.mounted.borrow_mut() = vec![false, true];
        let report = run(&mut Above(&r), &r, true).unwrap();
        assert_eq!(report.dismount, None);
        assert!(report.keeps_driver);
        assert_eq!(r.steps(), unasked(true));
        // Not forced: in use, nothing changed.
        let mut r = Recorder::new(Err(Status::InsufficientResources), Ok(()));
        r.opens = false;
        assert_eq!(run(&mut Above(&r), &r, false), Err(IN_USE));
        assert_eq!(r.steps(), [Step::Lock, Step::Release]);
    }

    #[test]
    fn w1_a_mounted_file_system_is_asked_again_when_the_open_fails() {
        // The open fails while a file system is mounted: every attempt opens again (a failed
        // open is a failed dismount), bounded, then the volume goes and the driver is latched.
        let mut r = Recorder::new(Err(Status::InsufficientResources), Ok(()));
        r.opens = false;
        *r.mounted.borrow_mut() = vec![true];
        let report = run(&mut Above(&r), &r, true).unwrap();
        assert_eq!(report.dismount, Some(Err(Status::InsufficientResources)));
        assert!(report.keeps_driver);
        let steps = r.steps();
        let n = steps.iter().filter(|s| **s == Step::Dismount).count();
        assert_eq!(n, DISMOUNT_ATTEMPTS as usize);
        assert_eq!(steps.iter().filter(|s| **s == Step::MountCheck).count(), 1);
        assert!(steps.ends_with(&[
            Step::Drain,
            Step::RemoveLinks,
            Step::ReferenceCheck,
            Step::KeepDriverLoaded,
            Step::DeleteDevice,
            Step::Release
        ]));
    }

    /// The steps of an undo that found nothing mounted; `late`: the second check found one.
    fn plain_undo(late: bool) -> Vec<Step> {
        let mut steps = vec![
            Step::RemoveLinks,
            Step::MountCheck,
            Step::Drain,
            Step::MountCheck,
        ];
        if late {
            steps.push(Step::KeepDriverLoaded);
        }
        steps.extend([Step::DeleteDevice, Step::Release]);
        steps
    }

    #[test]
    fn w6_failed_publish_with_nothing_mounted_opens_nothing() {
        let r = Recorder::new(Ok(()), Ok(()));
        *r.mounted.borrow_mut() = vec![false];
        let undone = undo_failed_publish(&mut Above(&r), &r);
        assert_eq!(undone, Undone::Plain { late_mount: false });
        assert_eq!(r.steps(), plain_undo(false));
    }

    #[test]
    fn w6_failed_publish_with_a_file_system_runs_the_forced_sequence() {
        let r = Recorder::new(Err(DENIED), Ok(()));
        *r.mounted.borrow_mut() = vec![true];
        let Undone::Forced(report) = undo_failed_publish(&mut Above(&r), &r) else {
            panic!("a mounted file system must be dismounted");
        };
        assert!(report.forced && report.keeps_driver);
        // The links go before the check; the forced sequence's own links step finds none.
        let mut want = vec![Step::RemoveLinks, Step::MountCheck];
        want.extend(order_keeping_driver());
        assert_eq!(r.steps(), want);
    }

    #[test]
    fn w3_a_file_system_mounted_after_the_check_keeps_the_driver_loaded() {
        let r = Recorder::new(Ok(()), Ok(()));
        *r.mounted.borrow_mut() = vec![false, true];
        let undone = undo_failed_publish(&mut Above(&r), &r);
        assert_eq!(undone, Undone::Plain { late_mount: true });
        assert_eq!(r.steps(), plain_undo(true));
    }
}
