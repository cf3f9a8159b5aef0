//! The loom platform: the engine's locks, events, semaphores and threads over `loom`'s
//! primitives, so `loom::model` explores every interleaving of the engine's blocking points
//! (within a preemption bound). Only usable inside `loom::model`.
//!
//! Loom switches threads only at its own operations. The engine's plain `core` atomics (key
//! block flag, counters) are not modelled: between two loom operations they behave as one
//! sequentially consistent step. Everything the engine waits on goes through this platform, so
//! the hand-offs that matter (range grants, rundown, work queues, completion) are modelled.
//!
//! Loom allows at most 5 threads per execution (the model's own thread included, and a
//! finished thread's slot is not reused), which is why work items can run inline
//! ([`WorkItems::Inline`]) for models that already have 5 threads.

use std::marker::PhantomData;

use loom::sync::{Condvar, Mutex, MutexGuard};

use vcdirect::platform::{
    HostDevice, HostIo, HostKind, HostLimits, KeptRead, Platform, ThreadRole,
};
use vcdirect::Status;

use crate::request::TestRequest;

/// Name of the threads that run work items (the OS's shared worker threads).
pub const SYSTEM_WORKER: &str = "system-worker";

crate::condvar_sync::condvar_primitives!(
    "loom",
    LoomLock,
    LoomEvent,
    LoomSemaphore,
    LoomThread,
    loom::thread::JoinHandle<()>
);

/// Where a work item (`Platform::work_items`) runs its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkItems {
    /// On a new loom thread named [`SYSTEM_WORKER`] (the kernel's behaviour).
    Thread,
    /// On the calling thread, before `queue` returns. Only for models that cannot
    /// afford another thread and do not check where upper completion code runs.
    Inline,
}

/// Loom's work items: a payload runs where [`WorkItems`] (the mode) says.
pub struct LoomWorkItems<T> {
    mode: WorkItems,
    run: fn(T),
}

impl<T: Send + 'static> vcdirect::platform::WorkItems<T> for LoomWorkItems<T> {
    fn queue(&self, item: T) -> Result<(), T> {
        let run = self.run;
        match self.mode {
            WorkItems::Thread => {
                loom::thread::Builder::new()
                    .name(SYSTEM_WORKER.into())
                    .spawn(move || run(item))
                    .expect("spawn a loom system worker");
            }
            WorkItems::Inline => run(item),
        }
        Ok(())
    }
}

/// The loom platform for volumes on hosts of type `H`.
pub struct LoomPlatform<H = LoomHost> {
    work_items: WorkItems,
    _host: PhantomData<fn() -> H>,
}

impl<H> Clone for LoomPlatform<H> {
    fn clone(&self) -> Self {
        LoomPlatform {
            work_items: self.work_items,
            _host: PhantomData,
        }
    }
}

impl<H> LoomPlatform<H> {
    /// A platform whose work items run as given.
    pub fn new(work_items: WorkItems) -> Self {
        LoomPlatform {
            work_items,
            _host: PhantomData,
        }
    }
}

impl<H: HostDevice> Platform for LoomPlatform<H> {
    type Lock<T: Send> = LoomLock<T>;
    type Event = LoomEvent;
    type Semaphore = LoomSemaphore;
    type Thread = LoomThread;
    type Request = TestRequest;
    type Host = H;
    type WorkItems<T: Send + 'static> = LoomWorkItems<T>;

    fn spawn(
        &self,
        role: ThreadRole,
        body: Box<dyn FnOnce() + Send>,
    ) -> Result<LoomThread, Status> {
        loom::thread::Builder::new()
            .name(role.name().into())
            .spawn(body)
            .map(LoomThread)
            .map_err(|_| Status::InsufficientResources)
    }

    fn work_items<T: Send + 'static>(
        &self,
        _count: usize,
        run: fn(T),
    ) -> Result<LoomWorkItems<T>, Status> {
        Ok(LoomWorkItems {
            mode: self.work_items,
            run,
        })
    }

    fn cpu_count(&self) -> usize {
        1
    }
}

/// The name of the running loom thread.
pub fn current_thread_name() -> String {
    loom::thread::current().name().unwrap_or("").to_string()
}

/// A raw memory device whose bytes sit behind one loom mutex: each host operation is one
/// modelled step. No limits beyond 512-byte sectors; reads past the end are short.
pub struct LoomHost {
    data: Mutex<Vec<u8>>,
}

impl LoomHost {
    /// A zeroed device of `size` bytes.
    pub fn new(size: usize) -> Self {
        LoomHost {
            data: Mutex::new(vec![0; size]),
        }
    }

    /// A copy of the device's bytes.
    pub fn snapshot(&self) -> Vec<u8> {
        lock(&self.data).clone()
    }
}

/// A host operation that already finished.
pub struct DoneIo(Result<usize, Status>);

impl HostIo for DoneIo {
    fn wait(self) -> Result<usize, Status> {
        self.0
    }
}

impl HostDevice for LoomHost {
    type Io<'a> = DoneIo;
    type Read<'a> = KeptRead<'a, DoneIo>;

    fn kind(&self) -> HostKind {
        HostKind::RawDevice
    }
    fn size(&self) -> u64 {
        lock(&self.data).len() as u64
    }
    fn limits(&self) -> HostLimits {
        HostLimits::unlimited()
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> DoneIo {
        let data = lock(&self.data);
        let Ok(start) = usize::try_from(offset) else {
            return DoneIo(Err(Status::InvalidParameter));
        };
        let end = start.saturating_add(buf.len()).min(data.len());
        let n = end.saturating_sub(start);
        buf[..n].copy_from_slice(&data[start.min(end)..end]);
        DoneIo(Ok(n))
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        KeptRead::new(self.start_read(offset, buf), buf)
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> DoneIo {
        let mut data = lock(&self.data);
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start.checked_add(buf.len()) {
            Some(end) if end <= data.len() => {
                data[start..end].copy_from_slice(buf);
                DoneIo(Ok(buf.len()))
            }
            _ => DoneIo(Err(Status::InvalidParameter)),
        }
    }
    fn flush(&self) -> Result<(), Status> {
        Ok(())
    }
}
