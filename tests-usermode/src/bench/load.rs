//! Profiles and the load generator.
//!
//! As DiskSpd: each of a class's `-t` threads keeps its `-o` I/Os in flight with
//! [`Target::submit`] and waits on its own [`CompletionQueue`] (DiskSpd's completion port),
//! reissuing each I/O as it completes, so the generator costs the same few threads in every
//! mode. Latency runs from submission to the target's completion. Sequential streams are per
//! thread (each thread covers its own region of the target, so threads never re-read each
//! other's blocks); random offsets are uniform over the target, aligned to the block size.
//! Each run also measures the CPU time of the whole process (user and system, from
//! `getrusage`) over its measured window.

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vcdirect::Status;

use super::target::{CompletionQueue, Done, Op, Target};
use crate::request::Buf;

/// One class of traffic in a profile (DiskSpd's parameters for one group of threads).
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    /// Name in reports.
    pub name: String,
    /// `-b`: block size in bytes.
    pub block: usize,
    /// `-o`: outstanding I/Os per thread.
    pub outstanding: usize,
    /// `-t`: threads.
    pub threads: usize,
    /// `-r`: random offsets (else sequential).
    pub random: bool,
    /// `-w`: percentage of writes.
    pub write_pct: u32,
}

/// A named workload: one or more classes running side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// Name in reports.
    pub name: String,
    /// The classes.
    pub classes: Vec<Class>,
}

fn class(
    name: &str,
    block: usize,
    outstanding: usize,
    threads: usize,
    random: bool,
    write_pct: u32,
) -> Class {
    Class {
        name: name.into(),
        block,
        outstanding,
        threads,
        random,
        write_pct,
    }
}

/// The built-in profiles, in report order: the seed's six DiskSpd profiles, then the four
/// CrystalDiskMark read profiles VeraCrypt users post (SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1,
/// RND4K Q1T1): the Q1T1 ones give the latency the engine adds to a lone request and a single
/// sequential reader's throughput (a file copy).
pub fn builtin_profiles() -> Vec<Profile> {
    let one = |name: &str, c: Class| Profile {
        name: name.into(),
        classes: vec![c],
    };
    vec![
        one("seq-read", class("seq-read", 1 << 20, 4, 2, false, 0)),
        one("seq-write", class("seq-write", 1 << 20, 4, 2, false, 100)),
        one("rand-read", class("rand-read", 4096, 32, 4, true, 0)),
        one("rand-write", class("rand-write", 4096, 32, 4, true, 100)),
        one("mixed-70-30", class("mixed-70-30", 4096, 32, 4, true, 30)),
        Profile {
            name: "seqwrite-randread".into(),
            classes: vec![
                class("seq-write", 1 << 20, 4, 1, false, 100),
                class("rand-read", 4096, 32, 4, true, 0),
            ],
        },
        one("seq1m-q8t1", class("seq1m-q8t1", 1 << 20, 8, 1, false, 0)),
        one("seq1m-q1t1", class("seq1m-q1t1", 1 << 20, 1, 1, false, 0)),
        one("rnd4k-q32t1", class("rnd4k-q32t1", 4096, 32, 1, true, 0)),
        one("rnd4k-q1t1", class("rnd4k-q1t1", 4096, 1, 1, true, 0)),
    ]
}

impl Profile {
    /// One request in flight at a time: its latency is a lone request's.
    pub fn is_lone(&self) -> bool {
        self.classes
            .iter()
            .map(|c| c.threads * c.outstanding)
            .sum::<usize>()
            == 1
    }
}

/// A built-in profile by name.
pub fn builtin_profile(name: &str) -> Option<Profile> {
    builtin_profiles().into_iter().find(|p| p.name == name)
}

/// Latency summary of one class of operations, in microseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatStats {
    /// Operations measured.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Percentiles 50, 90, 99, 99.9.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Maximum.
    pub max_us: f64,
}

impl LatStats {
    /// Summarises latencies in nanoseconds (sorts them).
    pub fn from_nanos(lat: &mut [u64]) -> LatStats {
        if lat.is_empty() {
            return LatStats::default();
        }
        lat.sort_unstable();
        let pick = |p: f64| {
            let idx = ((p / 100.0) * lat.len() as f64 - 1e-9).ceil() as usize;
            lat[idx.clamp(1, lat.len()) - 1] as f64 / 1000.0
        };
        LatStats {
            count: lat.len() as u64,
            mean_us: lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64 / 1000.0,
            p50_us: pick(50.0),
            p90_us: pick(90.0),
            p99_us: pick(99.0),
            p999_us: pick(99.9),
            max_us: lat[lat.len() - 1] as f64 / 1000.0,
        }
    }
}

