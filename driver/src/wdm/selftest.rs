//! Load-time self-test of the kernel-object wrappers (wine-host build only).
//!
//! Owns: one pass over every wrapper through the engine's own primitives (a `WorkQueue` fed
//! across a system thread, a work item signalling an event, a remove lock drained, an
//! over-aligned allocation), reported on one DbgPrint line that scripts/wine-smoke.sh checks.
//! Never: runs in the product build (DriverEntry of a shipped driver must not block on tests).

use alloc::boxed::Box;
use alloc::sync::Arc;

use super::platform::KernelPlatform;
use super::remove_lock::RemoveLock;
use super::sync::{KernelEvent, SpinLock};
use crate::platform::{Event, Lock, Platform, Thread, WorkQueue};

/// Runs the checks; `Err` names the first one that failed.
pub(crate) fn run(platform: &KernelPlatform) -> Result<usize, &'static str> {
    // Spin lock + semaphore (WorkQueue) across a system thread, joined.
    let queue: Arc<WorkQueue<KernelPlatform, u32>> = Arc::new(WorkQueue::with_capacity(4));
    let sum = Arc::new(SpinLock::new(0u32));
    let consumer = {
        let (queue, sum) = (Arc::clone(&queue), Arc::clone(&sum));
        platform
            .spawn(
                crate::platform::ThreadRole::Completion,
                Box::new(move || {
                    for _ in 0..3 {
                        let item = queue.pop();
                        sum.with(|s| *s += item);
                    }
                }),
            )
            .map_err(|_| "PsCreateSystemThread")?
    };
    for item in [1, 2, 3] {
        queue.push(item);
    }
    consumer.join();
    if sum.with(|s| *s) != 6 || !queue.is_empty() {
        return Err("work queue across a system thread");
    }

    // Work item signalling a notification event.
    let done = Arc::new(KernelEvent::new());
    let ran_on = Arc::new(SpinLock::new(false));
    {
        let (done, ran_on) = (Arc::clone(&done), Arc::clone(&ran_on));
        platform.queue_work_item(Box::new(move || {
            ran_on.with(|r| *r = true);
            done.set();
        }));
    }
    done.wait();
    if !ran_on.with(|r| *r) {
        return Err("work item");
    }

    // Remove lock: a holder, then the remover drains.
    let lock = RemoveLock::new();
    drop(lock.acquire().map_err(|_| "remove lock acquire")?);
    let remover = lock.acquire().map_err(|_| "remove lock acquire")?;
    RemoveLock::release_and_wait(remover);
    if lock.acquire().is_ok() {
        return Err("remove lock refuses after release_and_wait");
    }

    // Over-aligned pool allocation.
    #[repr(align(64))]
    struct Aligned([u8; 100]);
    let block = Box::new(Aligned([7; 100]));
    if (&*block as *const Aligned as usize) & 63 != 0 || block.0[99] != 7 {
        return Err("64-byte aligned allocation");
    }

    Ok(platform.cpu_count())
}
