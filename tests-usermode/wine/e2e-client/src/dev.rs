//! A device handle opened for overlapped I/O, and a runner that keeps several requests in
//! flight without ever having two overlapping ones in flight (so a model of the data stays
//! exact).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::VecDeque;
use std::fmt;
use std::ptr::null_mut;

use windows_sys::Win32::Foundation::{
    CloseHandle, GetLastError, ERROR_IO_PENDING, GENERIC_READ, GENERIC_WRITE, HANDLE,
    INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, FlushFileBuffers, ReadFile, WriteFile, FILE_FLAG_OVERLAPPED, FILE_SHARE_READ,
    FILE_SHARE_WRITE, OPEN_EXISTING,
};
use windows_sys::Win32::System::Threading::CreateEventW;
use windows_sys::Win32::System::IO::{
    CancelIoEx, DeviceIoControl, GetOverlappedResult, OVERLAPPED,
};

pub const ERROR_INVALID_FUNCTION: u32 = 1;
const IOCTL_DISK_GET_LENGTH_INFO: u32 = 0x0007_405C;
const IOCTL_STORAGE_QUERY_PROPERTY: u32 = 0x002D_1400;

/// A Win32 error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Win32(pub u32);

impl fmt::Display for Win32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.0 {
            1 => "ERROR_INVALID_FUNCTION",
            2 => "ERROR_FILE_NOT_FOUND",
            5 => "ERROR_ACCESS_DENIED",
            19 => "ERROR_WRITE_PROTECT",
            21 => "ERROR_NOT_READY",
            23 => "ERROR_CRC",
            38 => "ERROR_HANDLE_EOF",
            50 => "ERROR_NOT_SUPPORTED",
            87 => "ERROR_INVALID_PARAMETER",
            122 => "ERROR_INSUFFICIENT_BUFFER",
            170 => "ERROR_BUSY",
            483 => "ERROR_DEVICE_HARDWARE_ERROR",
            995 => "ERROR_OPERATION_ABORTED",
            1117 => "ERROR_IO_DEVICE",
            _ => "",
        };
        write!(f, "error {} {name}", self.0)
    }
}

fn last_error() -> Win32 {
    // SAFETY: no preconditions.
    Win32(unsafe { GetLastError() })
}

