//! Arbitrary device controls at a volume device's portable answers (`disk_ioctl::answer`): the
//! code (one the answers know, or any), both lengths, the system buffer's bytes (possibly
//! shorter than the lengths claim) and the volume's facts. Asserts the reply rules: no panic,
//! never more bytes reported than the output holds, none on failure, nothing written past the
//! output length, and the answers never read the host (IOCTL_DISK_VERIFY is served by the
//! engine; its input check `disk_ioctl::verify_range` is fed the same bytes).
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;
use vcdirect::disk_ioctl::{self, code, DiskFacts, Request};
use vcdirect::platform::{HostDevice, HostIo, HostKind, HostLimits, KeptRead};
use vcdirect::Status;

const SIZE: u64 = 1 << 20;
const OFFSET: u64 = 64 * 1024;

/// A host of zeros that records the range its reads reached.
struct Host {
    lowest: AtomicU64,
    highest: AtomicU64,
}

struct Done(Result<usize, Status>);

impl HostIo for Done {
    fn wait(self) -> Result<usize, Status> {
        self.0
    }
}

impl HostDevice for Host {
    type Io<'a> = Done;
    type Read<'a> = KeptRead<'a, Done>;
    fn kind(&self) -> HostKind {
        HostKind::RawDevice
    }
    fn size(&self) -> u64 {
        OFFSET + SIZE
    }
    fn limits(&self) -> HostLimits {
        HostLimits::unlimited()
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Done {
        self.lowest.fetch_min(offset, Ordering::Relaxed);
        self.highest
            .fetch_max(offset + buf.len() as u64, Ordering::Relaxed);
        buf.fill(0);
        Done(Ok(buf.len()))
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        let io = self.start_read(offset, buf);
        KeptRead::new(io, buf)
    }
    fn start_write<'a>(&'a self, _: u64, _: &'a [u8]) -> Done {
        Done(Err(Status::InvalidDeviceRequest))
    }
    fn flush(&self) -> Result<(), Status> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let pick = usize::from(data[0]);
    let code_ = code::NAMED.get(pick).map_or_else(
        || u32::from_le_bytes([data[1], data[2], data[3], data[4]]),
        |(_, c)| *c,
    );
    let input_len = usize::from(data[5]);
    let output_len = usize::from(data[6]) * 4 + usize::from(data[7] & 3);
    let flags = data[7];
    let mut buffer: Vec<u8> = data[8..].to_vec();
    if flags & 0x80 == 0 {
        // As the I/O manager allocates it: max(input, output) bytes.
        buffer.resize(input_len.max(output_len), 0);
    }
    let before = buffer.clone();
    let device: Vec<u16> = "\\Device\\VcVolume7".encode_utf16().collect();
    let link: Vec<u16> = "\\DosDevices\\Z:".encode_utf16().collect();
    let facts = DiskFacts {
        size: SIZE,
        sector_size: if flags & 0x40 == 0 { 512 } else { 4096 },
        read_only: flags & 0x20 != 0,
        volume_id: 7,
        device_name: &device,
        unique_id: &[0xAB; 20],
        suggested_link: (flags & 0x10 == 0).then_some(&link[..]),
    };
    let host = Host {
        lowest: AtomicU64::new(u64::MAX),
        highest: AtomicU64::new(0),
    };
    let reply = disk_ioctl::answer(
        &facts,
        &host,
        Request {
            code: code_,
            input_len,
            output_len,
            buffer: &mut buffer,
        },
    );
    let out = output_len.min(before.len());
    assert!(reply.information <= out, "{reply:?}");
    if disk_ioctl::is_error(reply.status) {
        assert_eq!(reply.information, 0);
    }
    assert_eq!(&buffer[out..], &before[out..], "wrote past the output");
    let (low, high) = (
        host.lowest.load(Ordering::Relaxed),
        host.highest.load(Ordering::Relaxed),
    );
    assert_eq!((low, high), (u64::MAX, 0), "the answers read the host");
    if code_ == code::DISK_VERIFY {
        let _ = disk_ioctl::verify_range(&before, input_len);
    }
});
