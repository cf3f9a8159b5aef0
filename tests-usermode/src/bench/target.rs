//! What the load generator drives: a [`Target`] per mode.
//!
//! The generator works like DiskSpd: each of its threads keeps its requests in flight with
//! [`Target::submit`] and learns of completions from its own [`CompletionQueue`] (DiskSpd's
//! completion port), so no thread waits for one request.
//!
//! `raw` is the host device itself, `raw-qd8` the host with at most 8 operations in flight at
//! the device (the direct path's bound, without the engine), and `legacy`/`direct` go through
//! the engine; an [`EngineFactory`] builds those. The user-mode hosts only offer a blocking
//! `wait`, so a raw target reaches the device through a pool of device threads, one per
//! operation in flight at the device (the kernel's asynchronous I/O, or the engine's direct
//! workers, stand in the same place): as many as the load keeps in flight for `raw`, 8 for
//! `raw-qd8`. A request longer than the host's maximum transfer becomes several device
//! operations in flight together, as a disk class driver splits it.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use vcdirect::platform::{HostDevice, IoBuf};
use vcdirect::Status;

use crate::host::StdHost;
use crate::request::Buf;

/// A finished operation, as a target reports it to the generator thread that issued it.
#[derive(Debug)]
pub struct Done {
    /// The issuer's tag.
    pub tag: usize,
    /// Bytes transferred, or the failure.
    pub result: Result<usize, Status>,
    /// The buffer, handed back.
    pub buf: Buf,
    /// When the target completed the operation (latency ends here, not when the generator
    /// thread gets to it).
    pub at: Instant,
}

/// One generator thread's completion queue: targets push from any thread, the one owner waits.
#[derive(Default)]
pub struct CompletionQueue {
    done: Mutex<Vec<Done>>,
    cv: Condvar,
}

impl CompletionQueue {
    /// Queues `done` and wakes the owner if it may be waiting.
    pub fn push(&self, done: Done) {
        let mut q = self.done.lock().unwrap_or_else(|e| e.into_inner());
        let was_empty = q.is_empty();
        q.push(done);
        drop(q);
        // The owner waits only on an empty queue, so only the first push after it emptied the
        // queue can find it waiting.
        if was_empty {
            self.cv.notify_one();
        }
    }

    /// Waits until at least one operation finished and moves every finished one into `out`.
    pub fn wait_into(&self, out: &mut Vec<Done>) {
        let mut q = self.done.lock().unwrap_or_else(|e| e.into_inner());
        while q.is_empty() {
            q = self.cv.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        out.append(&mut q);
    }
}

/// An operation handed to a target.
pub struct Op {
    /// Write (else read).
    pub write: bool,
    /// Byte offset.
    pub offset: u64,
    /// The data (the whole buffer is transferred).
    pub buf: Buf,
    /// Returned in [`Done::tag`].
    pub tag: usize,
    /// Where the completion goes.
    pub queue: Arc<CompletionQueue>,
    /// The issuer has no other operation in flight and waits for this one next: a raw target
    /// carries it out in the calling thread, as the old one-thread-per-I/O generator did (a
    /// lone request's latency is then the device's, without a hand-off to a device thread).
    pub alone: bool,
}

impl Op {
    /// Reports the operation finished.
    pub fn finish(queue: &CompletionQueue, tag: usize, result: Result<usize, Status>, buf: Buf) {
        queue.push(Done {
            tag,
            result,
            buf,
            at: Instant::now(),
        });
    }
}

/// A block target the generator drives from a few threads, each with many operations in
/// flight.
pub trait Target: Sync {
    /// Size in bytes.
    fn size(&self) -> u64;
    /// Buffer alignment the generator must use (a power of two).
    fn alignment(&self) -> usize;
    /// Starts `op` without waiting for it; its completion is pushed to `op.queue` exactly once,
    /// from any thread (possibly before `submit` returns). The buffer is owned so an engine
    /// target can lend it to its request without a copy (the engine decrypts in place).
    fn submit(&self, op: Op);
    /// Engine path counters after a run (JSON), when the target has any.
    fn counters(&self) -> Option<serde_json::Value> {
        None
    }
}

/// How a run reaches the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// The host device directly: no engine, no crypto (the ceiling).
    Raw,
    /// The host device with at most 8 operations in flight at the device.
    RawQd8,
    /// The engine's legacy queue.
    Legacy,
    /// The engine's direct path.
    Direct,
    /// The engine's direct path with every request issued by its workers and waited for, as
    /// before small requests went out without a waiter: measured beside the others in the
    /// same run. Not in the default set.
    DirectWorkers,
    /// The engine's direct path driven from threads that stand for the System process's (a
    /// file system's or the SMB server's workers), whose small requests the dispatching
    /// thread issues itself. `direct` drives it from an application's threads (DiskSpd's),
    /// which it never lends the mounting user's context to. Not in the default set.
    DirectSystem,
}

