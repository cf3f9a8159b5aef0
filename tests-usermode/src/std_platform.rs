//! The std platform: real threads, std locks, a rayon pool as VeraCrypt's encryption thread
//! pool, and a growing pool of "system worker" threads for completion work items.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use vcdirect::platform::{HostDevice, Piece, Platform, ThreadRole};
use vcdirect::Status;

use crate::request::TestRequest;

crate::condvar_sync::condvar_primitives!(
    "std",
    StdLock,
    StdEvent,
    StdSemaphore,
    StdThread,
    std::thread::JoinHandle<()>
);

type WorkItem = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct WorkerState {
    queue: VecDeque<WorkItem>,
    idle: usize,
}

/// The OS's shared worker threads: a work item never waits behind another one (a new thread
/// is started whenever no idle thread is free for it), as blocked upper completions must not
/// hold up later ones (docs/review.md R1).
#[derive(Default)]
struct SystemWorkers {
    state: Mutex<WorkerState>,
    cv: Condvar,
}

impl SystemWorkers {
    fn queue(self: &Arc<Self>, item: WorkItem) {
        let mut s = lock(&self.state);
        s.queue.push_back(item);
        if s.queue.len() > s.idle {
            let me = Arc::clone(self);
            drop(s);
            std::thread::Builder::new()
                .name("system-worker".into())
                .spawn(move || me.run())
                .expect("spawn a system worker");
        } else {
            drop(s);
            self.cv.notify_one();
        }
    }

    fn run(&self) {
        let mut s = lock(&self.state);
        loop {
            if let Some(item) = s.queue.pop_front() {
                drop(s);
                item();
                s = lock(&self.state);
                continue;
            }
            s.idle += 1;
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
            s.idle -= 1;
        }
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
    workers: Arc<SystemWorkers>,
    engine: Arc<EngineThreads>,
    cpus: usize,
    _host: PhantomData<fn() -> H>,
}

impl<H> Clone for StdPlatform<H> {
    fn clone(&self) -> Self {
        StdPlatform {
            crypto: Arc::clone(&self.crypto),
            workers: Arc::clone(&self.workers),
            engine: Arc::clone(&self.engine),
            cpus: self.cpus,
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
            workers: Arc::new(SystemWorkers::default()),
            engine: Arc::new(EngineThreads::default()),
            cpus,
            _host: PhantomData,
        }
    }

    /// Fault switch (W3): the `n`-th engine thread spawn (1-based, counted from now) fails
    /// with `status` instead of starting a thread, as a failed PsCreateSystemThread or a failed
    /// impersonation does in the kernel.
    pub fn fail_spawn_at(&self, n: usize, status: Status) {
        let at = self.engine.spawned.load(Ordering::Acquire) + n;
        *lock(&self.engine.fail_at) = Some((at, status));
    }

    /// Engine threads (started by `Platform::spawn`) whose body has not returned yet.
    pub fn engine_threads_alive(&self) -> usize {
        self.engine.alive.load(Ordering::Acquire)
    }
}

impl<H: HostDevice> Platform for StdPlatform<H> {
    type Lock<T: Send> = StdLock<T>;
    type Event = StdEvent;
    type Semaphore = StdSemaphore;
    type Thread = StdThread;
    type Request = TestRequest;
    type Host = H;

    fn spawn(&self, role: ThreadRole, body: Box<dyn FnOnce() + Send>) -> Result<StdThread, Status> {
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
                body();
            })
            .map(StdThread)
            .map_err(|_| Status::InsufficientResources)
    }

    fn queue_work_item(&self, item: Box<dyn FnOnce() + Send>) {
        self.workers.queue(item);
    }

    fn cpu_count(&self) -> usize {
        self.cpus
    }

    fn run_pieces(&self, pieces: &mut [Piece<'_>], work: &(dyn Fn(&mut Piece<'_>) + Sync)) {
        self.crypto.scope(|s| {
            for piece in pieces.iter_mut() {
                s.spawn(move |_| work(piece));
            }
        });
    }
}
