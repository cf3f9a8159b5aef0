//! Small direct requests issued without a waiter (docs/design.md §5): which ones the
//! dispatching thread issues itself, which a worker issues and does not wait for, which are
//! waited for as before; the bytes they leave and return; the security context the host sees
//! and the one the dispatching thread keeps (R11); the key erasure racing a decryption in the
//! host's completion context (R3); and the thread that completes the upper request (R1).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use vcdirect::direct::DETACHED_MAX;
use vcdirect::platform::irql::Irql;
use vcdirect::platform::RequestKind;
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::host::{MemoryHost, ModelHost, ModelParams, StdHost};
use vcdirect_usermode::request::{Completion, TestRequest};
use vcdirect_usermode::security::{self, Caller, Context};
use vcdirect_usermode::std_platform::StdPlatform;

const SIZE: u64 = 4 * MIB;

/// A direct volume on a probe host whose data area holds `pattern(5, SIZE)`.
fn volume() -> (ProbeHost, Vol) {
    let p = params(SIZE, BOTH_ON);
    let host = host_for(&p);
    put_plain(&host.mem, DATA_OFFSET, 0, &pattern(5, SIZE as usize));
    (host.clone(), mount(host, p))
}

/// Reads `len` bytes at `offset`, dispatched at `level`; the completion.
fn read_at(vol: &Vol, level: Irql, offset: u64, len: u32) -> Completion {
    set_dispatch_level(level);
    let c = wait(&submit(vol, |done| TestRequest::read(offset, len, done)));
    set_dispatch_level(Irql::Dispatch);
    c
}

#[test]
fn small_requests_go_out_without_a_waiter_and_move_the_right_bytes() {
    // A System thread (a file system's or server's worker): the dispatching thread may issue.
    security::set_caller(Caller::System);
    let (host, vol) = volume();
    let mut truth = pattern(5, SIZE as usize);
    let cases = [
        // (level, write, offset, length, issued by the dispatching thread, without a waiter)
        (Irql::Passive, false, 0, 4096, true, true),
        (Irql::Passive, false, 512 * 9, 512, true, true),
        (Irql::Passive, false, 65536, DETACHED_MAX, true, true),
        // Longer than the cap: a worker serves it and waits for it.
        (Irql::Passive, false, 0, DETACHED_MAX + 4096, false, false),
        // At DISPATCH_LEVEL the dispatching thread may not issue host I/O (W9): a worker
        // issues it and goes on.
        (Irql::Dispatch, false, 8192, 4096, false, true),
        (Irql::Passive, true, 16384, 4096, true, true),
        (Irql::Passive, true, 512 * 77, 1024, true, true),
        (Irql::Dispatch, true, 3 * 65536, DETACHED_MAX, false, true),
        (
            Irql::Passive,
            true,
            5 * 65536,
            DETACHED_MAX + 512,
            false,
            false,
        ),
    ];
    for (i, (level, write, offset, len, here, detached)) in cases.into_iter().enumerate() {
        let before = vol.counters.snapshot();
        let range = offset as usize..(offset + u64::from(len)) as usize;
        let c = if write {
            let data = pattern(100 + i as u64, len as usize);
            truth[range.clone()].copy_from_slice(&data);
            set_dispatch_level(level);
            let c = wait(&submit_write(&vol, offset, &data));
            set_dispatch_level(Irql::Dispatch);
            c
        } else {
            read_at(&vol, level, offset, len)
        };
        assert_eq!(
            (c.status, c.information),
            (Status::Success, len as usize),
            "#{i}"
        );
        if !write {
            assert!(
                c.buf.as_ref().map(|b| b.as_slice()) == Some(&truth[range.clone()]),
                "#{i}: wrong data"
            );
        }
        let after = vol.counters.snapshot();
        assert_eq!(
            (
                after.dispatch_issued - before.dispatch_issued,
                after.detached - before.detached
            ),
            (u64::from(here), u64::from(detached)),
            "#{i} {level:?} write {write} {offset} {len}"
        );
    }
    wait_until_idle(&vol);
    assert!(
        get_plain(&host.mem, DATA_OFFSET, 0, SIZE as usize) == truth,
        "the medium holds the written plaintext, encrypted"
    );
    let s = vol.counters.snapshot();
    assert_eq!((s.direct_reads, s.direct_writes), (5, 4));
    vol.dismount();
}

