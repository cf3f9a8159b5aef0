//! docs/review.md W11: what the direct path tells the host about the upper request a segment
//! serves. The kernel host builds each child IRP from it: a read's data as a partial MDL of the
//! upper request's MDL (the origin names that MDL and the segment's offset in it), and its I/O
//! priority hint. Never its paging flags (`Origin` has none: the child goes to the host
//! handle's device, not a disk; `driver/tests/w11_child_irp_flags.rs` holds the glue to it).

mod common;

use std::sync::{mpsc, Arc, Mutex};

use common::*;
use vcdirect::platform::{
    BufOrigin, HostDevice, HostKind, HostLimits, IoBuf, KeptRead, Origin, RequestKind,
};
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::host::{MemoryHost, ReadyIo};
use vcdirect_usermode::request::{Buf, TestRequest};
use vcdirect_usermode::std_platform::StdPlatform;

/// One host operation as the host saw it.
#[derive(Clone, Copy, Debug)]
struct Seen {
    write: bool,
    addr: usize,
    len: usize,
    /// `None`: started without an origin (`start_read`/`start_write`).
    origin: Option<Origin>,
}

/// A memory host that records the origin of every operation.
#[derive(Clone)]
struct OriginHost {
    mem: Arc<MemoryHost>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl OriginHost {
    fn record(&self, write: bool, addr: usize, len: usize, origin: Option<Origin>) {
        self.seen.lock().unwrap().push(Seen {
            write,
            addr,
            len,
            origin,
        });
    }
}

impl HostDevice for OriginHost {
    type Io<'a> = ReadyIo<'a>;
    type Read<'a> = KeptRead<'a, ReadyIo<'a>>;

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
        self.record(false, buf.as_ptr() as usize, buf.len(), None);
        self.mem.start_read(offset, buf)
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        self.record(false, buf.as_ptr() as usize, buf.len(), None);
        self.mem.start_read_kept(offset, buf)
    }
    fn start_read_kept_for<'a>(
        &'a self,
        offset: u64,
        buf: &'a mut [u8],
        origin: Origin,
    ) -> Self::Read<'a> {
        self.record(false, buf.as_ptr() as usize, buf.len(), Some(origin));
        self.mem.start_read_kept(offset, buf)
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> ReadyIo<'a> {
        self.record(true, buf.as_ptr() as usize, buf.len(), None);
        self.mem.start_write(offset, buf)
    }
    fn start_read_for<'a>(&'a self, offset: u64, buf: &'a mut [u8], origin: Origin) -> ReadyIo<'a> {
        self.record(false, buf.as_ptr() as usize, buf.len(), Some(origin));
        self.mem.start_read(offset, buf)
    }
    fn start_write_for<'a>(&'a self, offset: u64, buf: &'a [u8], origin: Origin) -> ReadyIo<'a> {
        self.record(true, buf.as_ptr() as usize, buf.len(), Some(origin));
        self.mem.start_write(offset, buf)
    }
    fn flush(&self) -> Result<(), Status> {
        self.mem.flush()
    }
}

/// A direct read or write of `buf` at `offset`, with a priority hint or not; its status.
fn transfer(
    vol: &Arc<Volume<StdPlatform<OriginHost>>>,
    kind: RequestKind,
    offset: u64,
    buf: Buf,
    priority: Option<u8>,
) -> Status {
    let (tx, rx) = mpsc::channel();
    let len = buf.len() as u32;
    let mut req = TestRequest::new(kind, offset as i64, len, Some(buf), move |c| {
        let _ = tx.send(c.status);
    });
    if let Some(hint) = priority {
        req = req.with_priority_hint(hint);
    }
    vol.dispatch(req);
    rx.recv_timeout(WAIT).expect("request did not complete")
}

#[test]
fn w11_direct_segments_name_the_callers_memory_and_priority() {
    let size = 2 * MIB;
    let mem = MemoryHost::new(DATA_OFFSET + size + 64 * KIB).with_limits(HostLimits {
        max_transfer: 64 * 1024,
        alignment_mask: 511,
        ..HostLimits::unlimited()
    });
    let host = OriginHost {
        mem: Arc::new(mem),
        seen: Arc::new(Mutex::new(Vec::new())),
    };
    let vol = Volume::mount(
        StdPlatform::new(0),
        host.clone(),
        &master_key(),
        params(size, BOTH_ON),
    )
    .expect("mount");

    for priority in [None, Some(1), Some(4)] {
        // A write of 160 KiB: three segments from the worker's buffer, none of them caller
        // memory, each with the request's priority.
        host.seen.lock().unwrap().clear();
        let data = pattern(3, 160 * 1024);
        let mut wbuf = buf_at_page_offset(data.len(), 0);
        wbuf.as_mut_slice().copy_from_slice(&data);
        assert_eq!(
            transfer(&vol, RequestKind::Write, 0, wbuf, priority),
            Status::Success
        );
        let seen = host.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3, "{seen:?}");
        for s in &seen {
            assert!(s.write);
            assert_eq!(
                s.origin,
                Some(Origin {
                    priority,
                    memory: None
                }),
                "{s:?}"
            );
        }

        // A read of 160 KiB into a buffer 512 bytes past a page boundary: every segment names
        // the caller's buffer and its own offset in it.
        host.seen.lock().unwrap().clear();
        let rbuf = buf_at_page_offset(data.len(), 512);
        let (base, start) = (rbuf.origin().unwrap(), rbuf.address());
        assert_eq!(
            transfer(&vol, RequestKind::Read, 0, rbuf, priority),
            Status::Success
        );
        let seen = host.seen.lock().unwrap().clone();
        assert!(seen.len() >= 3, "{seen:?}");
        let mut next = 0;
        for s in &seen {
            assert!(!s.write);
            let pos = s.addr - start;
            assert_eq!(pos, next, "segments in order, back to back");
            let expected = BufOrigin {
                descriptor: base.descriptor,
                offset: base.offset + pos,
            };
            assert_eq!(
                s.origin,
                Some(Origin {
                    priority,
                    memory: Some(expected),
                }),
                "{s:?}"
            );
            next = pos + s.len;
        }
        assert_eq!(next, data.len());
    }
    vol.dismount();
}
