//! A modelled device (docs/design.md §9): memory-backed, with the timing of an NVMe drive.
//!
//! Each operation takes a channel (at most `channels` in progress; later ones wait for the
//! earliest free channel), spends the fixed latency, then transfers its bytes through the
//! device's bandwidth. Transfers are served in arrival order at the full device rate, which
//! gives the same total throughput as sharing the bandwidth among the operations in progress,
//! and the operation holds its channel until its transfer ends.
//!
//! The timeline is computed when the operation starts (the data moves then too); `wait`
//! blocks until the computed completion time. Completions are signalled by one timer thread
//! that keeps the deadlines in order, sleeps with a 1 ns timer slack (Linux's default 50 us
//! slack would add tens of microseconds to every operation) and spins the last few
//! microseconds.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::marker::PhantomData;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vcdirect::platform::{Detached, HostDevice, HostIo, HostKind, HostLimits, KeptRead, Origin};
use vcdirect::Status;

use super::{HostCounters, MemoryHost, SpecError};

/// Below this much time to its deadline the timer thread spins instead of sleeping.
const SPIN: Duration = Duration::from_micros(8);

/// The modelled device's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelParams {
    /// Name of the preset (`nvme`).
    pub preset: &'static str,
    /// Fixed latency of every operation.
    pub latency: Duration,
    /// Device bandwidth in bytes per second (shared by all operations).
    pub bytes_per_sec: f64,
    /// Operations in progress at most.
    pub channels: usize,
    /// Longest transfer the device takes in one operation, reported in its limits so the
    /// engine segments by it; `None`: no limit. Many NVMe stacks report 128 KiB. A longer
    /// operation is split into device operations in flight together, as the disk class driver
    /// under a Windows partition splits it (so the legacy queue's large fragments still work).
    pub max_transfer: Option<u32>,
}

impl ModelParams {
    /// The `nvme` preset: 80 us, 3.5 GB/s, 32 channels.
    pub const fn nvme() -> Self {
        ModelParams {
            preset: "nvme",
            latency: Duration::from_micros(80),
            bytes_per_sec: 3.5e9,
            channels: 32,
            max_transfer: None,
        }
    }

    /// Parses `nvme[,lat_us=N][,gbps=G][,channels=C][,max-transfer=M][,size=S]` (gbps in 10^9
    /// bytes/s; M and S with an optional K/M/G suffix, M a non-zero multiple of 512).
    /// Returns the parameters and the size, if given.
    pub fn parse(text: &str) -> Result<(ModelParams, Option<u64>), SpecError> {
        let mut parts = text.split(',');
        let mut p = match parts.next() {
            Some("nvme") => ModelParams::nvme(),
            other => return Err(SpecError(format!("unknown model {other:?} (known: nvme)"))),
        };
        let mut size = None;
        for part in parts {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| SpecError(format!("model option {part:?} is not key=value")))?;
            let num = || -> Result<f64, SpecError> {
                value
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .ok_or_else(|| {
                        SpecError(format!(
                            "model option {key}: {value:?} is not a positive number"
                        ))
                    })
            };
            match key {
                "lat_us" => p.latency = Duration::from_secs_f64(num()? / 1e6),
                "gbps" => p.bytes_per_sec = num()? * 1e9,
                "channels" => p.channels = (num()? as usize).max(1),
                "size" => size = Some(super::parse_size(value)?),
                "max-transfer" | "max_transfer" => {
                    let m = super::parse_size(value)?;
                    if m == 0 || !m.is_multiple_of(512) || m > u64::from(u32::MAX) {
                        return Err(SpecError(format!(
                            "model option {key}: {value:?} is not a non-zero multiple of 512 below 4 GiB"
                        )));
                    }
                    p.max_transfer = Some(m as u32);
                }
                _ => {
                    return Err(SpecError(format!(
                        "unknown model option {key:?} (lat_us, gbps, channels, max-transfer, size)"
                    )))
                }
            }
        }
        Ok((p, size))
    }
}

