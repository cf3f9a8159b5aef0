//! docs/review.md W7: the caller's buffer is mapped only when a path's thread takes the
//! request (never at dispatch, never while it waits), and a mapping failure (system-PTE
//! pressure in the kernel) fails that request with STATUS_INSUFFICIENT_RESOURCES, which Mm and
//! Cc retry, with nothing issued to the host; the volume keeps serving. The std platform's
//! switch is `Buf::fail_mapping`; its `Buf` panics when the engine touches an unmapped buffer.

mod common;

use std::sync::mpsc;

use common::*;
use vcdirect::platform::RequestKind;
use vcdirect::registry::Gates;
use vcdirect::Status;
use vcdirect_usermode::request::{Buf, TestRequest};

const SIZE: u64 = 16 * MIB;
const LEN: u32 = 64 * 1024;

fn paths() -> [(&'static str, Gates); 2] {
    [("legacy", BOTH_OFF), ("direct", BOTH_ON)]
}

#[test]
fn w7_a_mapping_failure_fails_the_request_with_insufficient_resources_and_issues_nothing() {
    for (name, gates) in paths() {
        let p = params(SIZE, gates);
        let host = host_for(&p);
        let truth = pattern(5, SIZE as usize);
        put_plain(&host.mem, DATA_OFFSET, 0, &truth);
        let vol = mount(host.clone(), p);
        host.clear_ops();
        let medium = host.mem.snapshot();
        let before = vol.counters.snapshot();

        let unmappable_read = Buf::unread_aligned(LEN as usize, 4096).fail_mapping();
        let c = raw_request(&vol, RequestKind::Read, 0, LEN, Some(unmappable_read));
        assert_eq!(
            (c.status, c.information),
            (Status::InsufficientResources, 0),
            "{name} read"
        );
        let buf = c.buf.expect("the buffer comes back");
        assert!(!buf.was_mapped(), "{name}: nothing mapped");
        assert!(unread(buf.as_slice()), "{name}: read buffer untouched");

        let mut unmappable_write = Buf::zeroed_aligned(LEN as usize, 4096).fail_mapping();
        unmappable_write
            .as_mut_slice()
            .copy_from_slice(&pattern(9, LEN as usize));
        let c = raw_request(&vol, RequestKind::Write, 0, LEN, Some(unmappable_write));
        assert_eq!(
            (c.status, c.information),
            (Status::InsufficientResources, 0),
            "{name} write"
        );

        wait_until_idle(&vol);
        assert_eq!(host.ops(), Vec::new(), "{name}: nothing issued to the host");
        assert!(
            host.mem.snapshot() == medium,
            "{name}: the medium is untouched"
        );
        let after = vol.counters.snapshot();
        assert_eq!(after.failed - before.failed, 2, "{name}");
        // Both requests took the path their gates say (chosen at dispatch, before mapping).
        if name == "direct" {
            assert_eq!(after.direct_reads - before.direct_reads, 1, "{name}");
            assert_eq!(after.direct_writes - before.direct_writes, 1, "{name}");
        } else {
            assert_eq!(after.legacy_reads + after.legacy_writes, 0, "{name}");
        }

        // The volume keeps serving on the same path.
        let data = pattern(11, LEN as usize);
        assert_eq!(
            write(&vol, MIB, &data),
            (Status::Success, LEN as usize),
            "{name}"
        );
        let (status, n, bytes) = read(&vol, MIB, LEN);
        assert_eq!((status, n), (Status::Success, LEN as usize), "{name}");
        assert!(bytes == data, "{name}: the data written after the failure");
        let (status, _, bytes) = read(&vol, 0, LEN);
        assert_eq!(status, Status::Success, "{name}");
        assert!(bytes == truth[..LEN as usize], "{name}: nothing was lost");
        vol.dismount();
    }
}

#[test]
fn w7_a_request_is_mapped_only_once_a_path_takes_it_never_while_it_waits() {
    for (name, gates) in paths() {
        let p = params(SIZE, gates);
        let host = host_for(&p);
        let vol = mount(host.clone(), p);
        // Every place that works on a request is busy: 8 reads held in the host (8 direct
        // workers, or the legacy I/O thread with the main thread holding all 8 items).
        host.hold();
        let busy: Vec<_> = (0..8).map(|i| submit_read(&vol, i * MIB, LEN)).collect();
        let want = if gates.read { 8 } else { 1 };
        wait_for("the host holds the first reads", || {
            host.in_flight() == want
        });

        // A read that can only wait: cancel it there; its buffer comes back never mapped.
        let (tx, rx) = mpsc::channel();
        let waiting = TestRequest::read(9 * MIB, LEN, move |c| {
            let _ = tx.send(c);
        });
        let handle = waiting.cancel_handle();
        vol.dispatch(waiting);
        assert!(
            handle.cancel(|key| vol.cancel(key)),
            "{name}: the read was waiting"
        );
        let c = wait(&rx);
        assert_eq!(c.status, Status::Cancelled, "{name}");
        assert!(
            !c.buf.expect("buffer").was_mapped(),
            "{name}: mapped while waiting"
        );

        host.release();
        for rx in &busy {
            let c = wait(rx);
            assert_eq!(c.status, Status::Success, "{name}");
            assert!(
                c.buf.expect("buffer").was_mapped(),
                "{name}: served, so mapped"
            );
        }
        wait_until_idle(&vol);
        vol.dismount();
    }
}

#[test]
fn w7_a_request_without_a_buffer_is_still_an_invalid_user_buffer_on_both_paths() {
    for (name, gates) in paths() {
        let p = params(SIZE, gates);
        let host = host_for(&p);
        let vol = mount(host.clone(), p);
        host.clear_ops();
        for kind in [RequestKind::Read, RequestKind::Write] {
            let c = raw_request(&vol, kind, 0, LEN, None);
            assert_eq!(
                (c.status, c.information),
                (Status::InvalidUserBuffer, 0),
                "{name} {kind:?}"
            );
        }
        assert_eq!(host.ops(), Vec::new(), "{name}: nothing issued");
        vol.dismount();
    }
}
