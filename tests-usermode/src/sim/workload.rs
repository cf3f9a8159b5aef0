//! Seeded workloads: one simulated volume, its submitters and injected faults, and the log
//! of every request that the checkers (`super::check`) replay after the run.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shuttle::sync::Mutex;

use vcdirect::crypto::XtsCipher;
use vcdirect::platform::irql::Irql;
use vcdirect::platform::{Event, HostKind, HostLimits, RequestKind};
use vcdirect::registry::{Gates, Tunables};
use vcdirect::volume::{MountParams, Volume};
use vcdirect::Status;

use super::check::allocation::check_failed_mount;
use super::check::bounds::check_bounds;
use super::check::completion_thread::check_completion_thread;
use super::check::dismount::{
    check_cancel_handshakes, check_drained, check_keys, check_threads_left,
};
use super::check::flushes::{check_flush_failures, check_flushes};
use super::check::irql::with_irql_checks;
use super::check::medium::check_medium;
use super::check::paths::check_paths;
use super::check::requests::check_log;
use super::check::short_transfers::check_short_transfers;
use super::host::SimHost;
use super::log::{
    decode_sector, fill_pattern, LogEntry, OpKind, Outcome, DATA_OFFSET, DATA_SECTORS, SECTOR,
};
use super::platform::{current_thread_name, SimEvent, SimPlatform};
use crate::mount::mount_params;
use crate::request::{Buf, Completion, TestRequest};

/// The status an injected host flush failure carries (STATUS_DEVICE_DATA_ERROR): no other
/// fault produces it, so the flush check can count it.
pub(crate) const FLUSH_FAILURE: Status = Status::Host(0xC000_009C);

/// Which faults a run may inject (each is then drawn per seed).
#[derive(Clone, Copy, Debug)]
pub struct FaultMix {
    /// Host operations on a bad sector range fail.
    pub host_errors: bool,
    /// Some requests are cancelled right after dispatch.
    pub cancellation: bool,
    /// The keys are erased at a random point.
    pub key_erasure: bool,
    /// The volume is dismounted at a random point under load.
    pub dismount: bool,
    /// Some read completions submit a nested read and wait for it (docs/review.md R1).
    pub reentrant: bool,
    /// Misaligned, out-of-range and bufferless requests.
    pub bad_requests: bool,
    /// Long random delays on host operations.
    pub long_delays: bool,
    /// Host transfers over a sector range are short (docs/review.md W12).
    pub short_transfers: bool,
    /// Some requests' buffers cannot be mapped (docs/review.md W7: system-PTE pressure).
    pub map_failures: bool,
    /// A mount before the real one has a seeded one of its fallible allocations fail (W6).
    pub allocation_failure: bool,
    /// Some host flushes fail: the upper flushes they serve must fail with their status.
    pub flush_failures: bool,
}

impl FaultMix {
    /// Every fault.
    pub const ALL: FaultMix = FaultMix {
        host_errors: true,
        cancellation: true,
        key_erasure: true,
        dismount: true,
        reentrant: true,
        bad_requests: true,
        long_delays: true,
        short_transfers: true,
        map_failures: true,
        allocation_failure: true,
        flush_failures: true,
    };
    /// No fault.
    pub const NONE: FaultMix = FaultMix {
        host_errors: false,
        cancellation: false,
        key_erasure: false,
        dismount: false,
        reentrant: false,
        bad_requests: false,
        long_delays: false,
        short_transfers: false,
        map_failures: false,
        allocation_failure: false,
        flush_failures: false,
    };
}

/// One simulated volume and its workload.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Name for reports.
    pub name: String,
    /// The volume's gates.
    pub gates: Gates,
    /// Mounted read-only.
    pub read_only: bool,
    /// Raw device host (else a container file).
    pub raw: bool,
    /// Operations in all.
    pub ops: usize,
    /// Concurrent submitters.
    pub submitters: usize,
    /// Requests each submitter keeps in flight.
    pub depth: usize,
    /// Faults that may be injected.
    pub faults: FaultMix,
}