/// R11: the host sees the mounting user's context on every way; the dispatching thread gets
/// back exactly the context it had; and the mounting user's context is lent only to a thread
/// of the System process (`security::Caller`), whatever it impersonates (saved and restored).
/// An application's thread is never lent it: its small request goes to a worker, which issues
/// it without waiting, and its own context is untouched.
#[test]
fn r11_the_dispatching_thread_issues_as_the_mounting_user_and_keeps_its_own_context() {
    let (host, vol) = volume();
    let client = Context::Client {
        token: 7,
        level: 2,
        effective_only: true,
    };
    for (caller, own, lent) in [
        (Caller::System, Context::Own, true),
        (Caller::System, client, true),
        (Caller::Process, Context::Own, false),
        (Caller::Process, client, false),
    ] {
        security::set_caller(caller);
        security::set(own);
        let before = vol.counters.snapshot();
        let c = read_at(&vol, Irql::Passive, 4096, 4096);
        assert_eq!(c.status, Status::Success);
        assert_eq!(
            security::current(),
            own,
            "{caller:?} {own:?}: the thread's own context is restored"
        );
        let after = vol.counters.snapshot();
        assert_eq!(
            (
                after.dispatch_issued - before.dispatch_issued,
                after.detached - before.detached
            ),
            (u64::from(lent), 1),
            "{caller:?} {own:?}"
        );
        // And at DISPATCH_LEVEL (a worker issues it): untouched as well.
        let c = read_at(&vol, Irql::Dispatch, 4096, 4096);
        assert_eq!(c.status, Status::Success);
        assert_eq!(security::current(), own);
    }
    security::set(Context::Own);
    let seen = host.contexts();
    assert!(seen.iter().any(|(detached, _)| *detached));
    assert!(
        seen.iter().all(|(_, c)| *c == Context::MountingUser),
        "host I/O outside the mounting user's context: {seen:?}"
    );
    vol.dismount();
}

/// A held host refuses a detached read: the read goes to the workers (and completes once the
/// host goes on), nothing is lost and the permit comes back.
#[test]
fn a_host_that_cannot_start_it_now_hands_the_read_to_the_workers() {
    // A System thread (a file system's or server's worker): the dispatching thread may issue.
    security::set_caller(Caller::System);
    let (host, vol) = volume();
    host.hold();
    set_dispatch_level(Irql::Passive);
    let rx = submit(&vol, |done| TestRequest::read(0, 4096, done));
    set_dispatch_level(Irql::Dispatch);
    wait_for("the worker's read reached the host", || {
        host.in_flight() == 1
    });
    host.release();
    let c = wait(&rx);
    assert_eq!((c.status, c.information), (Status::Success, 4096));
    let s = vol.counters.snapshot();
    // Refused from the dispatching thread and from the worker: the worker waited for it.
    assert_eq!((s.dispatch_issued, s.detached, s.direct_reads), (0, 0, 1));
    // Every permit came back: 8 reads at once still all go out.
    let c = read_at(&vol, Irql::Passive, 0, 4096);
    assert_eq!(c.status, Status::Success);
    assert_eq!(vol.counters.snapshot().dispatch_issued, 1);
    vol.dismount();
}

/// R3: erasing the keys while reads issued on the dispatching thread are in flight at a
/// device that completes them later (the model NVMe, whose completions run at
/// DISPATCH_LEVEL): each read either returns the plaintext or fails with
/// STATUS_DEVICE_BUSY; none returns bytes that were not decrypted, none hangs.
/// A volume on the model host.
type ModelVol = Arc<Volume<StdPlatform<Arc<StdHost>>>>;

