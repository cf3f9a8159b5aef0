//! W6: allocation-failure injection. Every fallible allocation of a mount fails in turn: the
//! control IOCTL's (the request's copy, the parsed host path and Wine driver name: the real
//! `abi::buffer::serve` and `MountRequest::parse`), the engine's (its tables and buffers, its
//! boxes and `Arc`s through `Platform::try_box`/`try_arc`, thread bodies included, the
//! platform's work items) and the names' (`VolumeNames::new`, `Links::prepare`: every link
//! name and record made before the device is published): the mount fails with
//! STATUS_INSUFFICIENT_RESOURCES, nothing panics, no engine thread is left running, no link
//! is left in the namespace, the request buffer is wiped, and the next mount serves. A mounted volume asks no fallible allocation at all while it serves
//! requests (there is none on the request path), and the data written is read back.
//!
//! One test: the check that serving asks nothing counts every thread's allocations.

mod common;

use std::cell::RefCell;
use std::collections::BTreeMap;

use common::*;
use vcdirect::abi::buffer::{serve, Answer};
use vcdirect::abi::{MasterKey, MountReply, MountRequest};
use vcdirect::faults::{allocations_seen, allocations_seen_by_all, fail_allocation_at};
use vcdirect::namespace::{
    Directories, Links, MountManager, Namespace, UniqueId, VolumeNames, OBJECT_NAME_COLLISION,
};
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::std_platform::StdPlatform;

/// A flat object namespace (links only), enough for the links of one mount.
#[derive(Default)]
struct Objects(RefCell<BTreeMap<Vec<u16>, Vec<u16>>>);

impl Namespace for Objects {
    fn query(&self, path: &[u16]) -> Result<Option<Vec<u16>>, Status> {
        Ok(self.0.borrow().get(path).cloned())
    }
    fn create(&self, path: &[u16], target: &[u16]) -> Result<(), Status> {
        match self.0.borrow_mut().entry(path.to_vec()) {
            std::collections::btree_map::Entry::Occupied(_) => Err(OBJECT_NAME_COLLISION),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(target.to_vec());
                Ok(())
            }
        }
    }
    fn delete(&self, path: &[u16]) -> Result<(), Status> {
        self.0.borrow_mut().remove(path);
        Ok(())
    }
}

/// No mount manager: the letter becomes an explicit global link.
struct NoMountManager;

impl MountManager for NoMountManager {
    fn volume_arrival(&self, _: &[u16]) -> Result<(), Status> {
        Err(Status::DeviceNotReady)
    }
    fn create_point(&self, _: &[u16], _: &[u16]) -> Result<(), Status> {
        Err(Status::DeviceNotReady)
    }
    fn delete_point(&self, _: &[u16]) -> Result<(), Status> {
        Ok(())
    }
    fn volume_removal(&self, _: &[u16]) -> Result<(), Status> {
        Ok(())
    }
}

/// A mount as the glue's control IOCTL makes it, with the real ABI and namespace code and the
/// engine on the std platform: the buffered request served (`serve`: copied, wiped), parsed,
/// the volume mounted, its names and its links' names and records prepared before the
/// device would be published, then the links. Mounts on this thread (the injection is per
/// thread: `fail_at` is armed once the request's bytes are built, 0 for none) on a platform
/// of its own (direct reads and writes, so every buffer kind is made); returns the result,
/// the engine threads alive once it returned, whether the request buffer was wiped and the
/// links left in the namespace.
fn mount(fail_at: u64) -> (Result<Vol, Status>, usize, bool, usize) {
    mount_of(vcdirect::crypto::AES, fail_at)
}

/// [`mount`] of a volume of `algorithm` (the test key area).
fn mount_of(
    algorithm: vcdirect::crypto::Algorithm,
    fail_at: u64,
) -> (Result<Vol, Status>, usize, bool, usize) {
    let mut p = params(4 * MIB, BOTH_ON);
    p.algorithm = algorithm;
    let request = MountRequest {
        flags: 0,
        sector_size: p.sector_size,
        data_offset: p.data_offset,
        data_size: p.data_size,
        protected_range: (0, 0),
        drive_letter: Some('V'),
        algorithm,
        key: MasterKey::try_new(&key_area()[..algorithm.key_len()]).unwrap(),
        host_path: "\\??\\Harddisk1Partition1".encode_utf16().collect(),
        wine_host_driver_name: Vec::new(),
    };
    let mut buf = request.build().expect("request").to_vec();
    let host = host_for(&p);
    let platform: Plat = StdPlatform::new(0);
    let probe = platform.clone();
    let objects = Objects::default();
    let mut mounted = None;
    // Counted from here: what the driver does with the request.
    fail_allocation_at(fail_at);
    let len = buf.len();
    let (status, _) = serve(&mut buf, len, MountReply::SIZE, |input, _| {
        let request = MountRequest::parse(input, false).map_err(|e| e.status())?;
        let volume = Volume::mount(platform, host, &request.key, p)?;
        let names = VolumeNames::new(7, request.drive_letter, UniqueId::new([7; 16]));
        let prepared = match names.and_then(|n| Links::prepare(&Directories::WINDOWS, &n)) {
            Ok(prepared) => prepared,
            Err(status) => {
                volume.dismount();
                return Err(status);
            }
        };
        // What comes after publish: the kernel's link calls (none of this crate's allocations).
        let seen = allocations_seen();
        let links = prepared.establish(&objects, Some(&NoMountManager));
        assert_eq!(allocations_seen(), seen, "establish allocates nothing");
        if let Err(status) = links {
            volume.dismount();
            return Err(status);
        }
        mounted = Some(volume);
        Ok(Answer::Small(
            MountReply {
                volume_id: 7,
                drive_letter: request.drive_letter,
            }
            .build(),
        ))
    });
    let wiped = buf[MountReply::SIZE..].iter().all(|b| *b == 0);
    let links = objects.0.borrow().len();
    let result = match status {
        Status::Success => Ok(mounted.expect("mounted on success")),
        status => {
            assert!(mounted.is_none());
            Err(status)
        }
    };
    (result, probe.engine_threads_alive(), wiped, links)
}