impl std::fmt::Display for ModelParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "model:{},lat_us={},gbps={},channels={}",
            self.preset,
            self.latency.as_secs_f64() * 1e6,
            self.bytes_per_sec / 1e9,
            self.channels
        )?;
        match self.max_transfer {
            Some(m) if m % 1024 == 0 => write!(f, ",max-transfer={}K", m / 1024),
            Some(m) => write!(f, ",max-transfer={m}"),
            None => Ok(()),
        }
    }
}

/// The completion flag of one operation.
struct Slot {
    done: Mutex<bool>,
    cv: Condvar,
    deadline: Instant,
    /// How long before the deadline the waiter stops sleeping and yields in a loop.
    spin: Duration,
}

/// The waiter's final yield loop when the device is nearly idle (few operations pending), where
/// latency accuracy matters most and the CPU is free.
const WAITER_SPIN: Duration = Duration::from_micros(50);
const SPIN_WHEN_PENDING_AT_MOST: usize = 4;

thread_local! {
    static LOW_SLACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Slot {
    fn signal(&self) {
        crate::irql::check(vcdirect::platform::irql::Call::Signal);
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    /// Returns at the operation's completion time. When the device was nearly idle at
    /// submission (`spin` non-zero), the waiter times itself (1 ns timer slack, then yields
    /// for the last microseconds): being woken by the timer thread costs tens of microseconds
    /// here and would distort the latency of a lone operation (docs/design.md §9). Under load it
    /// waits for the timer thread's signal, which measured ~13 % more throughput here than
    /// every waiter timing itself.
    fn wait(&self) {
        if self.spin.is_zero() {
            let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            while !*done {
                done = self.cv.wait(done).unwrap_or_else(|e| e.into_inner());
            }
            return;
        }
        if !LOW_SLACK.with(|s| s.replace(true)) {
            set_low_timer_slack();
        }
        let now = Instant::now();
        if self.deadline > now + self.spin {
            std::thread::sleep(self.deadline - now - self.spin);
        }
        while Instant::now() < self.deadline {
            if *self.done.lock().unwrap_or_else(|e| e.into_inner()) {
                return;
            }
            std::thread::yield_now();
        }
    }
}

/// What the device does when an operation's time comes.
enum Done {
    /// Wakes the thread that waits for it.
    Wake(Arc<Slot>),
    /// Reports a detached read to the engine (its completion routine, at DISPATCH_LEVEL).
    Report(Detached, Result<usize, Status>),
}

impl Done {
    fn run(self, sched: &Scheduler) {
        match self {
            Done::Wake(slot) => slot.signal(),
            Done::Report(then, result) => {
                then.report(result);
                let mut n = sched.reports.lock().unwrap_or_else(|e| e.into_inner());
                *n -= 1;
                sched.reported.notify_all();
            }
        }
    }
}

struct Pending {
    deadline: Instant,
    seq: u64,
    done: Done,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline, self.seq) == (other.deadline, other.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

struct Timeline {
    /// When each channel is free again (min-heap, `channels` entries).
    channel_free: BinaryHeap<Reverse<Instant>>,
    /// When the transfer pipe is free again.
    pipe_free: Instant,
    pending: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    shutdown: bool,
}

struct Scheduler {
    state: Mutex<Timeline>,
    cv: Condvar,
    /// Completions signalled at DISPATCH_LEVEL (all of them: W9).
    raised_completions: std::sync::atomic::AtomicU64,
    /// Operations started by a thread not in the mounting user's context (R11: always 0).
    foreign_contexts: std::sync::atomic::AtomicU64,
    /// Detached reads whose report has not returned yet, and its change.
    reports: Mutex<usize>,
    reported: Condvar,
}

/// A modelled device. See the module documentation.
pub struct ModelHost {
    mem: MemoryHost,
    params: ModelParams,
    sched: Arc<Scheduler>,
    timer: Option<JoinHandle<()>>,
}

/// A started operation of a [`ModelHost`].
pub struct ModelIo<'a> {
    result: Result<usize, Status>,
    slot: Option<Arc<Slot>>,
    _buf: PhantomData<&'a mut [u8]>,
}

impl HostIo for ModelIo<'_> {
    #[track_caller]
    fn wait(mut self) -> Result<usize, Status> {
        crate::irql::check(vcdirect::platform::irql::Call::Wait);
        if let Some(slot) = self.slot.take() {
            slot.wait();
        }
        self.result
    }
}

impl Drop for ModelIo<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            crate::irql::check(vcdirect::platform::irql::Call::Wait);
            slot.wait();
        }
    }
}