/// What one class did during the measured window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassResult {
    /// Class name.
    pub name: String,
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Read latencies.
    pub read_lat: LatStats,
    /// Write latencies.
    pub write_lat: LatStats,
}

/// What one run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResult {
    /// Measured seconds.
    pub seconds: f64,
    /// Per class.
    pub classes: Vec<ClassResult>,
    /// Read latencies over all classes.
    pub read_lat: LatStats,
    /// Write latencies over all classes.
    pub write_lat: LatStats,
    /// Failed operations (any phase).
    pub errors: u64,
    /// The first failure's status.
    pub first_error: Option<Status>,
    /// CPU time of the whole process in user mode during the measured window, in seconds.
    pub cpu_user_s: f64,
    /// CPU time of the whole process in the kernel during the measured window, in seconds.
    pub cpu_system_s: f64,
    /// Voluntary context switches of the whole process during the measured window.
    pub voluntary_switches: u64,
    /// Involuntary context switches of the whole process during the measured window.
    pub involuntary_switches: u64,
}

impl RunResult {
    /// Operations completed in the measured window.
    pub fn ops(&self) -> u64 {
        self.classes.iter().map(|c| c.reads + c.writes).sum()
    }
    /// Operations per second.
    pub fn iops(&self) -> f64 {
        self.ops() as f64 / self.seconds.max(1e-9)
    }
    /// CPU time of the whole process (user + system) per operation, in microseconds; `None`
    /// without operations.
    pub fn cpu_us_per_op(&self) -> Option<f64> {
        let ops = self.ops();
        (ops > 0).then(|| (self.cpu_user_s + self.cpu_system_s) * 1e6 / ops as f64)
    }
    /// Voluntary context switches of the whole process per operation (`None` without
    /// operations): the hand-offs a request pays, whatever the machine's speed.
    pub fn switches_per_op(&self) -> Option<f64> {
        let ops = self.ops();
        (ops > 0).then(|| self.voluntary_switches as f64 / ops as f64)
    }
    /// Involuntary context switches (preemptions) of the whole process per operation.
    pub fn preemptions_per_op(&self) -> Option<f64> {
        let ops = self.ops();
        (ops > 0).then(|| self.involuntary_switches as f64 / ops as f64)
    }
    /// Mean latency of every operation, in microseconds (`None` without operations).
    pub fn mean_latency_us(&self) -> Option<f64> {
        let n = self.read_lat.count + self.write_lat.count;
        (n > 0).then(|| {
            (self.read_lat.mean_us * self.read_lat.count as f64
                + self.write_lat.mean_us * self.write_lat.count as f64)
                / n as f64
        })
    }
    /// MiB per second.
    pub fn mib_per_s(&self) -> f64 {
        let bytes: u64 = self.classes.iter().map(|c| c.bytes).sum();
        bytes as f64 / (1 << 20) as f64 / self.seconds.max(1e-9)
    }
}

/// How long to run.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// `-W`: warm-up, not measured.
    pub warmup: Duration,
    /// `-d`: measured duration.
    pub duration: Duration,
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// What the whole process has used so far: CPU time and context switches, from its own
/// counters (`getrusage(RUSAGE_SELF)`, every thread).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessUsage {
    /// CPU time in user mode, in seconds.
    pub user_s: f64,
    /// CPU time in the kernel, in seconds.
    pub system_s: f64,
    /// Voluntary context switches: a thread blocked (a wait, a sleep, I/O), so another ran. A
    /// machine-independent count of the hand-offs a request pays.
    pub voluntary: u64,
    /// Involuntary context switches: a thread was preempted (its time slice ended).
    pub involuntary: u64,
}

impl ProcessUsage {
    /// What was used between `self` (earlier) and `later`.
    pub fn until(self, later: ProcessUsage) -> ProcessUsage {
        ProcessUsage {
            user_s: (later.user_s - self.user_s).max(0.0),
            system_s: (later.system_s - self.system_s).max(0.0),
            voluntary: later.voluntary.saturating_sub(self.voluntary),
            involuntary: later.involuntary.saturating_sub(self.involuntary),
        }
    }
}

/// The whole process's usage so far (all zero if the kernel refuses to say).
#[allow(unsafe_code)]
pub fn process_usage() -> ProcessUsage {
    // SAFETY: an all-zero `rusage` is a valid value of that plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage that outlives the call; RUSAGE_SELF reads the
    // calling process's own counters.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return ProcessUsage::default();
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    ProcessUsage {
        user_s: secs(usage.ru_utime),
        system_s: secs(usage.ru_stime),
        voluntary: u64::try_from(usage.ru_nvcsw).unwrap_or(0),
        involuntary: u64::try_from(usage.ru_nivcsw).unwrap_or(0),
    }
}