impl SimConfig {
    /// The four standard volumes: gates off, read-only (both gates on), write gate only, both.
    pub fn standard(ops: usize) -> Vec<SimConfig> {
        let mk = |name: &str, read, write, read_only| SimConfig {
            name: name.into(),
            gates: Gates { read, write },
            read_only,
            raw: true,
            ops,
            submitters: 4,
            depth: 3,
            faults: FaultMix::ALL,
        };
        vec![
            mk("gates-off", false, false, false),
            mk("read-only", true, true, true),
            mk("write-only", false, true, false),
            mk("both-on", true, true, false),
        ]
    }
}

/// What one seed did.
#[derive(Clone, Debug, Default)]
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// Hash of every host operation and outcome in order.
    pub trace_hash: u64,
    /// Broken invariants (empty: the run passed).
    pub violations: Vec<String>,
    /// Requests dispatched.
    pub requests: usize,
    /// Direct jobs issued by completion work items with the host permits they carried.
    pub carried: u64,
    /// Faults drawn for this seed.
    pub drawn: String,
}

struct Ctx {
    volume: Arc<Volume<SimPlatform>>,
    /// W7: requests whose id hashes under this per-mille value get an unmappable buffer.
    unmappable_per_mille: u64,
    seed: u64,
    log: StdMutex<Vec<LogEntry>>,
    dispatch: Mutex<()>,
    one_flush: Mutex<()>,
    next_id: AtomicU32,
    r1_violations: StdMutex<Vec<String>>,
    reentrant: bool,
    read_only: bool,
}

fn master_key(seed: u64) -> [u8; 64] {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut k = [0u8; 64];
    rng.fill(&mut k[..]);
    k
}

/// Runs one seed of `cfg`; returns its report (violations empty when every invariant held).
pub fn run_seed(cfg: &SimConfig, seed: u64) -> SeedReport {
    let cfg = cfg.clone();
    run_scheduled(seed, move || simulate(&cfg, seed))
}

/// Runs `simulate` under shuttle's random scheduler seeded with `seed`; a panic or a
/// deadlock becomes the report's violation.
pub(super) fn run_scheduled(
    seed: u64,
    simulate: impl Fn() -> SeedReport + Send + Sync + 'static,
) -> SeedReport {
    let out: Arc<StdMutex<Option<SeedReport>>> = Arc::new(StdMutex::new(None));
    let out2 = Arc::clone(&out);
    let scheduler = shuttle::scheduler::RandomScheduler::new_from_seed(seed, 1);
    let mut config = shuttle::Config::new();
    config.max_steps = shuttle::MaxSteps::None;
    config.failure_persistence = shuttle::FailurePersistence::None;
    config.silence_warnings = true;
    config.stack_size = 256 * 1024;
    let runner = shuttle::Runner::new(scheduler, config);
    let (result, irql_violations) = with_irql_checks(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runner.run(move || {
                let r = simulate();
                *out2.lock().unwrap() = Some(r);
            })
        }))
    });
    let mut report = report_of(seed, result, &out);
    // W9 first: a wait at DISPATCH_LEVEL may well end the seed in a deadlock too.
    report.violations.splice(0..0, irql_violations);
    report.violations.truncate(20);
    report
}

/// The seed's report: what `simulate` returned, or its panic or deadlock as the violation.
fn report_of(
    seed: u64,
    result: std::thread::Result<usize>,
    out: &StdMutex<Option<SeedReport>>,
) -> SeedReport {
    match result {
        Ok(_) => out.lock().unwrap().take().unwrap_or_default(),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            // Shuttle reports a schedule in which every task is blocked as a panic starting
            // with "deadlock!"; keep it apart from other panics (an overflow, a failed expect).
            let violation = if !msg.starts_with("deadlock") {
                format!("panic: {msg}")
            } else {
                check_threads_left(&msg).unwrap_or_else(|| format!("deadlock: {msg}"))
            };
            SeedReport {
                seed,
                violations: vec![violation],
                ..Default::default()
            }
        }
    }
}

