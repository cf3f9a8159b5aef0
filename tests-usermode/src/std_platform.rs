//! The std platform: real threads, std locks, a rayon pool as VeraCrypt's encryption thread
//! pool, and a growing pool of "system worker" threads for completion work items.
//!
//! Every thread keeps a virtual IRQL (docs/review.md W9, `crate::irql`): engine threads and
//! work items start and must end at PASSIVE_LEVEL, and a broken contract panics with its site.
//! A panic on an engine thread or a system worker aborts the process after printing it: the
//! thread would otherwise die with requests in its hands, and the test would only see a
//! timeout (or hang) instead of the panic's message.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use vcdirect::crypto::KeyBlockWatch;
use vcdirect::platform::irql::Call;
use vcdirect::platform::{HostDevice, Piece, Platform, ThreadRole, WorkItems};
use vcdirect::Status;

use crate::key_blocks::KeyBlockRecorder;
use crate::request::TestRequest;

crate::condvar_sync::condvar_primitives!(
    "std",
    StdLock,
    StdEvent,
    StdSemaphore,
    StdThread,
    std::thread::JoinHandle<()>
);

/// Runs an engine thread's body or a work item (entered at PASSIVE_LEVEL, which it must
/// return at). A panic aborts the process once the panic hook has printed it (see the module
/// documentation).
fn run_as_system(what: &str, f: impl FnOnce()) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        f();
        crate::irql::check_returned_at_passive();
    }));
    if outcome.is_err() {
        eprintln!("{what} panicked (message above); aborting: it would leave requests hanging");
        std::process::abort();
    }
}

struct PoolState<T> {
    /// Payloads queued and not yet taken by a thread (room for all, reserved at creation).
    items: VecDeque<T>,
    /// Threads waiting for a payload.
    idle: usize,
    /// Threads started.
    threads: usize,
    /// The pool was dropped: its threads end.
    stop: bool,
}

struct Pool<T> {
    state: Mutex<PoolState<T>>,
    cv: Condvar,
    run: fn(T),
    /// Most threads (and payloads queued or running) at once.
    count: usize,
}

/// The std platform's preallocated work items: the payloads wait in a queue sized at creation
/// and the pool's own threads run them, a new thread whenever none is idle, up to `count` (the
/// bound the caller keeps), so a blocked routine never holds up another (docs/review.md R1).
/// Once as many threads run as were ever needed at once, queueing allocates nothing.
pub struct StdWorkItems<T: Send + 'static> {
    pool: Arc<Pool<T>>,
}

impl<T: Send + 'static> Pool<T> {
    fn start_thread(self: &Arc<Self>) {
        let me = Arc::clone(self);
        std::thread::Builder::new()
            .name("system-worker".into())
            .spawn(move || me.serve())
            .expect("spawn a system worker");
    }

    fn serve(&self) {
        // A system worker thread of the System process (what the R1 upper completions run on).
        crate::security::set_caller(crate::security::Caller::System);
        let mut s = lock(&self.state);
        loop {
            if let Some(item) = s.items.pop_front() {
                drop(s);
                run_as_system("a work item", || (self.run)(item));
                s = lock(&self.state);
                continue;
            }
            if s.stop {
                return;
            }
            s.idle += 1;
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
            s.idle -= 1;
        }
    }
}

impl<T: Send + 'static> WorkItems<T> for StdWorkItems<T> {
    #[track_caller]
    fn queue(&self, item: T) -> Result<(), T> {
        crate::irql::check(Call::QueueWorkItem);
        let mut s = lock(&self.pool.state);
        s.items.push_back(item);
        let start = s.items.len() > s.idle && s.threads < self.pool.count;
        if start {
            s.threads += 1;
        }
        // With no thread idle, a busy one takes the payload when it looks again: no wake-up.
        let idle = s.idle > 0;
        drop(s);
        if start {
            self.pool.start_thread();
        } else if idle {
            self.pool.cv.notify_one();
        }
        Ok(())
    }
}

impl<T: Send + 'static> Drop for StdWorkItems<T> {
    fn drop(&mut self) {
        lock(&self.pool.state).stop = true;
        self.pool.cv.notify_all();
    }
}

/// Engine threads (`Platform::spawn`) of one platform and its clones: how many run, and the
/// fault switch that fails one spawn.
#[derive(Default)]
struct EngineThreads {
    /// Threads spawned whose body has not returned yet.
    alive: AtomicUsize,
    /// Spawns so far (successful or failed).
    spawned: AtomicUsize,
    /// Fail the spawn with this 1-based number with this status (W3).
    fail_at: Mutex<Option<(usize, Status)>>,
}