/// A direct volume on the model host (completions on its timer thread after `latency`) whose
/// data area holds `pattern(5, SIZE)`.
fn model_volume(latency: Duration) -> (Arc<StdHost>, ModelVol) {
    let model = ModelHost::new(
        DATA_OFFSET + SIZE + 64 * KIB,
        ModelParams {
            latency,
            ..ModelParams::nvme()
        },
    );
    put_plain(model.memory(), DATA_OFFSET, 0, &pattern(5, SIZE as usize));
    let host = Arc::new(StdHost::Model(model));
    let vol = Volume::mount(
        StdPlatform::<Arc<StdHost>>::new(0),
        Arc::clone(&host),
        &master_key(),
        params(SIZE, BOTH_ON),
    )
    .expect("mount");
    (host, vol)
}

#[test]
fn r3_erase_racing_reads_finished_in_the_completion_context() {
    // A System thread (a file system's or server's worker): the dispatching thread may issue.
    security::set_caller(Caller::System);
    for round in 0..20u64 {
        let (host, vol) = model_volume(Duration::from_micros(300));
        let truth = pattern(5, SIZE as usize);
        let (tx, rx) = std::sync::mpsc::channel();
        let n = 32u64;
        for i in 0..n {
            let tx = tx.clone();
            let offset = (i * 65536 + round * 4096) % (SIZE - 4096);
            vcdirect_usermode::irql::dispatch_at(
                Irql::Passive,
                &vol,
                TestRequest::read(offset, 4096, move |c: Completion| {
                    let _ = tx.send((offset, c));
                }),
            );
            if i == n / 2 + round % 8 {
                vol.erase_keys();
            }
        }
        let mut failed = 0;
        for _ in 0..n {
            let (offset, c) = rx.recv_timeout(WAIT).expect("a read hung");
            match c.status {
                Status::Success => {
                    let want = &truth[offset as usize..offset as usize + 4096];
                    assert!(
                        c.buf.as_ref().map(|b| b.as_slice()) == Some(want),
                        "round {round}: a successful read returned bytes not decrypted"
                    );
                }
                Status::DeviceBusy => failed += 1,
                other => panic!("round {round}: {other:?}"),
            }
        }
        assert!(failed > 0, "round {round}: the erase raced no read");
        assert!(vol.counters.snapshot().dispatch_issued > 0);
        assert!(
            host_completions_at_dispatch(&host) > 0,
            "the model completed nothing at DISPATCH_LEVEL"
        );
        vol.dismount();
    }
}

fn host_completions_at_dispatch(host: &StdHost) -> u64 {
    match host {
        StdHost::Model(m) => m.completions_at_dispatch(),
        _ => 0,
    }
}

/// The upper completion of a read issued on the dispatching thread runs on a system worker
/// (R1), never on the dispatching thread or the host's completion context, whichever of them
/// finished the read.
#[test]
fn r1_dispatch_issued_reads_complete_on_system_workers() {
    // A System thread (a file system's or server's worker): the dispatching thread may issue.
    security::set_caller(Caller::System);
    let (_host, vol) = volume();
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..16u64 {
        let tx = tx.clone();
        vcdirect_usermode::irql::dispatch_at(
            Irql::Passive,
            &vol,
            TestRequest::new(
                RequestKind::Read,
                (i * 4096) as i64,
                4096,
                Some(vcdirect_usermode::request::Buf::unread_aligned(4096, 4096)),
                move |c: Completion| {
                    let _ = tx.send((thread_name(), c.status));
                },
            ),
        );
    }
    for _ in 0..16 {
        let (name, status) = rx.recv_timeout(WAIT).expect("completed");
        assert_eq!(status, Status::Success);
        assert_eq!(name, "system-worker");
    }
    assert_eq!(vol.counters.snapshot().dispatch_issued, 16);
    vol.dismount();
}