#[derive(Default)]
struct SlotOut {
    reads: u64,
    writes: u64,
    bytes: u64,
    read_lat: Vec<u64>,
    write_lat: Vec<u64>,
    errors: u64,
    first_error: Option<Status>,
}

/// Where a thread's sequential stream is.
struct Stream {
    blocks_total: u64,
    region_start: u64,
    region_blocks: u64,
    cursor: u64,
}

/// What a thread remembers of one of its I/Os in flight.
#[derive(Clone, Copy)]
struct InFlight {
    issued: Instant,
    write: bool,
    /// Issued inside the measured window.
    measured: bool,
}

/// One generator thread: keeps `c.outstanding` I/Os in flight on `target` until the phase
/// says stop, then waits for all of them (their buffers are theirs until they complete).
#[allow(clippy::too_many_arguments)]
fn generator_thread(
    target: &dyn Target,
    c: &Class,
    mut stream: Stream,
    rng: &mut Rng,
    align: usize,
    phase: &AtomicU8,
    live_ops: &AtomicU64,
) -> SlotOut {
    let queue = Arc::new(CompletionQueue::default());
    let mut out = SlotOut::default();
    let mut slots = vec![
        InFlight {
            issued: Instant::now(),
            write: false,
            measured: false,
        };
        c.outstanding
    ];
    let mut issue = |tag: usize, buf: Buf, rng: &mut Rng, slots: &mut [InFlight]| {
        let offset = if c.random {
            (rng.next() % stream.blocks_total) * c.block as u64
        } else {
            let n = stream.cursor % stream.region_blocks;
            stream.cursor += 1;
            (stream.region_start + n) * c.block as u64
        };
        let write =
            c.write_pct >= 100 || (c.write_pct > 0 && (rng.next() % 100) < u64::from(c.write_pct));
        slots[tag] = InFlight {
            issued: Instant::now(),
            write,
            measured: phase.load(Ordering::Acquire) == MEASURE,
        };
        target.submit(Op {
            write,
            offset,
            buf,
            tag,
            queue: Arc::clone(&queue),
            alone: c.outstanding == 1,
        });
    };
    for tag in 0..c.outstanding {
        let mut buf = Buf::zeroed_aligned(c.block, align);
        for b in buf.as_mut_slice().iter_mut() {
            *b = rng.next() as u8;
        }
        issue(tag, buf, rng, &mut slots);
    }
    let mut in_flight = c.outstanding;
    let mut batch: Vec<Done> = Vec::with_capacity(c.outstanding);
    while in_flight > 0 {
        queue.wait_into(&mut batch);
        let now_phase = phase.load(Ordering::Acquire);
        for d in batch.drain(..) {
            let s = slots[d.tag];
            match d.result {
                Ok(_) if s.measured && now_phase == MEASURE => {
                    let lat = d.at.saturating_duration_since(s.issued).as_nanos() as u64;
                    if s.write {
                        out.writes += 1;
                        out.write_lat.push(lat);
                    } else {
                        out.reads += 1;
                        out.read_lat.push(lat);
                    }
                    out.bytes += c.block as u64;
                    live_ops.fetch_add(1, Ordering::Relaxed);
                }
                Ok(_) => {}
                Err(status) => {
                    out.errors += 1;
                    out.first_error.get_or_insert(status);
                }
            }
            if now_phase == STOP || out.errors > 1000 {
                in_flight -= 1;
            } else {
                issue(d.tag, d.buf, rng, &mut slots);
            }
        }
    }
    out
}