/// Decrements the live count when a thread body returns (or unwinds).
struct AliveGuard(Arc<EngineThreads>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.alive.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The std platform for volumes on hosts of type `H`.
pub struct StdPlatform<H> {
    crypto: Arc<rayon::ThreadPool>,
    engine: Arc<EngineThreads>,
    cpus: usize,
    /// Run the encryption pool's pieces in order on the caller (see `with_inline_pieces`).
    inline_pieces: bool,
    /// Start every work-item thread when the work items are made (see `with_eager_work_items`).
    eager_work_items: bool,
    /// Small direct requests may go out without a waiter (see `without_detached`).
    detached: bool,
    /// Large buffers may run on the VAES path where the CPU has it (see `without_wide_vectors`).
    wide: bool,
    /// Every key block of this platform's volumes, as the engine's key-block watch shows them
    /// (docs/review.md R3: `crate::key_blocks`).
    key_blocks: Arc<KeyBlockRecorder>,
    /// Buffers the engine handed to the encryption pool in pieces (`crypto_splits`).
    splits: Arc<AtomicU64>,
    _host: PhantomData<fn() -> H>,
}

impl<H> Clone for StdPlatform<H> {
    fn clone(&self) -> Self {
        StdPlatform {
            crypto: Arc::clone(&self.crypto),
            engine: Arc::clone(&self.engine),
            cpus: self.cpus,
            inline_pieces: self.inline_pieces,
            eager_work_items: self.eager_work_items,
            detached: self.detached,
            wide: self.wide,
            key_blocks: Arc::clone(&self.key_blocks),
            splits: Arc::clone(&self.splits),
            _host: PhantomData,
        }
    }
}

impl<H> StdPlatform<H> {
    /// A platform whose encryption pool has `cpu count - free_cpus` threads.
    pub fn new(free_cpus: usize) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = cpus.saturating_sub(free_cpus).max(1);
        let crypto = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("vc-encryption-{i}"))
            .build()
            .expect("build the encryption pool");
        StdPlatform {
            crypto: Arc::new(crypto),
            engine: Arc::new(EngineThreads::default()),
            cpus,
            inline_pieces: false,
            eager_work_items: false,
            detached: true,
            wide: true,
            key_blocks: KeyBlockRecorder::new(),
            splits: Arc::new(AtomicU64::new(0)),
            _host: PhantomData,
        }
    }

    /// The same platform, except that the encryption pool's pieces run in order on the
    /// calling thread: the engine still splits as for the pool, but rayon is not involved.
    /// For the W6 allocation count: rayon's injector allocates a queue block about once per
    /// 63 jobs handed to the pool from outside it, which is rayon's, not the engine's.
    pub fn with_inline_pieces(mut self) -> Self {
        self.inline_pieces = true;
        self
    }

    /// The same platform, except that work items start all their threads when they are made
    /// and wait until each is running (as the kernel allocates every IO_WORKITEM at mount), so
    /// none is started later. For the
    /// W6 allocation count; with the default lazy start a thread may be started (allocating)
    /// whenever more routines than ever before run at once.
    pub fn with_eager_work_items(mut self) -> Self {
        self.eager_work_items = true;
        self
    }

    /// The same platform, except that no direct request goes out without a waiter: no
    /// dispatching thread issues host I/O itself and the workers wait for every child request,
    /// as before (`vcbench`'s `direct-workers` mode measures that path beside the new one).
    pub fn without_detached(mut self) -> Self {
        self.detached = false;
        self
    }

    /// Every buffer on the XMM path, as on a CPU without VAES (or a kernel whose processor
    /// state save failed): the reference the wide path is compared with.
    pub fn without_wide_vectors(mut self) -> Self {
        self.wide = false;
        self
    }

    /// Fault switch (W3): the `n`-th engine thread spawn (1-based, counted from now) fails
    /// with `status` instead of starting a thread, as a failed PsCreateSystemThread or a failed
    /// impersonation does in the kernel.
    pub fn fail_spawn_at(&self, n: usize, status: Status) {
        let at = self.engine.spawned.load(Ordering::Acquire) + n;
        *lock(&self.engine.fail_at) = Some((at, status));
    }

    /// The same platform, reporting `cpus` processors to the engine (its encryption pool's
    /// split policy), whatever this machine has: the pieces still run on the rayon pool.
    pub fn with_cpus(mut self, cpus: usize) -> Self {
        self.cpus = cpus;
        self
    }

    /// Buffers the engine has handed to the encryption pool in pieces so far.
    pub fn crypto_splits(&self) -> u64 {
        self.splits.load(Ordering::Acquire)
    }

    /// The key blocks of this platform's volumes, recorded by the engine's key-block watch.
    pub fn key_blocks(&self) -> &KeyBlockRecorder {
        &self.key_blocks
    }

    /// Engine threads (started by `Platform::spawn`) whose body has not returned yet.
    pub fn engine_threads_alive(&self) -> usize {
        self.engine.alive.load(Ordering::Acquire)
    }
}