/// Under load (more small requests queued than host permits), a small request that ends
/// hands its host permit to its completion work item, which issues the oldest queued one with
/// it (no worker woken for it): from an application's threads, every request completes once
/// with its bytes, on a system worker (R1), every host operation ran as the mounting user
/// (R11), and every permit comes back.
#[test]
fn carried_permits_issue_queued_small_requests_on_system_workers_as_the_mounting_user() {
    // An application's thread: it never issues host I/O itself.
    security::set_caller(Caller::Process);
    let (host, vol) = model_volume(Duration::from_micros(2000));
    let truth = pattern(5, SIZE as usize);
    let model = match &*host {
        StdHost::Model(m) => m,
        _ => unreachable!(),
    };
    let mut carried_rounds = 0;
    for round in 0..5u64 {
        let before = (vol.counters.snapshot(), vol.direct_carried());
        let (tx, rx) = std::sync::mpsc::channel();
        let n = 96u64;
        for i in 0..n {
            let tx = tx.clone();
            let offset = ((i * 37 + round * 11) % (SIZE / 4096)) * 4096;
            vcdirect_usermode::irql::dispatch_at(
                Irql::Passive,
                &vol,
                TestRequest::new(
                    RequestKind::Read,
                    offset as i64,
                    4096,
                    Some(vcdirect_usermode::request::Buf::unread_aligned(4096, 4096)),
                    move |c: Completion| {
                        let _ = tx.send((offset, thread_name(), c));
                    },
                ),
            );
        }
        for _ in 0..n {
            let (offset, name, c) = rx.recv_timeout(WAIT).expect("completed");
            assert_eq!((c.status, c.information), (Status::Success, 4096));
            assert_eq!(name, "system-worker", "R1");
            let at = offset as usize;
            let data = c.buf.map(|b| b.as_slice().to_vec()).unwrap_or_default();
            assert!(data == truth[at..at + 4096], "the bytes at {offset}");
        }
        wait_for("no request in flight", || vol.in_flight() == 0);
        let after = (vol.counters.snapshot(), vol.direct_carried());
        assert_eq!(
            after.0.dispatch_issued, before.0.dispatch_issued,
            "an application's thread"
        );
        assert_eq!(
            after.0.detached - before.0.detached,
            n,
            "every one without a waiter"
        );
        carried_rounds += usize::from(after.1 > before.1);
        wait_for("every host permit given back", || {
            vol.direct_permits_held() == 0
        });
    }
    // The first completions find 88 requests queued and at most 8 workers waiting.
    assert!(
        carried_rounds >= 4,
        "carried permits in {carried_rounds} of 5 rounds"
    );
    assert_eq!(
        model.foreign_contexts(),
        0,
        "R11: host I/O outside the mounting user's context"
    );
    vol.dismount();
}

/// The memory medium without latency completes a detached read inside the start (a
/// synchronous completion): the issuer finishes it. Counted once, completed once.
#[test]
fn a_read_the_host_completed_before_its_start_returned_is_finished_once() {
    // A System thread (a file system's or server's worker): the dispatching thread may issue.
    security::set_caller(Caller::System);
    let p = params(SIZE, BOTH_ON);
    let host = ProbeHost::new(MemoryHost::new(DATA_OFFSET + SIZE + 64 * KIB));
    let vol = mount(host, p);
    for i in 0..100u64 {
        let c = read_at(&vol, Irql::Passive, (i % 64) * 4096, 4096);
        assert_eq!((c.status, c.information), (Status::Success, 4096));
    }
    let s = vol.counters.snapshot();
    assert_eq!((s.dispatch_issued, s.direct_reads), (100, 100));
    assert_eq!(vol.in_flight(), 0);
    vol.dismount();
}

/// Paging I/O (the memory manager's page writer, possibly the dispatching thread itself) is
/// never issued by its dispatching thread: a worker issues it, without waiting for it.
#[test]
fn paging_io_is_never_issued_by_its_dispatching_thread() {
    security::set_caller(Caller::System);
    let (_host, vol) = volume();
    let truth = pattern(5, SIZE as usize);
    let (tx, rx) = std::sync::mpsc::channel();
    vcdirect_usermode::irql::dispatch_at(
        Irql::Passive,
        &vol,
        TestRequest::read(8192, 4096, move |c: Completion| {
            let _ = tx.send(c);
        })
        .as_paging_io(),
    );
    let c = rx.recv_timeout(WAIT).expect("completed");
    assert_eq!((c.status, c.information), (Status::Success, 4096));
    assert!(c.buf.as_ref().map(|b| b.as_slice()) == Some(&truth[8192..12288]));
    let s = vol.counters.snapshot();
    assert_eq!((s.dispatch_issued, s.detached), (0, 1));
    vol.dismount();
}

