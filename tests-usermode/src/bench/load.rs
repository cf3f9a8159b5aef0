//! Profiles and the load generator.
//!
//! Each outstanding I/O is one generator thread making blocking calls on the [`Target`], as
//! DiskSpd's `-t` threads with `-o` outstanding I/Os each. Sequential streams are per thread
//! (each thread covers its own region of the target, so threads never re-read each other's
//! blocks); random offsets are uniform over the target, aligned to the block size.

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use vcdirect::Status;

use super::target::Target;
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

/// The six built-in profiles, in report order.
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
    ]
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
}

impl RunResult {
    /// Operations per second.
    pub fn iops(&self) -> f64 {
        let ops: u64 = self.classes.iter().map(|c| c.reads + c.writes).sum();
        ops as f64 / self.seconds.max(1e-9)
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

    let outs: Vec<Vec<SlotOut>> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for c in &profile.classes {
            let mut class_handles = Vec::new();
            let blocks_total = size / c.block as u64;
            let region_blocks = blocks_total / c.threads as u64;
            let cursors: Vec<AtomicU64> = (0..c.threads).map(|_| AtomicU64::new(0)).collect();
            let cursors = std::sync::Arc::new(cursors);
            for t in 0..c.threads {
                for _ in 0..c.outstanding {
                    seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
                    let mut rng = Rng(seed | 1);
                    let (phase, live_ops, cursors) =
                        (&phase, &live_ops, std::sync::Arc::clone(&cursors));
                    class_handles.push(s.spawn(move || {
                        let mut buf = Buf::zeroed_aligned(c.block, align);
                        for b in buf.as_mut_slice().iter_mut() {
                            *b = rng.next() as u8;
                        }
                        let mut out = SlotOut::default();
                        loop {
                            let ph = phase.load(Ordering::Acquire);
                            if ph == STOP {
                                break;
                            }
                            let offset = if c.random {
                                (rng.next() % blocks_total) * c.block as u64
                            } else {
                                let n = cursors[t].fetch_add(1, Ordering::Relaxed) % region_blocks;
                                (t as u64 * region_blocks + n) * c.block as u64
                            };
                            let write = c.write_pct >= 100
                                || (c.write_pct > 0 && (rng.next() % 100) < u64::from(c.write_pct));
                            let t0 = Instant::now();
                            let result = if write {
                                target.write(offset, &mut buf)
                            } else {
                                target.read(offset, &mut buf)
                            };
                            let lat = t0.elapsed().as_nanos() as u64;
                            match result {
                                Ok(_)
                                    if ph == MEASURE
                                        && phase.load(Ordering::Acquire) == MEASURE =>
                                {
                                    if write {
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
                                    if out.errors > 1000 {
                                        break;
                                    }
                                }
                            }
                        }
                        out
                    }));
                }
            }
            handles.push(class_handles);
        }

        std::thread::sleep(timing.warmup);
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
    fn six_builtin_profiles_with_the_seed_parameters() {
        let names: Vec<_> = builtin_profiles().into_iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "seq-read",
                "seq-write",
                "rand-read",
                "rand-write",
                "mixed-70-30",
                "seqwrite-randread"
            ]
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