/// Runs `work` on every piece, halves in parallel on the calling pool.
fn run_split(pieces: &mut [Piece<'_>], work: &(dyn Fn(&mut Piece<'_>) + Sync)) {
    match pieces {
        [] => {}
        [one] => work(one),
        _ => {
            let (left, right) = pieces.split_at_mut(pieces.len() / 2);
            rayon::join(|| run_split(left, work), || run_split(right, work));
        }
    }
}

impl<H: HostDevice> Platform for StdPlatform<H> {
    type Lock<T: Send> = StdLock<T>;
    type Event = StdEvent;
    type Semaphore = StdSemaphore;
    type Thread = StdThread;
    type Request = TestRequest;
    type Host = H;
    type WorkItems<T: Send + 'static> = StdWorkItems<T>;

    fn key_block_watch(&self) -> Option<Arc<dyn KeyBlockWatch>> {
        Some(Arc::clone(&self.key_blocks) as Arc<dyn KeyBlockWatch>)
    }

    #[track_caller]
    fn spawn(&self, role: ThreadRole, body: Box<dyn FnOnce() + Send>) -> Result<StdThread, Status> {
        crate::irql::check(Call::SpawnThread);
        let number = self.engine.spawned.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some((at, status)) = *lock(&self.engine.fail_at) {
            if number == at {
                return Err(status);
            }
        }
        self.engine.alive.fetch_add(1, Ordering::AcqRel);
        let guard = AliveGuard(Arc::clone(&self.engine));
        std::thread::Builder::new()
            .name(role.name().into())
            .spawn(move || {
                let _alive = guard;
                // R11: the threads that issue host I/O run as the mounting user.
                crate::security::set_caller(crate::security::Caller::System);
                if role.issues_host_io() {
                    crate::security::set(crate::security::Context::MountingUser);
                }
                run_as_system(role.name(), body);
            })
            .map(StdThread)
            .map_err(|_| Status::InsufficientResources)
    }

    fn work_items<T: Send + 'static>(
        &self,
        count: usize,
        run: fn(T),
    ) -> Result<StdWorkItems<T>, Status> {
        // A platform allocation site of the W6 failure injection.
        if vcdirect::faults::allocation_fails() {
            return Err(Status::InsufficientResources);
        }
        let mut items = VecDeque::new();
        items
            .try_reserve_exact(count)
            .map_err(|_| Status::InsufficientResources)?;
        let pool = Arc::new(Pool {
            state: Mutex::new(PoolState {
                items,
                idle: 0,
                threads: if self.eager_work_items { count } else { 0 },
                stop: false,
            }),
            cv: Condvar::new(),
            run,
            count,
        });
        if self.eager_work_items {
            for _ in 0..count {
                pool.start_thread();
            }
            // Started and waiting, so nothing of their start-up happens later.
            while lock(&pool.state).idle < count {
                std::thread::yield_now();
            }
        }
        Ok(StdWorkItems { pool })
    }

    fn cpu_count(&self) -> usize {
        self.cpus
    }

    /// User mode: the OS saves every thread's vector state, so the VAES path runs whenever
    /// the CPU has it, at any length.
    fn wide_vectors<R>(
        &self,
        _len: usize,
        crypt: impl FnOnce(&vcdirect::crypto::WideVectors) -> R,
    ) -> Option<R> {
        if !self.wide {
            return None;
        }
        vcdirect_aes_hw::WideVectors::in_user_mode().map(|vectors| crypt(&vectors))
    }

    fn detach_requests(&self) -> bool {
        self.detached
    }

    /// A dispatching thread at PASSIVE_LEVEL issues the read itself, impersonating the mounting
    /// user and restoring its own context exactly afterwards (`crate::security`). User-mode
    /// stacks are megabytes: the kernel's stack check has no counterpart here.
    fn issue_here<R>(&self, _stack: usize, issue: impl FnOnce() -> R) -> Option<R> {
        if !self.detached || crate::irql::level() != vcdirect::platform::irql::Irql::Passive {
            return None;
        }
        crate::security::as_mounting_user(issue)
    }

    /// The pieces are split in halves with `rayon::join` inside the pool: no job is boxed per
    /// piece (a `rayon::scope` spawn would box one).
    fn run_pieces(&self, pieces: &mut [Piece<'_>], work: &(dyn Fn(&mut Piece<'_>) + Sync)) {
        self.splits.fetch_add(1, Ordering::AcqRel);
        if self.inline_pieces {
            pieces.iter_mut().for_each(work);
            return;
        }
        self.crypto.install(|| run_split(pieces, work));
    }
}
