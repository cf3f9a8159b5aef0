//! docs/review.md W1 in the simulator: the engine's dismount sequence (`vcdirect::dismount::run`)
//! against a filesystem stand-in (`crate::fs_above`) whose applications and lazy writer are
//! shuttle threads, so each seed is one schedule of the filesystem's writes against the lock,
//! the dismount and the volume's drain. Each seed picks one case: files open and not forced
//! (refused, the volume keeps serving, then files close and it goes through), files open and
//! forced, or files closed first. Checked by `check::filesystem_above`.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use vcdirect::crypto::XtsCipher;
use vcdirect::dismount::{self, IN_USE};
use vcdirect::platform::{HostKind, HostLimits};
use vcdirect::registry::Gates;
use vcdirect::volume::Volume;

use super::check::dismount::check_drained;
use super::check::filesystem_above::{check_completed, check_refused};
use super::host::SimHost;
use super::log::{DATA_OFFSET, DATA_SECTORS, SECTOR};
use super::platform::SimPlatform;
use super::workload::{run_scheduled, SeedReport};
use crate::fs_above::{FsAbove, ModelDevice, Phase};
use crate::mount::mount_params;

/// Sectors the filesystem uses.
const FS_SECTORS: u64 = 128;

/// Runs one seed of the filesystem-above dismount; its report's violations are empty when
/// every W1 invariant held.
pub fn run_fs_seed(seed: u64) -> SeedReport {
    run_scheduled(seed, move || simulate(seed))
}

fn yields(n: u32) {
    for _ in 0..n {
        shuttle::thread::yield_now();
    }
}

fn simulate(seed: u64) -> SeedReport {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut key = [0u8; 64];
    rng.fill(&mut key[..]);
    let cipher = XtsCipher::new(&key);
    let content = vec![0u8; (DATA_OFFSET + DATA_SECTORS * SECTOR + 64 * 1024) as usize];
    let limits = HostLimits {
        sector_size: 512,
        max_transfer: 64 << 10,
        max_physical_pages: 17,
        alignment_mask: 0,
        page_size: 4096,
    };
    let host = SimHost::new(content, limits, HostKind::RawDevice, 8);
    let (read, write) = (rng.gen_bool(0.5), rng.gen_bool(0.5));
    let params = mount_params(DATA_OFFSET, DATA_SECTORS * SECTOR, Gates { read, write });
    let volume = Volume::mount(SimPlatform::default(), host, &key, params).expect("mount");
    let device = ModelDevice::new(Arc::clone(&volume));
    let fs = FsAbove::new(Arc::clone(&device), FS_SECTORS);
    let case = rng.gen_range(0..3);
    let drawn = format!(
        "case={} gates={read}/{write}",
        ["refused-then-clean", "forced", "clean"][case]
    );
    let mut workers = Vec::new();
    for (i, name) in ["app", "lazy-writer"].into_iter().enumerate() {
        let fs = Arc::clone(&fs);
        let mut rng = StdRng::seed_from_u64(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9));
        workers.push(
            shuttle::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    while fs.phase() != Phase::Dismounted {
                        if i == 0 {
                            fs.app_write(rng.gen_range(0..FS_SECTORS));
                        } else {
                            fs.lazy_write(rng.gen_range(1..4));
                        }
                        yields(rng.gen_range(0..20));
                    }
                })
                .unwrap(),
        );
    }
    let mut violations = Vec::new();
    yields(rng.gen_range(100..1500));
    let forced = case == 1;
    if case == 0 {
        match dismount::run(&mut fs.handle(), &*device, false) {
            Err(s) if s == IN_USE => violations.extend(check_refused(&device, &fs)),
            other => violations.push(format!("W1: files open, not forced: {other:?}")),
        }
        // The volume keeps serving the filesystem.
        let before = fs.device_writes();
        while fs.device_writes() < before + 2 && violations.is_empty() {
            shuttle::thread::yield_now();
        }
    }
    if case != 1 {
        fs.set_open_files(false);
        yields(rng.gen_range(0..50));
    }
    match dismount::run(&mut fs.handle(), &*device, forced) {
        Ok(report) if report.dismount == Some(Ok(())) => {}
        other => violations.push(format!("W1: the dismount ({drawn}) returned {other:?}")),
    }
    violations.extend(check_drained(&volume, "after the filesystem's dismount"));
    for w in workers {
        w.join().unwrap();
    }
    let medium = volume.host().snapshot();
    violations.extend(check_completed(&device, &fs, &medium, &cipher));
    violations.extend(volume.host().violations());
    violations.truncate(20);
    SeedReport {
        seed,
        trace_hash: volume.host().trace_hash(),
        violations,
        requests: fs.device_writes() as usize,
        carried: volume.direct_carried(),
        drawn,
    }
}
