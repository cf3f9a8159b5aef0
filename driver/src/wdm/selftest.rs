//! Load-time self-test of the kernel-object wrappers (wine-host build only).
//!
//! Owns: one pass over every wrapper through the engine's own primitives (a `WorkQueue` fed
//! across a system thread, a work item signalling an event, a remove lock drained, an
//! over-aligned allocation, the encryption pool's threads), reported on one DbgPrint line that
//! scripts/wine-smoke.sh checks.
//! Never: runs in the product build (DriverEntry of a shipped driver must not block on tests).

use alloc::boxed::Box;
use alloc::sync::Arc;

use super::platform::KernelPlatform;
use super::remove_lock::RemoveLock;
use super::sync::{KernelEvent, SpinLock};
use super::work_item::WorkItemPool;
use crate::platform::{Event, Lock, Platform, Thread, WorkQueue};

/// A boxed closure, the payload of the self-test's work-item pools.
type Body = Box<dyn FnOnce() + Send>;

/// The routine of a pool of boxed closures: calls the closure.
fn call_body(body: Body) {
    body();
}

/// Runs the checks; `Err` names the first one that failed.
pub(crate) fn run(platform: &KernelPlatform) -> Result<usize, &'static str> {
    // Spin lock + semaphore (WorkQueue) across a system thread, joined.
    let queue: Arc<WorkQueue<KernelPlatform, u32>> =
        Arc::new(WorkQueue::with_capacity(4).map_err(|_| "WorkQueue: allocation")?);
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

    // Work item signalling a notification event (a pool of one, as `Platform::work_items`).
    let done = Arc::new(KernelEvent::try_new().map_err(|_| "KernelEvent: allocation")?);
    let ran_on = Arc::new(SpinLock::new(false));
    {
        let pool = WorkItemPool::new(platform.device().as_ptr(), 1, call_body)
            .map_err(|_| "work item pool")?;
        let (done, ran_on) = (Arc::clone(&done), Arc::clone(&ran_on));
        let queued = pool.queue(Box::new(move || {
            ran_on.with(|r| *r = true);
            done.set();
        }));
        if queued.is_err() {
            return Err("work item: no idle item");
        }
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

    work_item_teardown(platform)?;
    encryption_pool(platform)?;

    Ok(platform.cpu_count())
}

/// Work-item teardown with routines in flight: the pool's handle is dropped while both of its
/// routines still run; each then frees its own item and the last frees the slots' storage
/// (work_item.rs), and both bodies ran to the end.
fn work_item_teardown(platform: &KernelPlatform) -> Result<(), &'static str> {
    let pool = WorkItemPool::new(platform.device().as_ptr(), 2, call_body)
        .map_err(|_| "work item pool")?;
    let gate = Arc::new(KernelEvent::try_new().map_err(|_| "KernelEvent: allocation")?);
    let done = Arc::new(KernelEvent::try_new().map_err(|_| "KernelEvent: allocation")?);
    let finished = Arc::new(SpinLock::new(0u32));
    for _ in 0..2 {
        let (gate, done, finished) = (Arc::clone(&gate), Arc::clone(&done), Arc::clone(&finished));
        let queued = pool.queue(Box::new(move || {
            gate.wait();
            if finished.with(|n| {
                *n += 1;
                *n
            }) == 2
            {
                done.set();
            }
        }));
        if queued.is_err() {
            return Err("work item pool: no idle item");
        }
    }
    drop(pool); // closed with both routines in flight
    gate.set();
    done.wait();
    if finished.with(|n| *n) != 2 {
        return Err("work items finished after their pool was dropped");
    }
    Ok(())
}