impl Mode {
    /// Every mode, in the order runs are interleaved.
    pub const ALL: [Mode; 6] = [
        Mode::Raw,
        Mode::RawQd8,
        Mode::Legacy,
        Mode::Direct,
        Mode::DirectWorkers,
        Mode::DirectSystem,
    ];
    /// The modes run when `--mode` is not given.
    pub const DEFAULT: [Mode; 4] = [Mode::Raw, Mode::RawQd8, Mode::Legacy, Mode::Direct];

    /// The name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Raw => "raw",
            Mode::RawQd8 => "raw-qd8",
            Mode::Legacy => "legacy",
            Mode::Direct => "direct",
            Mode::DirectWorkers => "direct-workers",
            Mode::DirectSystem => "direct-system",
        }
    }

    /// The key in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Mode::Raw => "raw",
            Mode::RawQd8 => "raw_qd8",
            Mode::Legacy => "legacy",
            Mode::Direct => "direct",
            Mode::DirectWorkers => "direct_workers",
            Mode::DirectSystem => "direct_system",
        }
    }

    /// Parses a name.
    pub fn parse(name: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == name || m.key() == name)
    }
}

/// Builds the engine-backed target of a mode (`legacy`, `direct`), or `None` when the engine
/// cannot serve that mode.
pub type EngineFactory = fn(Mode, &Arc<StdHost>) -> Option<Box<dyn Target>>;

/// The factory used until the engine is plugged in: no engine modes.
pub fn no_engine(_mode: Mode, _host: &Arc<StdHost>) -> Option<Box<dyn Target>> {
    None
}

/// Who learns that a device operation finished.
enum Owner {
    /// The operation is the whole request.
    Whole(usize, Arc<CompletionQueue>),
    /// Piece `index` of a request split at the host's maximum transfer.
    Part(usize, Arc<Parent>),
}

/// One device operation waiting for, or held by, a device thread.
struct Piece {
    write: bool,
    offset: u64,
    buf: Buf,
    owner: Owner,
}

/// A request split into pieces: completes when its last piece does.
struct Parent {
    tag: usize,
    queue: Arc<CompletionQueue>,
    state: Mutex<Assembly>,
}

struct Assembly {
    remaining: usize,
    pieces: Vec<Option<Buf>>,
    bytes: usize,
    error: Option<Status>,
}

impl Parent {
    fn piece_done(&self, index: usize, result: Result<usize, Status>, buf: Buf) {
        let mut a = self.state.lock().unwrap_or_else(|e| e.into_inner());
        a.pieces[index] = Some(buf);
        match result {
            Ok(n) => a.bytes += n,
            Err(s) => {
                a.error.get_or_insert(s);
            }
        }
        a.remaining -= 1;
        if a.remaining > 0 {
            return;
        }
        // The pieces were split off one buffer in order; joining them in order restores it.
        let mut bufs = std::mem::take(&mut a.pieces).into_iter().flatten();
        let Some(mut whole) = bufs.next() else {
            return;
        };
        for b in bufs {
            whole.unsplit(b);
        }
        let result = a.error.map_or(Ok(a.bytes), Err);
        drop(a);
        Op::finish(&self.queue, self.tag, result, whole);
    }
}

struct PoolState {
    queue: VecDeque<Piece>,
    /// Device threads holding a piece.
    busy: usize,
    /// Operations carried out by their issuing thread (`Op::alone`).
    inline: usize,
    threads: usize,
    shutdown: bool,
}

struct Shared<H> {
    host: Arc<H>,
    /// Operations in flight at the device at most (device threads and inline).
    limit: usize,
    state: Mutex<PoolState>,
    cv: Condvar,
}

