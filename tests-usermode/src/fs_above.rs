//! docs/review.md W1: a "filesystem above" the volume and the volume device below it, for the
//! user-mode host and the simulator, driven through the engine's real dismount sequence
//! (`vcdirect::dismount::run`).
//!
//! The filesystem stand-in behaves as NTFS does towards a dismount: applications write into its
//! cache while files are open (dirty data), a lazy writer writes dirty sectors to the volume
//! now and then, FSCTL_LOCK_VOLUME fails with STATUS_ACCESS_DENIED while files are open and
//! otherwise writes every dirty sector first, FSCTL_DISMOUNT_VOLUME writes what is left and
//! lets go of the volume (open files are then invalid: their writes fail in the filesystem,
//! never reaching the device). Until it is dismounted it keeps writing.
//!
//! The device stand-in ([`ModelDevice`]) is the glue's half: its [`Teardown`] drains the
//! engine's volume, removes the links and deletes the device; a write that reaches it once
//! deleted is counted (on Windows it would be lost data).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use vcdirect::dismount::{Step, Teardown, VolumeAbove};
use vcdirect::platform::{Event, Lock, Platform, Semaphore};
use vcdirect::volume::Volume;
use vcdirect::Status;

use crate::request::{Completion, TestRequest};

/// STATUS_ACCESS_DENIED: NTFS's answer to FSCTL_LOCK_VOLUME while files are open.
pub const FILES_OPEN: Status = Status::Host(0xC000_0022);
/// The filesystem's block: one volume sector.
pub const SECTOR: u64 = 512;

/// What a sector written by the filesystem holds: its sector number and the version the
/// application wrote, so a sector read back says which write it came from.
pub fn sector_bytes(sector: u64, version: u32) -> Vec<u8> {
    let mut b = vec![(version as u8) ^ (sector as u8) ^ 0x3c; SECTOR as usize];
    b[..8].copy_from_slice(&sector.to_le_bytes());
    b[8..12].copy_from_slice(&version.to_le_bytes());
    b
}

/// The version a sector holds, if it holds one the filesystem wrote for `sector`.
pub fn sector_version(sector: u64, bytes: &[u8]) -> Option<u32> {
    let version = u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?);
    (bytes == sector_bytes(sector, version).as_slice()).then_some(version)
}

/// The volume device below the filesystem (the glue's half of a dismount).
pub struct ModelDevice<P: Platform<Request = TestRequest>> {
    volume: Arc<Volume<P>>,
    deleted: AtomicBool,
    links: AtomicBool,
    late_writes: AtomicU32,
    steps: StdMutex<Vec<Step>>,
    /// The sequence latched "unload disabled" (W3), kept apart from `steps`.
    kept_driver: AtomicBool,
}

impl<P: Platform<Request = TestRequest>> ModelDevice<P> {
    /// The device of a mounted `volume`, with its links.
    pub fn new(volume: Arc<Volume<P>>) -> Arc<Self> {
        Arc::new(ModelDevice {
            volume,
            deleted: AtomicBool::new(false),
            links: AtomicBool::new(true),
            late_writes: AtomicU32::new(0),
            steps: StdMutex::new(Vec::new()),
            kept_driver: AtomicBool::new(false),
        })
    }

    /// The engine's volume.
    pub fn volume(&self) -> &Arc<Volume<P>> {
        &self.volume
    }

    /// True once the device was deleted.
    pub fn is_deleted(&self) -> bool {
        self.deleted.load(Ordering::Acquire)
    }

    /// True while the links exist.
    pub fn has_links(&self) -> bool {
        self.links.load(Ordering::Acquire)
    }

    /// Writes that reached the device after it was deleted.
    pub fn late_writes(&self) -> u32 {
        self.late_writes.load(Ordering::Acquire)
    }

    /// True once the sequence latched "unload disabled" (W3: a forced dismount whose lock
    /// failed; the model filesystem is not NTFS).
    pub fn kept_driver(&self) -> bool {
        self.kept_driver.load(Ordering::Acquire)
    }

    /// The steps of the sequence as the device and the filesystem saw them, in order.
    pub fn steps(&self) -> Vec<Step> {
        self.steps.lock().unwrap().clone()
    }

    fn step(&self, s: Step) {
        self.steps.lock().unwrap().push(s);
    }

    /// Writes one sector through the volume and waits for it; a deleted device refuses it
    /// (STATUS_DELETE_PENDING, as the glue's remove lock does) and counts it.
    pub fn write_sector(&self, sector: u64, data: &[u8]) -> Status {
        if self.is_deleted() {
            self.late_writes.fetch_add(1, Ordering::AcqRel);
            return Status::Host(0xC000_0056);
        }
        let done = match P::Event::new() {
            Ok(event) => Arc::new(event),
            Err(status) => return status,
        };
        let result = Arc::new(StdMutex::new(None));
        let (d, r) = (Arc::clone(&done), Arc::clone(&result));
        let req = TestRequest::write(sector * SECTOR, data, move |c: Completion| {
            *r.lock().unwrap() = Some(c.status);
            d.set();
        });
        crate::irql::dispatch(&self.volume, req);
        done.wait();
        let status = result.lock().unwrap().take();
        status.unwrap_or(Status::IoDeviceError)
    }
}

