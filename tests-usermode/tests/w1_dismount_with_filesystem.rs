//! docs/review.md W1 in the user-mode host: a filesystem stand-in (`fs_above`) mounted on the
//! volume keeps dirty data, writes it on lock and dismount, refuses the lock while files are
//! open and keeps writing until dismounted; the engine's dismount sequence
//! (`vcdirect::dismount::run`) runs against it with real threads, across seeds.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vcdirect::dismount::{self, Step, IN_USE, ORDER};
use vcdirect_usermode::fs_above::{
    check_nothing_lost, FsAbove, ModelDevice, Phase, Unaware, FILES_OPEN, SECTOR,
};

/// Sectors the filesystem uses.
const FS_SECTORS: u64 = 256;

#[derive(Clone, Copy, Debug)]
enum Case {
    /// Files open: a dismount is refused and the volume keeps serving; then files close and
    /// a dismount goes through.
    RefusedThenClean,
    /// Files open, `--force`.
    Forced,
    /// Files closed first.
    Clean,
}

/// Reads every sector the filesystem wrote from a volume remounted on the same medium.
fn remount_and_check(fs: &FsAbove<Plat>, medium: ProbeHost) -> Vec<String> {
    let vol = mount(medium, params(MIB, BOTH_OFF));
    let v = check_nothing_lost(fs, |sector| {
        let (status, _, bytes) = read(&vol, sector * SECTOR, SECTOR as u32);
        assert!(status.is_success(), "read after remount: {status:?}");
        bytes
    });
    vol.dismount();
    v
}

fn scenario(seed: u64, case: Case) {
    let mut rng = StdRng::seed_from_u64(seed);
    let gates = if rng.gen_bool(0.5) { BOTH_ON } else { BOTH_OFF };
    let p = params(MIB, gates);
    let host = host_for(&p);
    let medium = host.clone();
    let vol = mount(host, p);
    let device = ModelDevice::new(Arc::clone(&vol));
    let fs = FsAbove::new(Arc::clone(&device), FS_SECTORS);
    // Applications write into the cache, the lazy writer writes some of it out, both until
    // the filesystem is dismounted.
    let mut workers = Vec::new();
    for (i, role) in ["app", "lazy-writer"].into_iter().enumerate() {
        let fs = Arc::clone(&fs);
        let mut rng = StdRng::seed_from_u64(seed ^ ((i as u64 + 1) * 0x9E37));
        workers.push(std::thread::spawn(move || {
            while fs.phase() != Phase::Dismounted {
                if role == "app" {
                    fs.app_write(rng.gen_range(0..FS_SECTORS));
                } else {
                    fs.lazy_write(rng.gen_range(1..4));
                }
                std::thread::sleep(Duration::from_micros(rng.gen_range(0..300)));
            }
        }));
    }
    wait_for("the filesystem wrote to the volume", || {
        fs.device_writes() >= 5 && fs.dirty() > 0
    });
    let report = match case {
        Case::RefusedThenClean => {
            let refused = dismount::run(&mut fs.handle(), &*device, false);
            assert_eq!(refused, Err(IN_USE), "seed {seed}: files open, not forced");
            assert_eq!(device.steps(), [Step::Lock, Step::Release]);
            assert!(!vol.is_dismounted() && !device.is_deleted() && device.has_links());
            assert_eq!(fs.phase(), Phase::Mounted);
            // The volume keeps serving the filesystem.
            let before = fs.device_writes();
            wait_for("writes after the refusal", || {
                fs.device_writes() > before + 3
            });
            fs.set_open_files(false);
            let report = dismount::run(&mut fs.handle(), &*device, false).expect("clean");
            assert_eq!(device.steps()[2..], ORDER, "seed {seed}");
            assert!(!device.kept_driver(), "seed {seed}: nothing stays behind");
            report
        }
        Case::Forced => {
            let report = dismount::run(&mut fs.handle(), &*device, true).expect("forced");
            assert_eq!(report.lock, Err(FILES_OPEN), "seed {seed}: files were open");
            assert_eq!(device.steps(), ORDER, "seed {seed}");
            // W3: the files' handles keep the deleted device referenced.
            assert!(report.keeps_driver && device.kept_driver(), "seed {seed}");
            report
        }
        Case::Clean => {
            fs.set_open_files(false);
            let report = dismount::run(&mut fs.handle(), &*device, false).expect("clean");
            assert_eq!(report.lock, Ok(()));
            assert_eq!(device.steps(), ORDER, "seed {seed}");
            report
        }
    };
    assert_eq!(report.dismount, Some(Ok(())));
    for w in workers {
        w.join().unwrap();
    }
    assert!(vol.is_dismounted() && device.is_deleted() && !device.has_links());
    assert_eq!(
        fs.dirty(),
        0,
        "seed {seed} {case:?}: dirty data left in the cache"
    );
    let violations = remount_and_check(&fs, medium);
    assert!(
        violations.is_empty(),
        "seed {seed} {case:?}: {violations:?}"
    );
}

#[test]
fn w1_dismount_with_files_open_is_refused_and_the_volume_keeps_serving() {
    for seed in 0..8 {
        with_watchdog(WAIT, "refused then clean dismount", move || {
            scenario(seed, Case::RefusedThenClean)
        });
    }
}

#[test]
fn w1_forced_dismount_loses_none_of_the_filesystems_writes() {
    for seed in 100..108 {
        with_watchdog(WAIT, "forced dismount", move || {
            scenario(seed, Case::Forced)
        });
    }
}

#[test]
fn w1_clean_dismount_loses_none_of_the_filesystems_writes() {
    for seed in 200..208 {
        with_watchdog(WAIT, "clean dismount", move || scenario(seed, Case::Clean));
    }
}

/// The old dismount, which never told the filesystem: its checks fail (dirty data lost, a
/// lazy write reaching the deleted device), so the checks above can fail.
#[test]
fn w1_checks_catch_a_dismount_that_skips_the_filesystem() {
    let p = params(MIB, BOTH_OFF);
    let host = host_for(&p);
    let medium = host.clone();
    let vol = mount(host, p);
    let device = ModelDevice::new(Arc::clone(&vol));
    let fs = FsAbove::new(Arc::clone(&device), FS_SECTORS);
    for s in 0..20 {
        assert!(fs.app_write(s));
    }
    assert_eq!(fs.lazy_write(5), 5);
    dismount::run(&mut Unaware, &*device, false).expect("the old sequence goes through");
    // The filesystem still believes itself mounted: its lazy writer goes on.
    assert_eq!(fs.lazy_write(5), 0);
    let violations = remount_and_check(&fs, medium);
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert!(violations[0].contains("reached the deleted device"));
    assert!(violations[1].contains("15 filesystem writes lost"));
}