/// Sets this thread's timer slack to 1 ns, so its timed sleeps end when asked.
#[allow(unsafe_code)]
fn set_low_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer argument and changes only the calling
    // thread's timer slack; no memory is passed to the kernel.
    unsafe {
        libc::prctl(
            libc::PR_SET_TIMERSLACK,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
}

fn timer_thread(sched: Arc<Scheduler>) {
    set_low_timer_slack();
    let mut st = sched.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if st.shutdown {
            // Ios borrow the host, so none is pending when it is dropped; finish any anyway.
            while let Some(Reverse(p)) = st.pending.pop() {
                p.done.run(&sched);
            }
            return;
        }
        let Some(Reverse(head)) = st.pending.peek() else {
            st = sched.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let deadline = head.deadline;
        // A detached read's end is the device's interrupt: on real hardware its completion
        // routine runs on time, so the timer thread spins as long before it as a lone waiter
        // times itself (a timed sleep's wake-up here is late by tens of microseconds). That
        // spin is the model's CPU time, counted with the engine's at low queue depth.
        let spin = match head.done {
            Done::Report(..) if st.pending.len() < SPIN_WHEN_PENDING_AT_MOST => WAITER_SPIN,
            _ => SPIN,
        };
        let now = Instant::now();
        if deadline <= now {
            let mut due = Vec::new();
            while st
                .pending
                .peek()
                .is_some_and(|Reverse(p)| p.deadline <= now)
            {
                if let Some(Reverse(p)) = st.pending.pop() {
                    due.push(p.done);
                }
            }
            drop(st);
            // The device's completions: IoCompletion routines run at DISPATCH_LEVEL (W9).
            crate::irql::raised(vcdirect::platform::irql::Irql::Dispatch, || {
                if crate::irql::level() == vcdirect::platform::irql::Irql::Dispatch {
                    sched
                        .raised_completions
                        .fetch_add(due.len() as u64, std::sync::atomic::Ordering::Relaxed);
                }
                for done in due {
                    done.run(&sched);
                }
            });
            st = sched.state.lock().unwrap_or_else(|e| e.into_inner());
        } else if deadline - now > spin {
            st = sched
                .cv
                .wait_timeout(st, deadline - now - spin)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        } else {
            drop(st);
            while Instant::now() < deadline {
                std::hint::spin_loop();
            }
            st = sched.state.lock().unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl ModelHost {
    /// A modelled device of `size` bytes.
    pub fn new(size: u64, params: ModelParams) -> Self {
        let now = Instant::now();
        let sched = Arc::new(Scheduler {
            state: Mutex::new(Timeline {
                channel_free: (0..params.channels.max(1)).map(|_| Reverse(now)).collect(),
                pipe_free: now,
                pending: BinaryHeap::new(),
                seq: 0,
                shutdown: false,
            }),
            raised_completions: std::sync::atomic::AtomicU64::new(0),
            foreign_contexts: std::sync::atomic::AtomicU64::new(0),
            cv: Condvar::new(),
            reports: Mutex::new(0),
            reported: Condvar::new(),
        });
        let timer = {
            let sched = Arc::clone(&sched);
            std::thread::Builder::new()
                .name("model-timer".into())
                .spawn(move || timer_thread(sched))
                .ok()
        };
        ModelHost {
            mem: MemoryHost::new(size),
            params,
            sched,
            timer,
        }
    }

    /// The parameters.
    pub fn params(&self) -> ModelParams {
        self.params
    }

    /// The memory behind the model (faults, snapshot).
    pub fn memory(&self) -> &MemoryHost {
        &self.mem
    }

    /// The counters so far.
    pub fn counters(&self) -> HostCounters {
        self.mem.counters()
    }

    /// Operations whose completion the device signalled at DISPATCH_LEVEL, as an IoCompletion
    /// routine runs (W9); operations that complete at once are not signalled.
    pub fn completions_at_dispatch(&self) -> u64 {
        self.sched
            .raised_completions
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Operations started by a thread that was not in the mounting user's security context
    /// (docs/review.md R11: always 0).
    pub fn foreign_contexts(&self) -> u64 {
        self.sched
            .foreign_contexts
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts a start outside the mounting user's context (R11).
    fn note_context(&self) {
        if crate::security::current() != crate::security::Context::MountingUser {
            self.sched
                .foreign_contexts
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Places an operation of `bytes` on the timeline (as device operations of at most the
    /// maximum transfer, each on its own channel) and returns its completion flag.
    fn schedule(&self, bytes: usize) -> Option<Arc<Slot>> {
        // Without the timer thread nothing would ever signal; complete at once instead.
        self.timer.as_ref()?;
        let mut slot = None;
        self.place(bytes, |deadline, spin| {
            let s = Arc::new(Slot {
                done: Mutex::new(false),
                cv: Condvar::new(),
                deadline,
                spin,
            });
            slot = Some(Arc::clone(&s));
            Done::Wake(s)
        });
        slot
    }

    /// Places an operation of `bytes` on the timeline; `done(deadline, waiter spin)` says
    /// what happens when its time comes.
    fn place(&self, bytes: usize, done: impl FnOnce(Instant, Duration) -> Done) {
        let now = Instant::now();
        let piece_max = self.params.max_transfer.map_or(usize::MAX, |m| m as usize);
        let mut st = self.sched.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut left = bytes;
        let deadline = loop {
            let piece = left.min(piece_max);
            left -= piece;
            let transfer = Duration::from_secs_f64(piece as f64 / self.params.bytes_per_sec);
            let Reverse(channel_free) = st.channel_free.pop().unwrap_or(Reverse(now));
            let admitted = channel_free.max(now);
            let transfer_start = (admitted + self.params.latency).max(st.pipe_free);
            let end = transfer_start + transfer;
            st.pipe_free = end;
            st.channel_free.push(Reverse(end));
            if left == 0 {
                break end;
            }
        };
        let spin = if st.pending.len() < SPIN_WHEN_PENDING_AT_MOST {
            WAITER_SPIN
        } else {
            Duration::ZERO
        };
        st.seq += 1;
        let seq = st.seq;
        let is_head = st
            .pending
            .peek()
            .is_none_or(|Reverse(p)| deadline < p.deadline);
        st.pending.push(Reverse(Pending {
            deadline,
            seq,
            done: done(deadline, spin),
        }));
        drop(st);
        if is_head {
            self.sched.cv.notify_one();
        }
    }

    /// Reports a detached operation whose data moved with `result`: at its time on the
    /// timeline, or at once when it failed (a failed operation takes no device time).
    fn detach(&self, result: Result<usize, Status>, then: Detached) {
        self.note_context();
        match result {
            Ok(n) => {
                *self.sched.reports.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                self.place(n, |_, _| Done::Report(then, result));
            }
            Err(_) => super::report_now(result, then),
        }
    }

    fn io<'a>(&self, result: Result<usize, Status>) -> ModelIo<'a> {
        self.note_context();
        let slot = match result {
            Ok(n) => self.schedule(n),
            Err(_) => None,
        };
        ModelIo {
            result,
            slot,
            _buf: PhantomData,
        }
    }
}

impl Drop for ModelHost {
    fn drop(&mut self) {
        self.sched
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .shutdown = true;
        self.sched.cv.notify_all();
        if let Some(t) = self.timer.take() {
            let _ = t.join();
        }
    }
}

impl HostDevice for ModelHost {
    type Io<'a> = ModelIo<'a>;
    type Read<'a> = KeptRead<'a, ModelIo<'a>>;

    fn kind(&self) -> HostKind {
        self.mem.kind()
    }
    fn size(&self) -> u64 {
        self.mem.size()
    }
    fn limits(&self) -> HostLimits {
        let limits = self.mem.limits();
        HostLimits {
            max_transfer: self.params.max_transfer.unwrap_or(limits.max_transfer),
            ..limits
        }
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ModelIo<'a> {
        let result = self.mem.do_read(offset, buf);
        self.io(result)
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        let result = self.mem.do_read(offset, buf);
        KeptRead::new(self.io(result), buf)
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> ModelIo<'a> {
        let result = self.mem.do_write(offset, buf);
        self.io(result)
    }
    /// The data moves now, as for every operation of the model; the timer thread reports the
    /// end at its time, at DISPATCH_LEVEL as an IoCompletion routine runs (W9).
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        _origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        if self.timer.is_none() {
            return Err(Status::InvalidDeviceRequest);
        }
        let result = self.mem.do_read(offset, buf);
        self.detach(result, then);
        Ok(())
    }
    /// As [`start_read_detached`](Self::start_read_detached), for a write.
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        _origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        if self.timer.is_none() {
            return Err(Status::InvalidDeviceRequest);
        }
        let result = self.mem.do_write(offset, buf);
        self.detach(result, then);
        Ok(())
    }
    /// Waits until the timer thread returned from every report it made.
    fn drain(&self) {
        let mut n = self.sched.reports.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            n = self
                .sched
                .reported
                .wait(n)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
    fn flush(&self) -> Result<(), Status> {
        self.mem.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_presets_and_options_and_rejects_bad_ones() {
        let (p, size) = ModelParams::parse("nvme").unwrap();
        assert_eq!((p, size), (ModelParams::nvme(), None));
        let (p, size) = ModelParams::parse("nvme,lat_us=50,gbps=1.5,channels=4,size=1M").unwrap();
        assert_eq!(p.latency, Duration::from_micros(50));
        assert_eq!(p.bytes_per_sec, 1.5e9);
        assert_eq!(p.channels, 4);
        assert_eq!(size, Some(1 << 20));
        assert!(p.to_string().starts_with("model:nvme,lat_us=50"));
        for bad in [
            "hdd",
            "nvme,lat_us",
            "nvme,lat_us=-1",
            "nvme,gbps=0",
            "nvme,speed=3",
            "nvme,lat_us=nan",
            "nvme,max-transfer=0",
            "nvme,max-transfer=1000",
            "nvme,max-transfer=8G",
        ] {
            assert!(ModelParams::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_maximum_transfer_is_reported_and_longer_operations_are_split() {
        let (p, _) = ModelParams::parse("nvme,max-transfer=128K").unwrap();
        assert_eq!(p.max_transfer, Some(128 * 1024));
        assert!(p.to_string().ends_with(",max-transfer=128K"), "{p}");
        assert_eq!(
            ModelParams::parse(&p.to_string()["model:".len()..])
                .unwrap()
                .0,
            p
        );
        let h = ModelHost::new(1 << 20, p);
        assert_eq!(h.limits().max_transfer, 128 * 1024);
        // A longer operation is two device operations: on one channel with 2 ms each, at
        // least 4 ms.
        let p = ModelParams {
            latency: Duration::from_millis(2),
            channels: 1,
            ..p
        };
        let h = ModelHost::new(1 << 20, p);
        let mut buf = vec![0u8; 256 * 1024];
        let t = Instant::now();
        assert_eq!(h.read(0, &mut buf), Ok(256 * 1024));
        assert!(t.elapsed() >= Duration::from_millis(4), "{:?}", t.elapsed());
        let unlimited = ModelHost::new(1 << 20, ModelParams::nvme());
        assert_eq!(unlimited.limits(), HostLimits::unlimited());
        assert!(!ModelParams::nvme().to_string().contains("max-transfer"));
    }

    #[test]
    fn data_round_trips_and_faults_apply() {
        let h = ModelHost::new(1 << 20, ModelParams::nvme());
        let data = vec![0x5Au8; 4096];
        assert_eq!(h.write(4096, &data), Ok(4096));
        let mut back = vec![0u8; 4096];
        assert_eq!(h.read(4096, &mut back), Ok(4096));
        assert_eq!(back, data);
        h.memory().fail_range(0..512, Status::IoDeviceError);
        assert_eq!(h.read(0, &mut back), Err(Status::IoDeviceError));
        assert_eq!(h.counters().failures, 1);
    }

    #[test]
    fn qd1_latency_is_close_to_the_configured_one() {
        // Generous bounds: this checks the model, not the machine's speed.
        let p = ModelParams {
            latency: Duration::from_micros(200),
            ..ModelParams::nvme()
        };
        let h = ModelHost::new(1 << 20, p);
        let mut buf = vec![0u8; 4096];
        let n = 200;
        let t = Instant::now();
        for i in 0..n {
            h.read((i % 64) * 4096, &mut buf).unwrap();
        }
        let mean = t.elapsed() / n as u32;
        assert!(
            mean >= Duration::from_micros(200),
            "{mean:?} is shorter than the model's latency"
        );
    }

    #[test]
    fn bandwidth_caps_throughput_of_parallel_large_ops() {
        // 0.5 GB/s: 16 x 1 MiB ops from 8 threads need at least 33 ms of transfer.
        let p = ModelParams {
            latency: Duration::from_micros(10),
            bytes_per_sec: 0.5e9,
            ..ModelParams::nvme()
        };
        let h = Arc::new(ModelHost::new(16 << 20, p));
        let t = Instant::now();
        let threads: Vec<_> = (0..8u64)
            .map(|i| {
                let h = Arc::clone(&h);
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 1 << 20];
                    for j in 0..2 {
                        h.read((i * 2 + j) << 20, &mut buf).unwrap();
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        let elapsed = t.elapsed();
        let floor = Duration::from_secs_f64(16.0 * (1 << 20) as f64 / 0.5e9);
        assert!(
            elapsed >= floor,
            "{elapsed:?} beats the bandwidth floor {floor:?}"
        );
    }

    #[test]
    fn channels_bound_operations_in_progress() {
        // One channel, 2 ms latency: 4 parallel ops take at least 8 ms.
        let p = ModelParams {
            latency: Duration::from_millis(2),
            channels: 1,
            ..ModelParams::nvme()
        };
        let h = Arc::new(ModelHost::new(1 << 20, p));
        let t = Instant::now();
        let threads: Vec<_> = (0..4u64)
            .map(|i| {
                let h = Arc::clone(&h);
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 512];
                    h.read(i * 512, &mut buf).unwrap();
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert!(t.elapsed() >= Duration::from_millis(8), "{:?}", t.elapsed());
    }

    #[test]
    fn dropping_an_unwaited_io_waits_for_its_completion() {
        let p = ModelParams {
            latency: Duration::from_millis(5),
            ..ModelParams::nvme()
        };
        let h = ModelHost::new(1 << 20, p);
        let mut buf = vec![0u8; 512];
        let t = Instant::now();
        drop(h.start_read(0, &mut buf));
        assert!(t.elapsed() >= Duration::from_millis(5));
    }
}
