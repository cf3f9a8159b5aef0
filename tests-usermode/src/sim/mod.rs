//! The deterministic simulator: seeded workloads over a whole simulated volume with an
//! adversarial disk, checked against a reference model.
//!
//! Every engine thread is a shuttle thread; shuttle's scheduler, seeded, picks which runs next
//! at every blocking point, and the simulated disk delays and reorders completions with the
//! same seeded randomness. One seed is one exact schedule: the same seed gives the same trace
//! hash, and `VCSIM_SEED=n` replays it.
//!
//! The model: every write fills its sectors with a pattern naming the write (id, sector), so
//! any sector read back, or left on the medium, says which write it came from. Requests are
//! logged in dispatch order (dispatch is serialised, so that is the range lock's arrival
//! order); afterwards the log is replayed with the outcomes now known, and each read and the
//! final medium must show, per sector, a write the ordering rules allow.

mod check;
mod fs_workload;
mod host;
mod log;
mod platform;
mod workload;

pub use fs_workload::run_fs_seed;
pub use host::SimHost;
pub use platform::{current_thread_name, SimPlatform};
pub use workload::{run_seed, FaultMix, SeedReport, SimConfig};

/// Switches on the test-only fault that reintroduces one of the review's bugs (`r1`, `r2`,
/// `r3`, `r12`, `r12-overtake`: a read issued by the dispatching thread overtakes the direct
/// FIFO, `r13`, `w9`: a wait inside a spin lock, `flush`: a failed host flush reported as
/// success, `r3-leak`: erase forgets the cipher, `r3-unwiped`: the cipher's block released
/// without its wipe); needs the engine's `fault-switches` feature.
pub fn set_fault(name: &str) -> Result<(), String> {
    use vcdirect::faults::{set_faults, Fault};
    let f = match name {
        "r1" => Fault::R1CompleteOnEngineThread,
        "r2" => Fault::R2CheckBlockOnce,
        "r3" => Fault::R3SkipKeyRundown,
        "r12" => Fault::R12VolumeWideBarrier,
        "r12-overtake" => Fault::R12DispatchOvertakes,
        "r13" => Fault::R13AbandonChildren,
        "w9" => Fault::W9WaitInsideLock,
        "flush" => Fault::FlushErrorIgnored,
        "r3-leak" => Fault::R3EraseLeaksCipher,
        "r3-unwiped" => Fault::R3ReleaseUnwiped,
        "carried-lost" => Fault::CarriedPermitLost,
        other => return Err(format!("unknown fault {other}")),
    };
    set_faults(&[f]);
    Ok(())
}
