//! Loom models of the engine's concurrency cores, run through `LoomPlatform`: one file per
//! primitive (range lock, key erasure, completion hand-off, dismount drain, cancel hand-shake,
//! the direct path's cap on host operations in flight, the permit a completion work item
//! carries to the next job, the hand-off of a request issued without a waiter, the VERIFYs'
//! line: a waiting VERIFY's cancel against its hand-over), one test binary, so the
//! fault-switch lock below covers them all.
//!
//! Each model is exhaustive within a preemption bound (set per model, overridable with
//! `LOOM_MAX_PREEMPTIONS`). Run them optimised:
//! `cargo test --release -p vcdirect-usermode --test loom_models -- --nocapture`
//! prints each model's iterations and time.
//!
//! Limits that shaped the models: loom allows 5 threads per execution (finished ones are not
//! reused), so the volume model keeps the gates off (the direct path alone starts 8 workers)
//! and runs work items inline; and loom orders only its own objects, so a plain atomic of the
//! engine (the key's block flag) is invisible to it and the models publish what they assert
//! through loom atomics or locks. The volume model at bound 3 did not finish in 10 minutes.
//!
//! A model that switches one of the engine's fault switches on must find the bug it
//! reintroduces (`#[should_panic]`): it proves the model has teeth. The switches are global,
//! so those models run alone (a write lock over all models).

use std::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use loom::sync::Mutex;

use vcdirect::crypto::{XtsCipher, DATA_UNIT};
use vcdirect::faults::{set_faults, Fault};
use vcdirect::registry::{Gates, Tunables};
use vcdirect::volume::MountParams;
use vcdirect_usermode::loom_platform::LoomPlatform;
use vcdirect_usermode::mount::mount_params;

pub type Lp = LoomPlatform;

/// Readers: ordinary models. Writer: a model with a fault switch on.
static FAULTS: RwLock<()> = RwLock::new(());

pub fn lock<T>(m: &Mutex<T>) -> loom::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `model` exhaustively with at most `bound` preemptions and reports the effort.
pub fn explore(name: &str, bound: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(bound);
    }
    builder.max_branches = 10_000;
    let iterations = Arc::new(StdAtomicUsize::new(0));
    let counter = Arc::clone(&iterations);
    let start = Instant::now();
    // Loom's threads share this OS thread and switch inside raised sections: no virtual IRQL.
    vcdirect_usermode::irql::set_mode(vcdirect_usermode::irql::Mode::Off);
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    eprintln!(
        "loom model {name}: preemption bound {:?}, {} executions, {:.2?}",
        builder.preemption_bound,
        iterations.load(std::sync::atomic::Ordering::Relaxed),
        start.elapsed()
    );
}

pub fn ordinary() -> std::sync::RwLockReadGuard<'static, ()> {
    FAULTS.read().unwrap_or_else(|e| e.into_inner())
}

/// Holds every other model off and switches `faults` on until dropped (also on panic).
pub struct FaultsOn(#[allow(dead_code)] std::sync::RwLockWriteGuard<'static, ()>);

impl FaultsOn {
    pub fn new(faults: &[Fault]) -> Self {
        let guard = FAULTS.write().unwrap_or_else(|e| e.into_inner());
        set_faults(faults);
        FaultsOn(guard)
    }
}

impl Drop for FaultsOn {
    fn drop(&mut self) {
        set_faults(&[]);
    }
}

mod cancel;
mod carried;
mod completion;
mod detached;
mod dismount_drain;
mod host_ops;
mod key_erasure;
mod range_lock;
mod verify_line;

// Shared by the key and volume models.

pub const MASTER: [u8; 64] = {
    let mut k = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        k[i] = (i as u8).wrapping_mul(37).wrapping_add(11);
        i += 1;
    }
    k
};
pub const UNIT: u64 = 7;

pub fn plaintext() -> Vec<u8> {
    (0..DATA_UNIT).map(|i| (i * 13 % 251) as u8).collect()
}

pub fn expected_ciphertext() -> Arc<Vec<u8>> {
    let mut buf = plaintext();
    XtsCipher::new(&MASTER).encrypt(&mut buf, UNIT);
    assert_ne!(buf, plaintext());
    Arc::new(buf)
}

// Shared by the volume models.

pub const VOLUME_SIZE: u64 = 4096;

pub fn params() -> MountParams {
    MountParams {
        tunables: Tunables {
            fragment_size: 512,
            io_request_count: 1,
            item_count: 1,
            free_cpu_count: 0,
            max_work_items: 1,
        },
        ..mount_params(0, VOLUME_SIZE, Gates::OFF)
    }
}