#[test]
fn w6_each_failed_allocation_fails_the_mount_cleanly_and_serving_asks_none() {
    // How many fallible allocations a mount makes.
    let (vol, _, wiped, links) = mount(0);
    let sites = allocations_seen();
    assert!(wiped, "the request buffer holds only the reply");
    assert_eq!(links, 2, "VcVolume7 and V:");
    vol.expect("mount without a fault").dismount();
    // The request's copy and its two parsed strings (3); the engine's tables and buffers (24
    // sites), and since every box and shared value of a mount is fallible too, its `Arc`s
    // (volume, paths, context, key, counters, completion stage), queues and the 12 thread
    // bodies, and its 13 events and semaphores (KEVENT/KSEMAPHORE in pool memory in the
    // kernel: rundowns, queues, permits) (61); the names (device, `\DosDevices\V:`: 2) and
    // the links' names and records (6): 72 on this mount (61 before the control path's).
    assert!(
        sites >= 72,
        "a mount allocates its request, tables, buffers, shared values, thread bodies, events, semaphores and names fallibly ({sites})"
    );

    for n in 1..=sites {
        let (result, alive, wiped, links) = mount(n);
        assert_eq!(
            result.err(),
            Some(Status::InsufficientResources),
            "allocation {n} of {sites} failed: the mount fails with that status"
        );
        assert_eq!(
            alive, 0,
            "allocation {n} failed: engine threads left running"
        );
        assert!(wiped, "allocation {n} failed: the request buffer not wiped");
        assert_eq!(links, 0, "allocation {n} failed: a link was made");
    }

    // A three-cipher cascade's mount (extended request, 192-byte key): its two non-AES
    // stages' schedule blocks are two more sites, and each failing site fails it cleanly too.
    let cascade = vcdirect::crypto::ALGORITHMS[6];
    let (vol, _, wiped, _) = mount_of(cascade, 0);
    let cascade_sites = allocations_seen();
    assert!(wiped);
    vol.expect("a cascade mount without a fault").dismount();
    assert_eq!(
        cascade_sites,
        sites + 2,
        "the Twofish and Serpent stages' schedule blocks"
    );
    for n in 1..=cascade_sites {
        let (result, alive, wiped, links) = mount_of(cascade, n);
        assert_eq!(
            result.err(),
            Some(Status::InsufficientResources),
            "cascade: allocation {n} of {cascade_sites} failed: the mount fails with that status"
        );
        assert_eq!(
            alive, 0,
            "cascade: allocation {n}: engine threads left running"
        );
        assert!(
            wiped,
            "cascade: allocation {n}: the request buffer not wiped"
        );
        assert_eq!(links, 0, "cascade: allocation {n}: a link was made");
    }

    // A mount that succeeds, then serves.
    let (vol, _, _, _) = mount(0);
    let vol = vol.expect("the next mount serves");
    let seen_before = allocations_seen_by_all();
    let data = pattern(6, 256 * 1024);
    let mut pending = Vec::new();
    for i in 0..8u64 {
        pending.push(submit_write(&vol, i * 256 * 1024, &data));
    }
    for rx in &pending {
        let c = wait(rx);
        assert_eq!(c.status, Status::Success);
    }
    let flushed = wait(&submit(&vol, |done| {
        vcdirect_usermode::request::TestRequest::flush(done)
    }));
    assert_eq!(flushed.status, Status::Success);
    for i in 0..8u64 {
        let (status, n, bytes) = read(&vol, i * 256 * 1024, 256 * 1024);
        assert_eq!((status, n), (Status::Success, 256 * 1024));
        assert!(bytes == data, "data written is read back");
    }
    assert_eq!(
        allocations_seen_by_all(),
        seen_before,
        "serving requests asks no fallible allocation"
    );
    vol.dismount();
}
