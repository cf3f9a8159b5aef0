//! The simulator's platform: shuttle's threads and locks, so one engine thread runs at a time
//! and a seeded scheduler picks the next at every blocking point.
//!
//! Every simulated thread keeps a virtual IRQL (docs/review.md W9, `crate::irql`, in shuttle
//! thread-locals): engine threads and work items start and must end at PASSIVE_LEVEL; a broken
//! contract is recorded and fails the seed (`super::check::irql`).

use std::sync::Arc;

use shuttle::sync::{Condvar, Mutex, MutexGuard};

use vcdirect::crypto::KeyBlockWatch;

use vcdirect::platform::irql::Call;
use vcdirect::platform::{Platform, ThreadRole, WorkItems};
use vcdirect::Status;

use super::host::SimHost;
use crate::key_blocks::KeyBlockRecorder;
use crate::request::TestRequest;

crate::condvar_sync::condvar_primitives!(
    "shuttle",
    SimLock,
    SimEvent,
    SimSemaphore,
    SimThread,
    shuttle::thread::JoinHandle<()>
);

/// The simulator's work items: each queued payload gets its own simulated system thread.
pub struct SimWorkItems<T> {
    run: fn(T),
}

impl<T: Send + 'static> WorkItems<T> for SimWorkItems<T> {
    #[track_caller]
    fn queue(&self, item: T) -> Result<(), T> {
        crate::irql::check(Call::QueueWorkItem);
        let run = self.run;
        shuttle::thread::Builder::new()
            .name("system-worker".into())
            .spawn(move || {
                crate::security::set_caller(crate::security::Caller::System);
                run(item);
                crate::irql::check_returned_at_passive();
            })
            .expect("spawn a simulated system worker");
        Ok(())
    }
}

/// The simulator's platform. Work items each get their own simulated system thread, so a
/// blocked upper completion never holds up another (the bound is the completion stage's).
/// Its clones share one record of the volume's key blocks (docs/review.md R3:
/// `crate::key_blocks`), which the key check reads after the final dismount.
#[derive(Clone, Default)]
pub struct SimPlatform {
    key_blocks: Arc<KeyBlockRecorder>,
}

impl SimPlatform {
    /// The key blocks of this platform's volumes, recorded by the engine's key-block watch.
    pub fn key_blocks(&self) -> &KeyBlockRecorder {
        &self.key_blocks
    }
}

impl Platform for SimPlatform {
    type Lock<T: Send> = SimLock<T>;
    type Event = SimEvent;
    type Semaphore = SimSemaphore;
    type Thread = SimThread;
    type Request = TestRequest;
    type Host = SimHost;
    type WorkItems<T: Send + 'static> = SimWorkItems<T>;

    fn key_block_watch(&self) -> Option<Arc<dyn KeyBlockWatch>> {
        Some(Arc::clone(&self.key_blocks) as Arc<dyn KeyBlockWatch>)
    }

    #[track_caller]
    fn spawn(&self, role: ThreadRole, body: Box<dyn FnOnce() + Send>) -> Result<SimThread, Status> {
        crate::irql::check(Call::SpawnThread);
        shuttle::thread::Builder::new()
            .name(role.name().into())
            .spawn(move || {
                // R11: the threads that issue host I/O run as the mounting user.
                crate::security::set_caller(crate::security::Caller::System);
                if role.issues_host_io() {
                    crate::security::set(crate::security::Context::MountingUser);
                }
                body();
                crate::irql::check_returned_at_passive();
            })
            .map(SimThread)
            .map_err(|_| Status::InsufficientResources)
    }

    fn work_items<T: Send + 'static>(
        &self,
        _count: usize,
        run: fn(T),
    ) -> Result<SimWorkItems<T>, Status> {
        Ok(SimWorkItems { run })
    }

    fn cpu_count(&self) -> usize {
        2
    }

    /// A dispatching thread at PASSIVE_LEVEL issues the read itself as the mounting user
    /// (`crate::security`); the scheduler may switch threads right before and after.
    fn issue_here<R>(&self, _stack: usize, issue: impl FnOnce() -> R) -> Option<R> {
        if crate::irql::level() != vcdirect::platform::irql::Irql::Passive {
            return None;
        }
        shuttle::thread::yield_now();
        let r = crate::security::as_mounting_user(issue);
        shuttle::thread::yield_now();
        r
    }

    /// Crypto is where a real CPU spends time while holding a key reference: let the
    /// scheduler preempt there, so erasure can race it (docs/review.md R3).
    fn crypto_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        shuttle::thread::yield_now();
        let r = f();
        shuttle::thread::yield_now();
        r
    }
}

/// The name of the running simulated thread.
pub fn current_thread_name() -> String {
    shuttle::thread::current().name().unwrap_or("").to_string()
}