/// Runs `profile` against `target`. `progress` labels the live line on stderr (none if empty).
pub fn run_profile(
    target: &dyn Target,
    profile: &Profile,
    timing: Timing,
    progress: &str,
) -> Result<RunResult, String> {
    let size = target.size();
    for c in &profile.classes {
        if c.block == 0
            || !c.block.is_multiple_of(512)
            || c.threads == 0
            || c.outstanding == 0
            || c.write_pct > 100
        {
            return Err(format!("class {}: block must be a non-zero multiple of 512, -t and -o at least 1, -w at most 100", c.name));
        }
        if (c.block as u64) * c.threads as u64 > size {
            return Err(format!(
                "class {}: the target ({size} bytes) is smaller than {} blocks of {}",
                c.name, c.threads, c.block
            ));
        }
    }
    let phase = AtomicU8::new(WARMUP);
    let live_ops = AtomicU64::new(0);
    let align = target.alignment();
    let mut seed = 0x1234_5678_9ABC_DEF1u64;
    let mut cpu = ProcessUsage::default();

    let outs: Vec<Vec<SlotOut>> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for c in &profile.classes {
            let mut class_handles = Vec::new();
            let blocks_total = size / c.block as u64;
            let region_blocks = blocks_total / c.threads as u64;
            for t in 0..c.threads {
                seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut rng = Rng(seed | 1);
                let (phase, live_ops) = (&phase, &live_ops);
                class_handles.push(s.spawn(move || {
                    generator_thread(
                        target,
                        c,
                        Stream {
                            blocks_total,
                            region_start: t as u64 * region_blocks,
                            region_blocks,
                            cursor: 0,
                        },
                        &mut rng,
                        align,
                        phase,
                        live_ops,
                    )
                }));
            }
            handles.push(class_handles);
        }

        std::thread::sleep(timing.warmup);
        let cpu_start = process_usage();
        phase.store(MEASURE, Ordering::Release);
        let start = Instant::now();
        let end = start + timing.duration;
        loop {
            let now = Instant::now();
            if now >= end {
                break;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(500)));
            if !progress.is_empty() {
                let secs = start.elapsed().as_secs_f64();
                eprint!(
                    "\r{progress}: {:>10.0} IOPS  {:>4.1}/{:.0} s   ",
                    live_ops.load(Ordering::Relaxed) as f64 / secs,
                    secs,
                    timing.duration.as_secs_f64()
                );
                let _ = std::io::stderr().flush();
            }
        }
        phase.store(STOP, Ordering::Release);
        cpu = cpu_start.until(process_usage());
        handles
            .into_iter()
            .map(|hs| {
                hs.into_iter()
                    .map(|h| h.join().unwrap_or_default())
                    .collect()
            })
            .collect()
    });
    if !progress.is_empty() {
        eprint!("\r{:120}\r", "");
    }

    let mut result = RunResult {
        seconds: timing.duration.as_secs_f64(),
        cpu_user_s: cpu.user_s,
        cpu_system_s: cpu.system_s,
        voluntary_switches: cpu.voluntary,
        involuntary_switches: cpu.involuntary,
        ..RunResult::default()
    };
    let (mut all_r, mut all_w) = (Vec::new(), Vec::new());
    for (c, slots) in profile.classes.iter().zip(outs) {
        let mut cr = ClassResult {
            name: c.name.clone(),
            ..ClassResult::default()
        };
        let (mut r, mut w) = (Vec::new(), Vec::new());
        for slot in slots {
            cr.reads += slot.reads;
            cr.writes += slot.writes;
            cr.bytes += slot.bytes;
            r.extend_from_slice(&slot.read_lat);
            w.extend_from_slice(&slot.write_lat);
            result.errors += slot.errors;
            if result.first_error.is_none() {
                result.first_error = slot.first_error;
            }
        }
        cr.read_lat = LatStats::from_nanos(&mut r);
        cr.write_lat = LatStats::from_nanos(&mut w);
        all_r.extend(r);
        all_w.extend(w);
        result.classes.push(cr);
    }
    result.read_lat = LatStats::from_nanos(&mut all_r);
    result.write_lat = LatStats::from_nanos(&mut all_w);
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::target::RawTarget;
    use crate::host::MemoryHost;
    use std::sync::Arc;

    #[test]
    fn percentiles_pick_the_right_ranks() {
        let mut lat: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let s = LatStats::from_nanos(&mut lat);
        assert_eq!(s.count, 1000);
        assert_eq!(s.p50_us, 500.0);
        assert_eq!(s.p99_us, 990.0);
        assert_eq!(s.p999_us, 999.0);
        assert_eq!(s.max_us, 1000.0);
        assert_eq!(LatStats::from_nanos(&mut []), LatStats::default());
    }

    #[test]
    fn builtin_profiles_are_the_seed_six_and_crystaldiskmark_four() {
        let names: Vec<_> = builtin_profiles().into_iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "seq-read",
                "seq-write",
                "rand-read",
                "rand-write",
                "mixed-70-30",
                "seqwrite-randread",
                "seq1m-q8t1",
                "seq1m-q1t1",
                "rnd4k-q32t1",
                "rnd4k-q1t1"
            ]
        );
        let lone: Vec<_> = builtin_profiles()
            .into_iter()
            .filter(Profile::is_lone)
            .map(|p| p.name)
            .collect();
        assert_eq!(lone, ["seq1m-q1t1", "rnd4k-q1t1"]);
        let q32 = &builtin_profile("rnd4k-q32t1").unwrap().classes[0];
        assert_eq!(
            (q32.block, q32.outstanding, q32.threads, q32.random),
            (4096, 32, 1, true)
        );
        let rr = builtin_profile("rand-read").unwrap();
        assert_eq!(
            (
                rr.classes[0].block,
                rr.classes[0].outstanding,
                rr.classes[0].threads
            ),
            (4096, 32, 4)
        );
    }

    #[test]
    fn mixed_run_reads_and_writes_in_proportion_and_reports_both_classes() {
        let host = Arc::new(MemoryHost::new(8 << 20));
        let target = RawTarget::new(host.clone());
        // Long enough that the lone writer completes ops even on a loaded 2-core machine
        // (this checks the mix, not speed).
        let timing = Timing {
            warmup: Duration::ZERO,
            duration: Duration::from_millis(1500),
        };
        let r = run_profile(
            &target,
            &builtin_profile("mixed-70-30").unwrap(),
            timing,
            "",
        )
        .unwrap();
        let c = &r.classes[0];
        assert!(c.reads > 0 && c.writes > 0, "{c:?}");
        let share = c.writes as f64 / (c.reads + c.writes) as f64;
        assert!((0.2..0.4).contains(&share), "write share {share}");
        assert_eq!(r.errors, 0);
        assert!(r.iops() > 0.0 && r.read_lat.p99_us > 0.0);
        assert!(r.cpu_us_per_op().is_some_and(|c| c > 0.0));
        // The generator threads block while their I/Os are in flight: the process switched.
        assert!(r.switches_per_op().is_some_and(|c| c > 0.0), "{r:?}");

        let r = run_profile(
            &target,
            &builtin_profile("seqwrite-randread").unwrap(),
            timing,
            "",
        )
        .unwrap();
        assert_eq!(r.classes.len(), 2);
        assert!(r.classes[0].writes > 0 && r.classes[0].reads == 0);
        assert!(r.classes[1].reads > 0 && r.classes[1].writes == 0);
    }

    /// A raw target that records which threads submit.
    struct Recorder {
        inner: RawTarget<MemoryHost>,
        submitters: std::sync::Mutex<std::collections::HashSet<std::thread::ThreadId>>,
    }

    impl Target for Recorder {
        fn size(&self) -> u64 {
            self.inner.size()
        }
        fn alignment(&self) -> usize {
            self.inner.alignment()
        }
        fn submit(&self, op: Op) {
            self.submitters
                .lock()
                .unwrap()
                .insert(std::thread::current().id());
            self.inner.submit(op);
        }
    }

    #[test]
    fn each_generator_thread_keeps_all_its_ios_in_flight() {
        // 2 ms per operation: the 2 x 8 I/Os of the profile are in flight together, from 2
        // generator threads.
        let host = Arc::new(MemoryHost::new(8 << 20).with_latency(Duration::from_millis(2)));
        let target = Recorder {
            inner: RawTarget::new(host),
            submitters: Default::default(),
        };
        let profile = Profile {
            name: "p".into(),
            classes: vec![class("p", 4096, 8, 2, true, 0)],
        };
        let timing = Timing {
            warmup: Duration::from_millis(50),
            duration: Duration::from_millis(300),
        };
        let r = run_profile(&target, &profile, timing, "").unwrap();
        assert_eq!(r.errors, 0);
        assert!(r.read_lat.count > 0 && r.read_lat.mean_us >= 2000.0);
        assert_eq!(target.submitters.lock().unwrap().len(), 2);
        // The device needed a thread per I/O in flight, the generator only one per -t.
        assert!(
            target.inner.device_threads() > 2,
            "{}",
            target.inner.device_threads()
        );
        assert!(target.inner.device_threads() <= 16);
    }

    #[test]
    fn failures_are_counted_and_bad_profiles_refused() {
        let host = Arc::new(MemoryHost::new(1 << 20));
        host.fail_range(0..(1 << 20), Status::IoDeviceError);
        let target = RawTarget::new(host);
        let timing = Timing {
            warmup: Duration::ZERO,
            duration: Duration::from_millis(50),
        };
        let r = run_profile(&target, &builtin_profile("rand-read").unwrap(), timing, "").unwrap();
        assert!(r.errors > 0);
        assert_eq!(r.first_error, Some(Status::IoDeviceError));
        let mut bad = builtin_profile("rand-read").unwrap();
        bad.classes[0].block = 1000;
        assert!(run_profile(&target, &bad, timing, "").is_err());
        bad.classes[0].block = 4 << 20;
        assert!(run_profile(&target, &bad, timing, "").is_err());
    }
}