fn simulate(cfg: &SimConfig, seed: u64) -> SeedReport {
    let mut rng = StdRng::seed_from_u64(seed);
    let key = master_key(seed);
    let cipher = Arc::new(XtsCipher::new(&key));
    let host_size = DATA_OFFSET + DATA_SECTORS * SECTOR + 128 * 1024;
    let mut content = vec![0u8; host_size as usize];
    {
        let data =
            &mut content[DATA_OFFSET as usize..(DATA_OFFSET + DATA_SECTORS * SECTOR) as usize];
        fill_pattern(0, 0, data);
        cipher.encrypt(data, DATA_OFFSET / SECTOR);
    }
    let limits = HostLimits {
        sector_size: 512,
        max_transfer: [64 << 10, 128 << 10, 1 << 20][rng.gen_range(0..3)],
        max_physical_pages: [17, 32, u32::MAX][rng.gen_range(0..3)],
        alignment_mask: [0, 511, 4095][rng.gen_range(0..3)],
        page_size: 4096,
    };
    // Segments in flight together: in about one seed in three a small maximum transfer cuts
    // requests into many segments (up to 32), so a worker keeps several at the host and the
    // cap of 8 host operations binds. Drawn from its own generator, so the other draws stay
    // as they were.
    let mut split_rng = StdRng::seed_from_u64(seed ^ 0x5e65_3e17);
    let limits = if split_rng.gen_bool(0.33) {
        HostLimits {
            max_transfer: [4 << 10, 8 << 10, 16 << 10][split_rng.gen_range(0..3)],
            ..limits
        }
    } else {
        limits
    };
    let f = cfg.faults;
    let host_errors = f.host_errors && rng.gen_bool(0.3);
    let erase = f.key_erasure && rng.gen_bool(0.15);
    let dismount_early = f.dismount && rng.gen_bool(0.15);
    let long_delays = f.long_delays && rng.gen_bool(0.3);
    // Drawn from its own generator, so the other draws (and schedules) stay as they were.
    let mut short_rng = StdRng::seed_from_u64(seed ^ 0x5407_7e12);
    let short = (f.short_transfers && short_rng.gen_bool(0.2)).then(|| {
        let s = short_rng.gen_range(0..DATA_SECTORS - 8);
        let start = DATA_OFFSET + s * SECTOR;
        start..start + short_rng.gen_range(1..8) * SECTOR
    });
    // Drawn from its own generator too: seeds without it keep their schedules.
    let mut map_rng = StdRng::seed_from_u64(seed ^ 0x3a9f_0c11);
    let map_failures = f.map_failures && map_rng.gen_bool(0.2);
    // W6: a failed allocation at this (1-based) fallible allocation of an earlier mount.
    let mut alloc_rng = StdRng::seed_from_u64(seed ^ 0x0a11_0c0f);
    let fail_alloc = (f.allocation_failure && alloc_rng.gen_bool(0.25))
        .then(|| alloc_rng.gen_range(1..=MOUNT_ALLOCATIONS_DRAWN));
    // Every n-th host flush fails (its own generator too).
    let mut flush_rng = StdRng::seed_from_u64(seed ^ 0x0f1a_5e44);
    let flush_fail =
        (f.flush_failures && flush_rng.gen_bool(0.3)).then(|| flush_rng.gen_range(1..=3u64));
    let drawn = format!(
        "limits={}/{}/{} host_errors={host_errors} erase={erase} dismount={dismount_early} long_delays={long_delays} short={short:?} map_failures={map_failures} fail_alloc={fail_alloc:?} flush_fail={flush_fail:?}",
        limits.max_transfer, limits.max_physical_pages, limits.alignment_mask
    );
    let kind = if cfg.raw {
        HostKind::RawDevice
    } else {
        HostKind::FileContainer
    };
    let delay = if long_delays { 40 } else { 4 };
    let mut mount_violations = Vec::new();
    if let Some(n) = fail_alloc {
        let attempt = SimHost::new(content.clone(), limits, kind, delay);
        mount_violations.extend(check_failed_mount(cfg, attempt, &key, n));
    }
    let host = SimHost::new(content, limits, kind, delay);
    if host_errors {
        let s = rng.gen_range(0..DATA_SECTORS - 8);
        let start = DATA_OFFSET + s * SECTOR;
        host.fail_range(
            start..start + rng.gen_range(1..8) * SECTOR,
            Status::IoDeviceError,
        );
    }
    if let Some(range) = short.clone() {
        host.short_range(range);
    }
    if let Some(every) = flush_fail {
        host.fail_flushes(every, FLUSH_FAILURE);
    }
    let decoder_cipher = Arc::clone(&cipher);
    host.set_decoder(Box::new(move |host_offset, first| {
        if host_offset < DATA_OFFSET || first.len() < SECTOR as usize {
            return None;
        }
        let mut sec = first[..SECTOR as usize].to_vec();
        decoder_cipher.decrypt(&mut sec, host_offset / SECTOR);
        decode_sector(&sec, (host_offset - DATA_OFFSET) / SECTOR)
    }));
    let params = MountParams {
        read_only: cfg.read_only,
        tunables: Tunables {
            fragment_size: 32 * 1024,
            ..Tunables::default()
        },
        ..mount_params(DATA_OFFSET, DATA_SECTORS * SECTOR, cfg.gates)
    };
    let platform = SimPlatform::default();
    let volume = Volume::mount(platform.clone(), host, &key, params).expect("mount");
    let weak = Arc::downgrade(&volume);
    volume.host().set_key_blocked_probe(Box::new(move || {
        weak.upgrade().is_some_and(|v| v.key().is_blocked())
    }));
    let weak = Arc::downgrade(&volume);
    volume.host().set_fifo_probe(Arc::new(move || {
        weak.upgrade().map_or((0, 0), |v| v.direct_fifo_counts())
    }));
    let ctx = Arc::new(Ctx {
        volume: Arc::clone(&volume),
        unmappable_per_mille: if map_failures { 40 } else { 0 },
        seed,
        log: StdMutex::new(Vec::new()),
        dispatch: Mutex::new(()),
        one_flush: Mutex::new(()),
        next_id: AtomicU32::new(1),
        r1_violations: StdMutex::new(Vec::new()),
        reentrant: f.reentrant,
        read_only: cfg.read_only,
    });

    let mut threads = Vec::new();
    let per = cfg.ops.div_ceil(cfg.submitters.max(1));
    for i in 0..cfg.submitters {
        let ctx = Arc::clone(&ctx);
        let cfg = cfg.clone();
        // A hash of the submitter index: the multiplication wraps by design.
        let sub_seed = seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        threads.push(
            shuttle::thread::Builder::new()
                .name(format!("submitter-{i}"))
                .spawn(move || {
                    // Half the submitters stand for System threads (a file system's or
                    // server's workers), whose small requests the dispatching thread may issue
                    // itself; the others for an application's threads, which it never does.
                    crate::security::set_caller(if sub_seed & 1 == 0 {
                        crate::security::Caller::System
                    } else {
                        crate::security::Caller::Process
                    });
                    submitter(&ctx, &cfg, sub_seed, per)
                })
                .unwrap(),
        );
    }
    let mut violations = mount_violations;
    let chaos_yields = rng.gen_range(0..4000);
    if erase || dismount_early {
        let ctx = Arc::clone(&ctx);
        let platform = platform.clone();
        threads.push(
            shuttle::thread::Builder::new()
                .name("chaos".into())
                .spawn(move || {
                    for _ in 0..chaos_yields {
                        shuttle::thread::yield_now();
                    }
                    if erase {
                        ctx.volume.erase_keys();
                        // By the time erase returns, no round key is left in memory.
                        let address = ctx.volume.key().block_address();
                        if let Err(v) = platform.key_blocks().check_erased(address) {
                            ctx.r1_violations.lock().unwrap().push(v);
                        }
                    }
                    if dismount_early {
                        ctx.volume.dismount();
                        let drained = check_drained(&ctx.volume, "when dismount returned");
                        ctx.r1_violations.lock().unwrap().extend(drained);
                    }
                })
                .unwrap(),
        );
    }
    for t in threads {
        t.join().unwrap();
    }
    volume.dismount();
    let host = volume.host();
    violations.extend(check_drained(&volume, "after dismount"));
    check_cancel_handshakes(&volume, &mut violations);
    violations.extend(ctx.r1_violations.lock().unwrap().iter().cloned());
    violations.extend(host.violations());
    check_keys(&volume, &platform, &mut violations);
    let counters = volume.counters.snapshot();
    check_bounds(&volume, &counters, &mut violations);
    let log = std::mem::take(&mut *ctx.log.lock().unwrap());
    let mut allowed_failures = allowed_failures(cfg, host_errors, erase, dismount_early);
    if short.is_some() {
        allowed_failures.push(Status::EndOfFile);
    }
    if map_failures {
        allowed_failures.push(Status::InsufficientResources);
    }
    if flush_fail.is_some() {
        allowed_failures.push(FLUSH_FAILURE);
    }
    check_log(&log, &allowed_failures, &mut violations);
    check_medium(&log, &host.snapshot(), &cipher, &mut violations);
    check_flushes(&log, host, volume.effective().direct_write, &mut violations);
    check_flush_failures(&log, host.failed_flushes(), &mut violations);
    check_paths(&log, cfg, &counters, limits, &mut violations);
    check_short_transfers(
        &log,
        &host.short_ranges(),
        &host.host_writes(),
        &mut violations,
    );

    let mut h = host.trace_hash();
    for e in &log {
        let s = e.outcome.as_ref().map_or(u32::MAX, |o| o.status.ntstatus());
        h = (h ^ u64::from(s)).wrapping_mul(0x0100_0000_01b3);
    }
    violations.truncate(20);
    SeedReport {
        seed,
        trace_hash: h,
        violations,
        requests: log.len(),
        carried: volume.direct_carried(),
        drawn,
    }
}