/// The encryption pool: every piece runs once, on the pool's threads or on the caller's (which
/// runs the pieces no thread has taken, W8), and gives the bytes the cipher gives on one
/// thread; the driver's pool serves the engine's split.
fn encryption_pool(platform: &KernelPlatform) -> Result<(), &'static str> {
    use core::sync::atomic::{AtomicUsize, Ordering};

    use super::encryption_pool::{take_piece_self_test, EncryptionPool};
    use super::thread::current_thread;
    use crate::crypto::{Cipher, CryptoPool, VolumeKey, XtsCipher, DATA_UNIT, MIN_PIECE};
    use crate::platform::Piece;

    take_piece_self_test()?;
    const PIECES: usize = 4;
    let mut key = [0u8; 64];
    for (i, b) in key.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(29).wrapping_add(3);
    }
    let cipher = XtsCipher::new(&key);
    // Each piece as large as the engine splits (crypto::MIN_PIECE), so its split makes PIECES.
    let plain: alloc::vec::Vec<u8> = (0..PIECES * MIN_PIECE).map(|i| i as u8).collect();
    let mut expected = plain.clone();
    cipher.encrypt(&mut expected, 1000);

    // A pool of its own (2 threads, whatever the CPU count), each piece noting its thread.
    let pool = EncryptionPool::start(2).map_err(|_| "encryption pool start")?;
    if pool.threads() != 2 {
        return Err("encryption pool threads");
    }
    let mut data = plain.clone();
    let ran_on: [AtomicUsize; PIECES] = Default::default();
    let runs: [AtomicUsize; PIECES] = Default::default();
    let on_threads = AtomicUsize::new(0);
    let caller = current_thread() as usize;
    {
        let mut pieces: alloc::vec::Vec<Piece<'_>> = data
            .chunks_mut(MIN_PIECE)
            .enumerate()
            .map(|(i, chunk)| Piece {
                first_unit: 1000 + (i * MIN_PIECE / DATA_UNIT) as u64,
                data: chunk,
            })
            .collect();
        pool.run(&mut pieces, &|piece: &mut Piece<'_>| {
            let index = (piece.first_unit - 1000) as usize * DATA_UNIT / MIN_PIECE;
            let me = current_thread() as usize;
            ran_on[index].store(me, Ordering::Release);
            runs[index].fetch_add(1, Ordering::AcqRel);
            if me == caller {
                // The caller's pieces wait (bounded) until a pool thread has run one, so the
                // check below sees the pool's threads work whatever the timing.
                let mut spins = 0u64;
                while on_threads.load(Ordering::Acquire) == 0 && spins < 1 << 24 {
                    core::hint::spin_loop();
                    spins += 1;
                }
            } else {
                on_threads.fetch_add(1, Ordering::AcqRel);
            }
            cipher.encrypt(piece.data, piece.first_unit);
        });
    }
    let once = runs.iter().all(|n| n.load(Ordering::Acquire) == 1);
    let by_threads = ran_on
        .iter()
        .filter(|t| t.load(Ordering::Acquire) != caller)
        .count();
    let run = pool.pieces_run();
    pool.stop();
    // The caller posts fewer permits than pieces (one fewer, at most one per thread: 2 here)
    // and runs what no thread took, so it runs at least one piece of this fresh pool's first
    // batch (W8: never waits idle for all).
    if !once || by_threads == 0 || by_threads == PIECES || run != by_threads as u64 {
        return Err("encryption pool: every piece once, on the pool's threads and the caller's");
    }
    if data != expected {
        return Err("encryption pool: same bytes as one thread");
    }

    // The engine's split through the platform, on the driver's pool (when it has threads).
    let volume_key: VolumeKey<KernelPlatform> =
        VolumeKey::new(platform, &key).map_err(|_| "encryption pool: key allocation")?;
    let split = CryptoPool::new(PIECES, 0);
    let mut data = plain.clone();
    split
        .run(platform, &volume_key, Cipher::Encrypt, &mut data, 1000)
        .map_err(|_| "encryption pool: key")?;
    if data != expected {
        return Err("encryption pool: the engine's split, same bytes");
    }
    Ok(())
}