/// A zeroed buffer aligned to 4096 bytes (sector- and page-aligned, like a real I/O buffer).
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is uniquely owned heap memory.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len.max(1), 4096).expect("buffer layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        AlignedBuf { ptr, len }
    }
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` holds `len` initialized (zeroed or written) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len.max(1), 4096).expect("buffer layout");
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, layout) };
    }
}

/// One read (`write` is None) or write.
pub struct Op {
    pub offset: u64,
    pub length: usize,
    pub write: Option<Vec<u8>>,
}

impl Op {
    pub fn read(offset: u64, length: usize) -> Op {
        Op {
            offset,
            length,
            write: None,
        }
    }
    pub fn write(offset: u64, data: Vec<u8>) -> Op {
        Op {
            offset,
            length: data.len(),
            write: Some(data),
        }
    }
    fn overlaps(&self, other: &Op) -> bool {
        self.offset < other.offset + other.length as u64
            && other.offset < self.offset + self.length as u64
    }
}

/// What a run did.
#[derive(Debug, Default)]
pub struct IoOutcome {
    pub done: u64,
    pub failed: u64,
    pub max_in_flight: usize,
    pub first_error: String,
}

/// An operation in flight: its OVERLAPPED (boxed: the kernel writes to it until completion),
/// buffer and event.
struct InFlight {
    op: Op,
    ov: Box<OVERLAPPED>,
    buf: AlignedBuf,
    event: HANDLE,
}

/// A finished operation: its data (read or written) or its error.
pub type Finished = (Op, Result<AlignedBuf, Win32>);

/// A device opened for overlapped I/O.
pub struct Device {
    handle: HANDLE,
    path: String,
}

// SAFETY: a Win32 handle may be used from any thread.
unsafe impl Send for Device {}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(Some(0)).collect()
}

fn new_event() -> Result<HANDLE, String> {
    // SAFETY: default security, manual reset, not signalled, unnamed.
    let e = unsafe { CreateEventW(null_mut(), 1, 0, null_mut()) };
    if e.is_null() {
        Err(format!("CreateEventW: {}", last_error()))
    } else {
        Ok(e)
    }
}

fn overlapped(offset: u64, event: HANDLE) -> Box<OVERLAPPED> {
    // SAFETY: OVERLAPPED is plain data; zeroed is its documented initial state.
    let mut ov: Box<OVERLAPPED> = Box::new(unsafe { std::mem::zeroed() });
    ov.Anonymous.Anonymous.Offset = offset as u32;
    ov.Anonymous.Anonymous.OffsetHigh = (offset >> 32) as u32;
    ov.hEvent = event;
    ov
}

impl Device {
    pub fn open(path: &str) -> Result<Device, String> {
        let name = wide(path);
        // SAFETY: `name` is NUL-terminated; optional pointers are NULL.
        let handle = unsafe {
            CreateFileW(
                name.as_ptr(),
                GENERIC_READ | GENERIC_WRITE,
                FILE_SHARE_READ | FILE_SHARE_WRITE,
                null_mut(),
                OPEN_EXISTING,
                FILE_FLAG_OVERLAPPED,
                null_mut(),
            )
        };
        if handle == INVALID_HANDLE_VALUE {
            return Err(format!("cannot open {path}: {}", last_error()));
        }
        Ok(Device {
            handle,
            path: path.to_string(),
        })
    }

    /// Starts `op`; on an immediate failure returns the error.
    fn start(&self, op: Op) -> Result<InFlight, (Op, Win32)> {
        let event = match new_event() {
            Ok(e) => e,
            Err(_) => return Err((op, last_error())),
        };
        let mut buf = AlignedBuf::new(op.length);
        if let Some(data) = &op.write {
            buf.as_mut_slice().copy_from_slice(data);
        }
        let mut ov = overlapped(op.offset, event);
        // SAFETY: `buf` and `ov` live in the returned InFlight until the operation completes
        // (`finish` waits for it); the handle was opened for overlapped I/O.
        let ok = unsafe {
            if op.write.is_some() {
                WriteFile(self.handle, buf.ptr, op.length as u32, null_mut(), &mut *ov)
            } else {
                ReadFile(self.handle, buf.ptr, op.length as u32, null_mut(), &mut *ov)
            }
        };
        if ok == 0 {
            let e = last_error();
            if e.0 != ERROR_IO_PENDING {
                // SAFETY: our event, closed once.
                unsafe { CloseHandle(event) };
                return Err((op, e));
            }
        }
        Ok(InFlight { op, ov, buf, event })
    }

    /// Waits for `f` to complete: the data (read or written) or the error.
    fn finish(&self, f: InFlight) -> Finished {
        let mut n = 0u32;
        // SAFETY: `f.ov` is the OVERLAPPED of an operation started on this handle; waiting
        // (bWait = TRUE) returns only when it has completed.
        let ok = unsafe { GetOverlappedResult(self.handle, &*f.ov, &mut n, 1) };
        let result = if ok == 0 {
            Err(last_error())
        } else if n as usize != f.op.length {
            Err(Win32(38))
        } else {
            Ok(f.buf)
        };
        // SAFETY: our event, closed once, after the operation completed.
        unsafe { CloseHandle(f.event) };
        (f.op, result)
    }

    /// Runs `ops` with up to `qd` in flight, never two overlapping at once, in order of
    /// submission for overlapping ones. `done` gets each successful op and its data.
    pub fn run_ops(
        &self,
        ops: impl IntoIterator<Item = Op>,
        qd: usize,
        mut done: impl FnMut(&Op, &[u8]) -> Result<(), String>,
    ) -> Result<IoOutcome, String> {
        let mut out = IoOutcome::default();
        let mut flight: VecDeque<InFlight> = VecDeque::new();
        let mut reap = |f: InFlight, out: &mut IoOutcome| -> Result<(), String> {
            let (op, r) = self.finish(f);
            out.done += 1;
            match r {
                Ok(buf) => done(&op, buf.as_slice()),
                Err(e) => {
                    if out.failed == 0 {
                        out.first_error = format!(
                            "{} at {} length {}: {e}",
                            if op.write.is_some() { "write" } else { "read" },
                            op.offset,
                            op.length
                        );
                    }
                    out.failed += 1;
                    Ok(())
                }
            }
        };
        for op in ops {
            while flight.len() >= qd.max(1) || flight.iter().any(|f| f.op.overlaps(&op)) {
                let f = flight.pop_front().expect("in flight");
                reap(f, &mut out)?;
            }
            match self.start(op) {
                Ok(f) => flight.push_back(f),
                Err((op, e)) => {
                    if out.failed == 0 {
                        out.first_error =
                            format!("at {} length {}: {e} (at submission)", op.offset, op.length);
                    }
                    out.done += 1;
                    out.failed += 1;
                }
            }
            out.max_in_flight = out.max_in_flight.max(flight.len());
        }
        while let Some(f) = flight.pop_front() {
            reap(f, &mut out)?;
        }
        Ok(out)
    }

    /// Starts every op of `ops` at once, then cancels all of this handle's I/O (CancelIoEx
    /// with no OVERLAPPED) and waits for each: its data or its error, in submission order.
    pub fn start_all_then_cancel(&self, ops: Vec<Op>) -> Result<Vec<Finished>, String> {
        let mut flight = Vec::with_capacity(ops.len());
        for op in ops {
            match self.start(op) {
                Ok(f) => flight.push(f),
                Err((op, e)) => return Err(format!("at {}: {e} (at submission)", op.offset)),
            }
        }
        // SAFETY: our handle; a NULL OVERLAPPED cancels every request it has in flight.
        let ok = unsafe { CancelIoEx(self.handle, null_mut()) };
        if ok == 0 {
            // ERROR_NOT_FOUND: everything had completed already.
            println!("CancelIoEx: {}", last_error());
        }
        Ok(flight.into_iter().map(|f| self.finish(f)).collect())
    }

    /// One operation, waited for.
    pub fn one(&self, op: Op) -> Result<Vec<u8>, Win32> {
        match self.start(op) {
            Err((_, e)) => Err(e),
            Ok(f) => self.finish(f).1.map(|b| b.as_slice().to_vec()),
        }
    }

    /// DeviceIoControl with `input`, returning up to `out_len` bytes of output.
    pub fn ioctl(&self, code: u32, input: &[u8], out_len: usize) -> Result<Vec<u8>, Win32> {
        let event = new_event().map_err(|_| last_error())?;
        let mut ov = overlapped(0, event);
        let mut output = vec![0u8; out_len];
        let mut n = 0u32;
        // SAFETY: buffers and `ov` outlive the call and the wait below.
        let ok = unsafe {
            DeviceIoControl(
                self.handle,
                code,
                if input.is_empty() {
                    null_mut()
                } else {
                    input.as_ptr().cast()
                },
                input.len() as u32,
                if output.is_empty() {
                    null_mut()
                } else {
                    output.as_mut_ptr().cast()
                },
                out_len as u32,
                null_mut(),
                &mut *ov,
            )
        };
        let mut result = Ok(());
        if ok == 0 {
            let e = last_error();
            if e.0 != ERROR_IO_PENDING {
                result = Err(e);
            }
        }
        if result.is_ok() {
            // SAFETY: as in `finish`.
            if unsafe { GetOverlappedResult(self.handle, &*ov, &mut n, 1) } == 0 {
                result = Err(last_error());
            }
        }
        // SAFETY: our event, closed once.
        unsafe { CloseHandle(event) };
        result.map(|()| {
            output.truncate(n as usize);
            output
        })
    }

    /// IOCTL_DISK_GET_LENGTH_INFO.
    pub fn length(&self) -> Result<u64, String> {
        let out = self
            .ioctl(IOCTL_DISK_GET_LENGTH_INFO, &[], 8)
            .map_err(|e| format!("{}: IOCTL_DISK_GET_LENGTH_INFO: {e}", self.path))?;
        let bytes: [u8; 8] = out
            .as_slice()
            .try_into()
            .map_err(|_| format!("IOCTL_DISK_GET_LENGTH_INFO returned {} bytes", out.len()))?;
        Ok(u64::from_le_bytes(bytes))
    }

    /// IOCTL_STORAGE_QUERY_PROPERTY(StorageAdapterProperty): (max transfer, max pages, mask).
    pub fn adapter_limits(&self) -> Result<(u32, u32, u32), String> {
        let mut query = [0u8; 12];
        query[0] = 1; // StorageAdapterProperty, PropertyStandardQuery
        let out = self
            .ioctl(IOCTL_STORAGE_QUERY_PROPERTY, &query, 32)
            .map_err(|e| format!("IOCTL_STORAGE_QUERY_PROPERTY: {e}"))?;
        if out.len() < 20 {
            return Err(format!("adapter descriptor of {} bytes", out.len()));
        }
        let u = |o: usize| u32::from_le_bytes([out[o], out[o + 1], out[o + 2], out[o + 3]]);
        Ok((u(8), u(12), u(16)))
    }

    pub fn flush(&self) -> Result<(), String> {
        // SAFETY: an open handle.
        if unsafe { FlushFileBuffers(self.handle) } == 0 {
            return Err(format!("FlushFileBuffers: {}", last_error()));
        }
        Ok(())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: our handle, closed once; no operation is in flight (run_ops drains).
        unsafe { CloseHandle(self.handle) };
    }
}
