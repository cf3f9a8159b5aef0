//! Direct reads issued on the dispatching thread (docs/design.md §5): which reads take that
//! way and which go to the workers, the security context the host sees and the one the
//! dispatching thread keeps (R11), the key erasure racing a decryption in the host's
//! completion context (R3), and the thread that completes the upper request (R1).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use vcdirect::direct::DISPATCH_READ_MAX;
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
fn small_reads_at_passive_level_are_issued_by_the_dispatching_thread_and_return_the_plaintext() {
    let (_host, vol) = volume();
    let truth = pattern(5, SIZE as usize);
    let cases = [
        // (level, offset, length, issued by the dispatching thread)
        (Irql::Passive, 0, 4096, true),
        (Irql::Passive, 512 * 9, 512, true),
        (Irql::Passive, 65536, DISPATCH_READ_MAX, true),
        // Longer than the cap: its decryption would be too long in a completion routine.
        (Irql::Passive, 0, DISPATCH_READ_MAX + 4096, false),
        // At DISPATCH_LEVEL the thread may not issue host I/O itself (W9).
        (Irql::Dispatch, 8192, 4096, false),
    ];
    for (level, offset, len, here) in cases {
        let before = vol.counters.snapshot();
        let c = read_at(&vol, level, offset, len);
        assert_eq!((c.status, c.information), (Status::Success, len as usize));
        let want = &truth[offset as usize..(offset + u64::from(len)) as usize];
        assert!(
            c.buf.as_ref().map(|b| b.as_slice()) == Some(want),
            "{level:?} {offset} {len}: wrong data"
        );
        let after = vol.counters.snapshot();
        assert_eq!(
            after.dispatch_reads - before.dispatch_reads,
            u64::from(here),
            "{level:?} {offset} {len}"
        );
        assert_eq!(after.direct_reads - before.direct_reads, 1);
    }
    vol.dismount();
}

/// R11: the host sees the mounting user's context on every way; the dispatching thread gets
/// back exactly the context it had; and the mounting user's context is lent only to the
/// threads the kernel's rule allows (`security::Caller`): a system thread of the System
/// process whatever it impersonates (saved and restored), a thread of another process only
/// when it impersonates nothing and its process holds SeImpersonatePrivilege. Any other
/// thread's read goes to the workers, its own context untouched.
#[test]
fn r11_the_dispatching_thread_issues_as_the_mounting_user_and_keeps_its_own_context() {
    let (host, vol) = volume();
    let client = Context::Client {
        token: 7,
        level: 2,
        effective_only: true,
    };
    let privileged = Caller::Process {
        impersonate_privilege: true,
    };
    let unprivileged = Caller::Process {
        impersonate_privilege: false,
    };
    for (caller, own, lent) in [
        (Caller::System, Context::Own, true),
        (Caller::System, client, true),
        (privileged, Context::Own, true),
        (privileged, client, false),
        (unprivileged, Context::Own, false),
    ] {
        security::set_caller(caller);
        security::set(own);
        let before = vol.counters.snapshot().dispatch_reads;
        let c = read_at(&vol, Irql::Passive, 4096, 4096);
        assert_eq!(c.status, Status::Success);
        assert_eq!(
            security::current(),
            own,
            "{caller:?} {own:?}: the thread's own context is restored"
        );
        assert_eq!(
            vol.counters.snapshot().dispatch_reads - before,
            u64::from(lent),
            "{caller:?} {own:?}"
        );
        // And at DISPATCH_LEVEL (the workers issue it): untouched as well.
        let c = read_at(&vol, Irql::Dispatch, 4096, 4096);
        assert_eq!(c.status, Status::Success);
        assert_eq!(security::current(), own);
    }
    security::set(Context::Own);
    security::set_caller(privileged);
    let seen = host.contexts();
    assert!(seen.iter().any(|(detached, _)| *detached));
    assert!(seen.iter().any(|(detached, _)| !*detached));
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
    assert_eq!((s.dispatch_reads, s.direct_reads), (0, 1));
    // Every permit came back: 8 reads at once still all go out.
    let c = read_at(&vol, Irql::Passive, 0, 4096);
    assert_eq!(c.status, Status::Success);
    assert_eq!(vol.counters.snapshot().dispatch_reads, 1);
    vol.dismount();
}

/// R3: erasing the keys while reads issued on the dispatching thread are in flight at a
/// device that completes them later (the model NVMe, whose completions run at
/// DISPATCH_LEVEL): each read either returns the plaintext or fails with
/// STATUS_DEVICE_BUSY; none returns bytes that were not decrypted, none hangs.
#[test]
fn r3_erase_racing_reads_finished_in_the_completion_context() {
    let params_model = ModelParams {
        latency: Duration::from_micros(300),
        ..ModelParams::nvme()
    };
    for round in 0..20u64 {
        let p = params(SIZE, BOTH_ON);
        let model = ModelHost::new(DATA_OFFSET + SIZE + 64 * KIB, params_model);
        put_plain(model.memory(), DATA_OFFSET, 0, &pattern(5, SIZE as usize));
        let host = Arc::new(StdHost::Model(model));
        let vol = Volume::mount(
            StdPlatform::<Arc<StdHost>>::new(0),
            Arc::clone(&host),
            &master_key(),
            p,
        )
        .expect("mount");
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
        assert!(vol.counters.snapshot().dispatch_reads > 0);
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
    assert_eq!(vol.counters.snapshot().dispatch_reads, 16);
    vol.dismount();
}

/// The memory medium without latency completes a detached read inside the start (a
/// synchronous completion): the issuer finishes it. Counted once, completed once.
#[test]
fn a_read_the_host_completed_before_its_start_returned_is_finished_once() {
    let p = params(SIZE, BOTH_ON);
    let host = ProbeHost::new(MemoryHost::new(DATA_OFFSET + SIZE + 64 * KIB));
    let vol = mount(host, p);
    for i in 0..100u64 {
        let c = read_at(&vol, Irql::Passive, (i % 64) * 4096, 4096);
        assert_eq!((c.status, c.information), (Status::Success, 4096));
    }
    let s = vol.counters.snapshot();
    assert_eq!((s.dispatch_reads, s.direct_reads), (100, 100));
    assert_eq!(vol.in_flight(), 0);
    vol.dismount();
}