/// R2 and W5 for a small write issued without a waiter: with the key block set before it
/// starts, it fails with STATUS_DEVICE_BUSY and nothing reaches the host, whether the
/// dispatching thread or a worker takes it; a cancelled one fails with STATUS_CANCELLED, nothing
/// issued.
#[test]
fn r2_a_small_write_after_the_key_block_or_cancelled_issues_nothing() {
    security::set_caller(Caller::System);
    for level in [Irql::Passive, Irql::Dispatch] {
        let (host, vol) = volume();
        vol.erase_keys();
        host.clear_ops();
        set_dispatch_level(level);
        let c = wait(&submit_write(&vol, 4096, &pattern(3, 4096)));
        set_dispatch_level(Irql::Dispatch);
        assert_eq!(
            (c.status, c.information),
            (Status::DeviceBusy, 0),
            "{level:?}"
        );
        assert!(
            host.ops().iter().all(|o| !o.write),
            "{level:?}: a write reached the host"
        );
        vol.dismount();
    }
    let (host, vol) = volume();
    host.clear_ops();
    let (tx, rx) = std::sync::mpsc::channel();
    let request = TestRequest::write(4096, &pattern(4, 4096), move |c: Completion| {
        let _ = tx.send(c);
    });
    let cancel = request.cancel_handle();
    // Cancelled before dispatch: completed cancelled at once, nothing issued.
    cancel.cancel(|_| {});
    vcdirect_usermode::irql::dispatch_at(Irql::Passive, &vol, request);
    let c = rx.recv_timeout(WAIT).expect("completed");
    assert_eq!(c.status, Status::Cancelled);
    assert!(host.ops().is_empty());
    vol.dismount();
}

/// A small write the host refuses to start without a waiter (a held host) falls back to the
/// waiting way and still leaves the right bytes on the medium.
#[test]
fn a_refused_small_write_is_written_the_waiting_way() {
    security::set_caller(Caller::System);
    let (host, vol) = volume();
    host.hold();
    set_dispatch_level(Irql::Passive);
    let data = pattern(9, 8192);
    let rx = submit_write(&vol, 65536, &data);
    set_dispatch_level(Irql::Dispatch);
    wait_for("the worker's write reached the host", || {
        host.in_flight() == 1
    });
    host.release();
    let c = wait(&rx);
    assert_eq!((c.status, c.information), (Status::Success, 8192));
    let s = vol.counters.snapshot();
    assert_eq!((s.dispatch_issued, s.detached, s.direct_writes), (0, 0, 1));
    assert!(get_plain(&host.mem, DATA_OFFSET, 65536, 8192) == data);
    vol.dismount();
}

/// R12: a job a carrying work item took from the direct FIFO and could not issue (the host
/// refused its start) goes back to the FIFO's head, so the jobs queued after it do not
/// overtake it: the next taker gets it first, then the others in their order.
#[test]
fn r12_a_job_put_back_is_taken_before_the_jobs_queued_after_it() {
    use vcdirect::platform::{RequestQueue, Taken, UpperRequest};
    let queue = RequestQueue::<StdPlatform<MemoryHost>>::new().unwrap();
    for offset in [0u64, 4096, 8192] {
        queue
            .push_armed(TestRequest::read(offset, 512, |_| {}))
            .unwrap_or_else(|_| panic!("not cancelled"));
    }
    let first = queue
        .try_take_front_if(|r| r.offset() == 0)
        .expect("the head, with a queue permit free");
    queue
        .push_front_armed(first)
        .unwrap_or_else(|_| panic!("not cancelled"));
    // Put back, it counts as never taken (the simulator's overtaking check reads these).
    assert_eq!(queue.counts(), (3, 0));
    let order: Vec<i64> = (0..3)
        .map(|_| match queue.pop() {
            Taken::Request(r) => {
                let offset = r.offset();
                r.complete(Status::Success, 0);
                offset
            }
            Taken::Stop => panic!("no stop was queued"),
        })
        .collect();
    assert_eq!(order, [0, 4096, 8192]);
    assert_eq!(queue.counts(), (3, 3));
    assert!(queue.is_empty());
}