/// Carries out `piece` on `host`; `release` runs after the device operation and before the
/// completion is reported (so the thread counts as free before its issuer can resubmit).
fn run_piece<H: HostDevice>(host: &H, piece: Piece, release: impl FnOnce()) {
    let Piece {
        write,
        offset,
        mut buf,
        owner,
    } = piece;
    let result = if write {
        host.write(offset, buf.as_slice())
    } else {
        host.read(offset, buf.as_mut_slice())
    };
    release();
    match owner {
        Owner::Whole(tag, queue) => Op::finish(&queue, tag, result, buf),
        Owner::Part(index, parent) => parent.piece_done(index, result, buf),
    }
}

fn device_thread<H: HostDevice>(shared: Arc<Shared<H>>) {
    loop {
        let piece = {
            let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if st.busy + st.inline < shared.limit {
                    if let Some(p) = st.queue.pop_front() {
                        st.busy += 1;
                        break p;
                    }
                }
                if st.shutdown {
                    return;
                }
                st = shared.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        run_piece(&*shared.host, piece, || {
            shared.state.lock().unwrap_or_else(|e| e.into_inner()).busy -= 1;
        });
    }
}

/// The host device as a target: requests go to the device through device threads, at most
/// `limit` operations in flight at the device.
pub struct RawTarget<H: HostDevice> {
    shared: Arc<Shared<H>>,
    /// Longest device operation: the host's maximum transfer, in whole sectors and alignment
    /// units.
    max_piece: usize,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl<H: HostDevice> RawTarget<H> {
    /// A target over `host` with as many operations in flight as the load keeps.
    pub fn new(host: Arc<H>) -> Self {
        Self::with_limit(host, usize::MAX)
    }

    /// A target over `host` with at most `limit` (at least one) operations in flight at the
    /// device.
    pub fn with_limit(host: Arc<H>, limit: usize) -> Self {
        let l = host.limits();
        let unit = (l.sector_size.max(1) as usize).max(l.alignment_mask as usize + 1);
        let mut max = l.max_transfer as usize;
        if l.max_physical_pages != u32::MAX {
            // A buffer may start anywhere in a page: one page of the limit can be partial.
            let pages = (l.max_physical_pages as usize).saturating_sub(1).max(1);
            max = max.min(pages.saturating_mul(l.page_size.max(1) as usize));
        }
        RawTarget {
            shared: Arc::new(Shared {
                host,
                limit: limit.max(1),
                state: Mutex::new(PoolState {
                    queue: VecDeque::new(),
                    busy: 0,
                    inline: 0,
                    threads: 0,
                    shutdown: false,
                }),
                cv: Condvar::new(),
            }),
            max_piece: (max / unit * unit).max(unit),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// Device threads started so far.
    pub fn device_threads(&self) -> usize {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .threads
    }

    /// Starts a device thread; false if the OS refused.
    fn spawn(&self) -> bool {
        let shared = Arc::clone(&self.shared);
        match std::thread::Builder::new()
            .name("vcbench-device".into())
            .spawn(move || device_thread(shared))
        {
            Ok(h) => {
                self.threads
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(h);
                true
            }
            Err(_) => false,
        }
    }
}

impl<H: HostDevice> Target for RawTarget<H> {
    fn size(&self) -> u64 {
        self.shared.host.size()
    }
    fn alignment(&self) -> usize {
        (self.shared.host.limits().alignment_mask as usize + 1).max(512)
    }
    fn submit(&self, op: Op) {
        let Op {
            write,
            offset,
            buf,
            tag,
            queue,
            alone,
        } = op;
        let len = buf.as_slice().len();
        let mut st = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        let count = len.div_ceil(self.max_piece).max(1);
        if alone && count == 1 && st.busy + st.inline < self.shared.limit {
            st.inline += 1;
            drop(st);
            let piece = Piece {
                write,
                offset,
                buf,
                owner: Owner::Whole(tag, queue),
            };
            run_piece(&*self.shared.host, piece, || {
                let mut st = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
                st.inline -= 1;
                let waiting = !st.queue.is_empty();
                drop(st);
                if waiting {
                    self.shared.cv.notify_one();
                }
            });
            return;
        }
        if count == 1 {
            st.queue.push_back(Piece {
                write,
                offset,
                buf,
                owner: Owner::Whole(tag, queue),
            });
        } else {
            let parent = Arc::new(Parent {
                tag,
                queue,
                state: Mutex::new(Assembly {
                    remaining: count,
                    pieces: (0..count).map(|_| None).collect(),
                    bytes: 0,
                    error: None,
                }),
            });
            let mut rest = buf;
            for index in 0..count {
                let piece = if index + 1 == count {
                    std::mem::replace(&mut rest, Buf::zeroed_aligned(0, 1))
                } else {
                    rest.split_to(self.max_piece)
                };
                st.queue.push_back(Piece {
                    write,
                    offset: offset + (index * self.max_piece) as u64,
                    buf: piece,
                    owner: Owner::Part(index, Arc::clone(&parent)),
                });
            }
        }
        // Every queued piece needs a device thread not holding one (waiting, woken, just
        // started or just done); start more up to the limit.
        while st.queue.len() > st.threads - st.busy && st.threads < self.shared.limit {
            if !self.spawn() {
                break;
            }
            st.threads += 1;
        }
        if st.threads == 0 {
            // No device thread could be started: carry the pieces out here.
            let pieces: Vec<Piece> = st.queue.drain(..).collect();
            drop(st);
            for p in pieces {
                run_piece(&*self.shared.host, p, || {});
            }
            return;
        }
        drop(st);
        for _ in 0..count {
            self.shared.cv.notify_one();
        }
    }
}

impl<H: HostDevice> Drop for RawTarget<H> {
    fn drop(&mut self) {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .shutdown = true;
        self.shared.cv.notify_all();
        for h in self
            .threads
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = h.join();
        }
    }
}

/// The target of `mode` over `host`, or `None` when the mode is not available.
pub fn target_for(
    mode: Mode,
    host: &Arc<StdHost>,
    engine: EngineFactory,
) -> Option<Box<dyn Target>> {
    match mode {
        Mode::Raw => Some(Box::new(RawTarget::new(Arc::clone(host)))),
        Mode::RawQd8 => Some(Box::new(RawTarget::with_limit(Arc::clone(host), 8))),
        Mode::Legacy | Mode::Direct | Mode::DirectWorkers | Mode::DirectSystem => {
            engine(mode, host)
        }
    }
}

/// Runs `ops` (write, offset, buffer) on `target` from the calling thread, all in flight at
/// once, and returns their completions in submission order.
pub fn run_all(target: &dyn Target, ops: Vec<(bool, u64, Buf)>) -> Vec<Done> {
    let queue = Arc::new(CompletionQueue::default());
    let n = ops.len();
    for (tag, (write, offset, buf)) in ops.into_iter().enumerate() {
        target.submit(Op {
            write,
            offset,
            buf,
            tag,
            queue: Arc::clone(&queue),
            alone: n == 1,
        });
    }
    let mut done = Vec::with_capacity(n);
    while done.len() < n {
        queue.wait_into(&mut done);
    }
    done.sort_by_key(|d| d.tag);
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{MemoryHost, ReadyIo};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    use vcdirect::platform::{HostKind, HostLimits};

    /// A memory host that counts the operations inside it at once.
    struct Counting {
        mem: MemoryHost,
        inside: AtomicUsize,
        peak: AtomicUsize,
    }

    impl Counting {
        fn enter(&self) {
            let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_micros(300));
            self.inside.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl HostDevice for Counting {
        type Io<'a> = ReadyIo<'a>;
        type Read<'a> = vcdirect::platform::KeptRead<'a, ReadyIo<'a>>;
        fn kind(&self) -> HostKind {
            self.mem.kind()
        }
        fn size(&self) -> u64 {
            self.mem.size()
        }
        fn limits(&self) -> HostLimits {
            self.mem.limits()
        }
        fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadyIo<'a> {
            self.enter();
            self.mem.start_read(offset, buf)
        }
        fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
            self.enter();
            self.mem.start_read_kept(offset, buf)
        }
        fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> ReadyIo<'a> {
            self.enter();
            self.mem.start_write(offset, buf)
        }
        fn flush(&self) -> Result<(), Status> {
            self.mem.flush()
        }
    }

    fn counting(limits: HostLimits) -> Arc<Counting> {
        Arc::new(Counting {
            mem: MemoryHost::new(1 << 20).with_limits(limits),
            inside: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        })
    }

    #[test]
    fn a_limited_raw_target_keeps_at_most_its_limit_at_the_device() {
        let host = counting(HostLimits::unlimited());
        let target = RawTarget::with_limit(Arc::clone(&host), 3);
        let ops = (0..24)
            .map(|i| (false, i * 4096, Buf::zeroed_aligned(4096, 4096)))
            .collect();
        let done = run_all(&target, ops);
        assert!(done.iter().all(|d| d.result == Ok(4096)));
        assert!(host.peak.load(Ordering::SeqCst) <= 3);
        assert!(target.device_threads() <= 3);
    }

    #[test]
    fn a_lone_operation_runs_in_its_issuers_thread_within_the_limit() {
        let host = counting(HostLimits::unlimited());
        let target = RawTarget::with_limit(Arc::clone(&host), 2);
        let done = run_all(&target, vec![(false, 0, Buf::zeroed_aligned(4096, 4096))]);
        assert_eq!(done[0].result, Ok(4096));
        assert_eq!(target.device_threads(), 0);
        // Lone operations from many threads, beside a batch, still respect the limit.
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let target = &target;
                s.spawn(move || {
                    for i in 0..10 {
                        let off = (t * 10 + i) * 4096;
                        let d =
                            run_all(target, vec![(false, off, Buf::zeroed_aligned(4096, 4096))]);
                        assert_eq!(d[0].result, Ok(4096));
                    }
                });
            }
            let ops = (0..16)
                .map(|i| (true, i * 4096, Buf::zeroed_aligned(4096, 4096)))
                .collect();
            assert!(run_all(&target, ops).iter().all(|d| d.result == Ok(4096)));
        });
        assert!(host.peak.load(Ordering::SeqCst) <= 2);
    }

    #[test]
    fn an_unlimited_raw_target_starts_a_device_thread_per_operation_in_flight() {
        let host = counting(HostLimits::unlimited());
        let target = RawTarget::new(Arc::clone(&host));
        let ops = (0..6)
            .map(|i| (false, i * 4096, Buf::zeroed_aligned(4096, 4096)))
            .collect();
        let done = run_all(&target, ops);
        assert_eq!(done.len(), 6);
        assert!((1..=6).contains(&target.device_threads()));
    }

    #[test]
    fn requests_longer_than_the_maximum_transfer_are_split_and_joined_back() {
        let limits = HostLimits {
            max_transfer: 8192,
            ..HostLimits::unlimited()
        };
        let host = counting(limits);
        let target = RawTarget::new(Arc::clone(&host));
        let data: Vec<u8> = (0..65536u32).map(|i| (i % 251) as u8).collect();
        let done = run_all(&target, vec![(true, 4096, Buf::from_slice(&data))]);
        assert_eq!(done[0].result, Ok(65536));
        assert_eq!(host.mem.counters().writes, 8);
        let back = run_all(
            &target,
            vec![(false, 4096, Buf::zeroed_aligned(65536, 4096))],
        );
        assert_eq!(back[0].result, Ok(65536));
        assert_eq!(back[0].buf.as_slice(), &data[..]);
        // A failed piece fails the request, with the host's status.
        host.mem.fail_range(20480..20481, Status::IoDeviceError);
        let bad = run_all(
            &target,
            vec![(false, 4096, Buf::zeroed_aligned(65536, 4096))],
        );
        assert_eq!(bad[0].result, Err(Status::IoDeviceError));
        assert_eq!(bad[0].buf.as_slice().len(), 65536);
    }

    #[test]
    fn modes_parse_by_name_and_key_and_engine_modes_are_absent_without_engine() {
        assert_eq!(Mode::parse("raw-qd8"), Some(Mode::RawQd8));
        assert_eq!(Mode::parse("raw_qd8"), Some(Mode::RawQd8));
        assert_eq!(Mode::parse("fast"), None);
        let host = Arc::new(StdHost::from_spec("memory:1M", 0).unwrap());
        assert!(target_for(Mode::Raw, &host, no_engine).is_some());
        assert!(target_for(Mode::RawQd8, &host, no_engine).is_some());
        assert!(target_for(Mode::Direct, &host, no_engine).is_none());
    }
}