/// How many fallible allocations of a mount the allocation-failure draw picks from: more than
/// a mount makes (61 with both gates on, `tests/w6_allocation_failure.rs` counts them), so every
/// site can be drawn and some draws fail none (the mount then must simply work).
const MOUNT_ALLOCATIONS_DRAWN: u64 = 80;

fn allowed_failures(
    cfg: &SimConfig,
    host_errors: bool,
    erase: bool,
    dismount: bool,
) -> Vec<Status> {
    let mut v = Vec::new();
    if host_errors {
        v.push(Status::IoDeviceError);
    }
    if erase {
        v.push(Status::DeviceBusy);
    }
    if dismount {
        v.push(Status::DeviceNotReady);
    }
    if cfg.faults.cancellation {
        v.push(Status::Cancelled);
    }
    v
}

fn submitter(ctx: &Arc<Ctx>, cfg: &SimConfig, seed: u64, ops: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pending: std::collections::VecDeque<Arc<SimEvent>> = Default::default();
    for _ in 0..ops {
        while pending.len() >= cfg.depth.max(1) {
            pending.pop_front().unwrap().wait();
        }
        let roll = rng.gen_range(0..100);
        if roll < 5 {
            // One flush at a time, so host flushes map to flush requests in order.
            let g = ctx.one_flush.lock().unwrap();
            let done = submit(ctx, OpKind::Flush, 0, 0, None, false, 0, &mut rng);
            done.wait();
            drop(g);
            continue;
        }
        let kind = if roll < 55 {
            OpKind::Read
        } else {
            OpKind::Write
        };
        let sectors = [1u64, 1, 2, 8, 8, 16, 64, 128, 256][rng.gen_range(0..9)];
        let first = rng.gen_range(0..=DATA_SECTORS - sectors);
        let bad = if cfg.faults.bad_requests && rng.gen_range(0..100) < 6 {
            Some(rng.gen_range(0..4))
        } else {
            None
        };
        let cancel = cfg.faults.cancellation && rng.gen_range(0..100) < 4;
        let depth = if ctx.reentrant && kind == OpKind::Read && rng.gen_range(0..100) < 10 {
            rng.gen_range(1..4)
        } else {
            0
        };
        pending.push_back(submit(
            ctx, kind, first, sectors, bad, cancel, depth, &mut rng,
        ));
    }
    while let Some(e) = pending.pop_front() {
        e.wait();
    }
}