impl<P: Platform<Request = TestRequest>> Teardown for ModelDevice<P> {
    fn keep_driver_loaded(&self) {
        self.kept_driver.store(true, Ordering::Release);
    }
    fn drain(&self) {
        self.step(Step::Drain);
        self.volume.dismount();
    }
    fn remove_links(&self) {
        self.step(Step::RemoveLinks);
        self.links.store(false, Ordering::Release);
    }
    fn delete_device(&self) {
        self.step(Step::DeleteDevice);
        self.deleted.store(true, Ordering::Release);
    }
}

/// Where the filesystem is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Mounted: applications write, the lazy writer writes.
    Mounted,
    /// Locked by the dismount's handle: nothing dirty, nobody else writes.
    Locked,
    /// Dismounted: it never touches the device again.
    Dismounted,
}

struct FsState {
    phase: Phase,
    open_files: bool,
    next_version: u32,
    /// Written by applications, not yet on the volume.
    dirty: BTreeMap<u64, u32>,
    /// The last version applications wrote to each sector (what must be on the medium).
    accepted: BTreeMap<u64, u32>,
    /// Sector writes the volume completed successfully.
    device_writes: u64,
}

/// The filesystem's own lock over its state: a resource taken at PASSIVE_LEVEL (an ERESOURCE
/// in NTFS), since it waits for device writes while holding it. A semaphore of one permit; the
/// state moves out of its slot while held. (A spin lock, the platform's `Lock`, would make
/// those waits happen at DISPATCH_LEVEL: W9 reports them.)
struct Resource<P: Platform, T: Send> {
    held: P::Semaphore,
    slot: P::Lock<Option<T>>,
}

impl<P: Platform, T: Send> Resource<P, T> {
    fn new(value: T) -> Self {
        Resource {
            held: P::Semaphore::new(1).expect("the filesystem's semaphore"),
            slot: P::Lock::new(Some(value)),
        }
    }

    /// Runs `f` holding the resource.
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.held.acquire();
        let mut value = self
            .slot
            .with(Option::take)
            .expect("the resource's holder puts the state back");
        let r = f(&mut value);
        self.slot.with(|slot| *slot = Some(value));
        self.held.release();
        r
    }
}

/// The filesystem stand-in mounted on a [`ModelDevice`].
pub struct FsAbove<P: Platform<Request = TestRequest>> {
    device: Arc<ModelDevice<P>>,
    state: Resource<P, FsState>,
    sectors: u64,
}

impl<P: Platform<Request = TestRequest>> FsAbove<P> {
    /// A filesystem using the first `sectors` sectors of `device`'s volume, with files open.
    pub fn new(device: Arc<ModelDevice<P>>, sectors: u64) -> Arc<Self> {
        Arc::new(FsAbove {
            device,
            state: Resource::new(FsState {
                phase: Phase::Mounted,
                open_files: true,
                next_version: 1,
                dirty: BTreeMap::new(),
                accepted: BTreeMap::new(),
                device_writes: 0,
            }),
            sectors,
        })
    }

    /// The device below.
    pub fn device(&self) -> &Arc<ModelDevice<P>> {
        &self.device
    }

    /// Opens or closes the applications' files.
    pub fn set_open_files(&self, open: bool) {
        self.state.with(|s| s.open_files = open);
    }

    /// Where it is.
    pub fn phase(&self) -> Phase {
        self.state.with(|s| s.phase)
    }

    /// Sector writes the volume completed for it so far.
    pub fn device_writes(&self) -> u64 {
        self.state.with(|s| s.device_writes)
    }

    /// Dirty sectors in its cache.
    pub fn dirty(&self) -> usize {
        self.state.with(|s| s.dirty.len())
    }

    /// The last version applications wrote to each sector.
    pub fn accepted(&self) -> BTreeMap<u64, u32> {
        self.state.with(|s| s.accepted.clone())
    }

    /// An application writes `sector` (into the cache): accepted only while mounted with
    /// files open (a dismounted filesystem fails the write itself).
    pub fn app_write(&self, sector: u64) -> bool {
        let sector = sector % self.sectors;
        self.state.with(|s| {
            if s.phase != Phase::Mounted || !s.open_files {
                return false;
            }
            let v = s.next_version;
            s.next_version += 1;
            s.dirty.insert(sector, v);
            s.accepted.insert(sector, v);
            true
        })
    }

    /// The lazy writer: writes up to `max` dirty sectors (mounted only). Returns how many
    /// it wrote.
    pub fn lazy_write(&self, max: usize) -> usize {
        self.state.with(|s| {
            if s.phase != Phase::Mounted {
                return 0;
            }
            self.write_dirty(s, max)
        })
    }

    /// Writes up to `max` dirty sectors; a failed one stays dirty.
    fn write_dirty(&self, s: &mut FsState, max: usize) -> usize {
        let batch: Vec<(u64, u32)> = s.dirty.iter().take(max).map(|(k, v)| (*k, *v)).collect();
        let mut written = 0;
        for (sector, version) in batch {
            if self
                .device
                .write_sector(sector, &sector_bytes(sector, version))
                .is_success()
            {
                s.dirty.remove(&sector);
                s.device_writes += 1;
                written += 1;
            }
        }
        written
    }

    /// The handle the dismount opens on it.
    pub fn handle(self: &Arc<Self>) -> FsHandle<P> {
        FsHandle(Arc::clone(self))
    }
}

/// The dismount's handle to the volume: what FSCTL_LOCK_VOLUME and FSCTL_DISMOUNT_VOLUME
/// reach.
pub struct FsHandle<P: Platform<Request = TestRequest>>(Arc<FsAbove<P>>);

impl<P: Platform<Request = TestRequest>> VolumeAbove for FsHandle<P> {
    /// The model filesystem lets go of the device at its dismount: nothing else holds it.
    fn others_hold_device(&mut self) -> bool {
        self.0.device.step(Step::ReferenceCheck);
        false
    }
    fn lock(&mut self) -> Result<(), Status> {
        let fs = &self.0;
        fs.device.step(Step::Lock);
        fs.state.with(|s| {
            if s.phase != Phase::Mounted || s.open_files {
                return Err(FILES_OPEN);
            }
            fs.write_dirty(s, usize::MAX);
            if !s.dirty.is_empty() {
                return Err(Status::IoDeviceError);
            }
            s.phase = Phase::Locked;
            Ok(())
        })
    }

    /// Mounted until its dismount (locked included).
    fn file_system_mounted(&mut self) -> bool {
        self.0.state.with(|s| s.phase != Phase::Dismounted)
    }

    /// Always reachable: the model has no open to fail.
    fn has_handle(&self) -> bool {
        true
    }

    fn dismount(&mut self) -> Result<(), Status> {
        let fs = &self.0;
        fs.device.step(Step::Dismount);
        fs.state.with(|s| {
            fs.write_dirty(s, usize::MAX);
            s.phase = Phase::Dismounted;
            Ok(())
        })
    }

    fn wait_before_retry(&mut self) {}

    fn release(&mut self) {
        let fs = &self.0;
        fs.device.step(Step::Release);
        fs.state.with(|s| {
            if s.phase == Phase::Locked {
                s.phase = Phase::Mounted;
            }
        });
    }
}

/// The old dismount (the W1 bug): the sequence never reaches the filesystem, which believes
/// itself mounted; its lazy writer later writes to a deleted device, and its dirty data is
/// lost. The tests run it to show their checks catch that.
pub struct Unaware;

impl VolumeAbove for Unaware {
    fn others_hold_device(&mut self) -> bool {
        false
    }
    fn lock(&mut self) -> Result<(), Status> {
        Ok(())
    }
    fn dismount(&mut self) -> Result<(), Status> {
        Ok(())
    }
    fn has_handle(&self) -> bool {
        true
    }
    fn file_system_mounted(&mut self) -> bool {
        true
    }
    fn wait_before_retry(&mut self) {}
    fn release(&mut self) {}
}

/// W1's checks after a completed dismount: no write reached the deleted device, and every
/// sector applications wrote holds its last version on the medium (`read_sector` reads a
/// sector of a remounted volume, or decrypts the medium).
pub fn check_nothing_lost<P: Platform<Request = TestRequest>>(
    fs: &FsAbove<P>,
    mut read_sector: impl FnMut(u64) -> Vec<u8>,
) -> Vec<String> {
    let mut violations = Vec::new();
    let late = fs.device().late_writes();
    if late != 0 {
        violations.push(format!(
            "W1: {late} filesystem writes reached the deleted device"
        ));
    }
    let mut lost = 0;
    let mut first = None;
    for (sector, version) in fs.accepted() {
        let got = sector_version(sector, &read_sector(sector));
        if got != Some(version) {
            lost += 1;
            first.get_or_insert((sector, version, got));
        }
    }
    if let Some((sector, version, got)) = first {
        violations.push(format!(
            "W1: {lost} filesystem writes lost on the medium (sector {sector}: version {version} written, medium holds {got:?})"
        ));
    }
    violations
}