/// Dispatches one request and returns the event its completion sets.
#[allow(clippy::too_many_arguments)]
fn submit(
    ctx: &Arc<Ctx>,
    kind: OpKind,
    first: u64,
    sectors: u64,
    bad: Option<u32>,
    cancel: bool,
    nested_depth: u32,
    rng: &mut StdRng,
) -> Arc<SimEvent> {
    let done = Arc::new(SimEvent::new().expect("a request's event"));
    let id = ctx.next_id.fetch_add(1, Ordering::SeqCst);
    let len = (sectors * SECTOR) as usize;
    let mut offset = (first * SECTOR) as i64;
    let mut length = len as u32;
    let mut buf = match kind {
        OpKind::Read => Some(Buf::unread_aligned(len, 4096)),
        OpKind::Write => {
            let mut b = Buf::zeroed_aligned(len, 4096);
            fill_pattern(id, first, b.as_mut_slice());
            Some(b)
        }
        OpKind::Flush => None,
    };
    // W7: a request with a buffer may be unmappable (a hash of seed and id, so the other
    // draws stay as they were).
    let unmappable = buf.is_some() && {
        let h = (ctx.seed ^ u64::from(id)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 32) % 1000 < ctx.unmappable_per_mille
    };
    if unmappable {
        buf = buf.map(Buf::fail_mapping);
    }
    let mut expected = None;
    if let Some(b) = bad {
        let ro = kind == OpKind::Write && ctx.read_only;
        match b {
            0 => {
                offset += 256;
                expected = Some(Status::InvalidParameter);
            }
            1 => {
                offset = ((DATA_SECTORS - sectors + 1) * SECTOR) as i64;
                expected = Some(Status::InvalidParameter);
            }
            2 => {
                length = length.saturating_sub(100).max(1);
                expected = Some(Status::InvalidParameter);
            }
            _ => {
                buf = None;
                expected = Some(Status::InvalidUserBuffer);
            }
        }
        if ro {
            expected = Some(Status::MediaWriteProtected);
        }
    }
    if kind == OpKind::Write && ctx.read_only {
        expected = Some(Status::MediaWriteProtected);
    }
    let ctx2 = Arc::clone(ctx);
    let done2 = Arc::clone(&done);
    let index;
    let request_kind = match kind {
        OpKind::Read => RequestKind::Read,
        OpKind::Write => RequestKind::Write,
        OpKind::Flush => RequestKind::Flush,
    };
    let g = ctx.dispatch.lock().unwrap();
    {
        let mut log = ctx.log.lock().unwrap();
        index = log.len();
        log.push(LogEntry {
            kind,
            first_sector: first,
            sectors,
            id,
            expected,
            unmappable,
            routine_ran: false,
            outcome: None,
        });
    }
    let nested_seed: u64 = rng.gen();
    let req = TestRequest::new(request_kind, offset, length, buf, move |c: Completion| {
        if let Some(v) = check_completion_thread(&current_thread_name()) {
            ctx2.r1_violations.lock().unwrap().push(v);
        }
        let data = if kind == OpKind::Read {
            c.buf.map(|b| b.as_slice().to_vec())
        } else {
            None
        };
        let status = c.status;
        ctx2.log.lock().unwrap()[index].outcome = Some(Outcome {
            status: c.status,
            information: c.information,
            data,
        });
        // Only from a real (deferred) completion: an inline rejection runs on the dispatching
        // thread, which holds the harness's dispatch lock.
        if nested_depth > 0 && status.is_success() {
            // A re-entrant upper completion: submit another read and wait for it.
            let mut r = StdRng::seed_from_u64(nested_seed);
            let sectors = [1u64, 8, 16][r.gen_range(0..3)];
            let first = r.gen_range(0..=DATA_SECTORS - sectors);
            let e = submit(
                &ctx2,
                OpKind::Read,
                first,
                sectors,
                None,
                false,
                nested_depth - 1,
                &mut r,
            );
            e.wait();
        }
        done2.set();
    });
    let cancel_handle = req.cancel_handle();
    // Half the reads and writes are dispatched at PASSIVE_LEVEL (where a small direct read is
    // issued by this thread itself), half at DISPATCH_LEVEL (a hash of seed and id, so the
    // other draws stay as they were).
    let level = if (ctx.seed ^ u64::from(id)).wrapping_mul(0xD1B5_4A32_D192_ED03) >> 63 == 0 {
        Irql::Passive
    } else {
        Irql::Dispatch
    };
    super::check::overtaking::note_dispatch(ctx.volume.direct_fifo_counts().0);
    crate::irql::dispatch_at(level, &ctx.volume, req);
    drop(g);
    if cancel {
        shuttle::thread::yield_now();
        let volume = Arc::clone(&ctx.volume);
        if cancel_handle.cancel(|key| volume.cancel(key)) {
            ctx.log.lock().unwrap()[index].routine_ran = true;
        }
    }
    done
}
