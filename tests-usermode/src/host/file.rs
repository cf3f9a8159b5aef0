//! A real file or block device as host device.
//!
//! Opened with O_DIRECT (no page cache, as VeraCrypt opens its host with
//! FILE_NO_INTERMEDIATE_BUFFERING) when the file system allows it, and with O_DSYNC always, so
//! every write is write-through. Where O_DIRECT is refused the host says so
//! ([`FileHost::direct_message`]) and uses the page cache with O_DSYNC writes.
//! Positional I/O (pread/pwrite), so any number of threads use one handle at once; an operation
//! is carried out on the thread that starts it.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use vcdirect::platform::{Detached, HostDevice, HostKind, HostLimits, KeptRead, Origin};
use vcdirect::Status;

use super::memory::Counters;
use super::{HostCounters, ReadyIo};
use crate::request::Buf;

/// How to open a [`FileHost`].
#[derive(Clone, Debug)]
pub struct FileOptions {
    /// Try O_DIRECT (default true).
    pub allow_direct: bool,
    /// The kind to report; by default a file stands in for a raw device (the bench measures the
    /// direct path, which serves raw devices only).
    pub kind: Option<HostKind>,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            allow_direct: true,
            kind: None,
        }
    }
}

/// A file or block device. See the module documentation.
pub struct FileHost {
    file: File,
    path: PathBuf,
    size: u64,
    kind: HostKind,
    o_direct: bool,
    message: String,
    limits: HostLimits,
    counters: Counters,
}

fn open_with(path: &Path, direct: bool) -> io::Result<File> {
    let mut flags = libc::O_DSYNC;
    if direct {
        flags |= libc::O_DIRECT;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(flags)
        .open(path)
}

/// Splits a Linux `dev_t` into (major, minor) as glibc encodes it.
fn major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major, minor)
}

/// Reads a number from the block device's queue attributes in sysfs (partitions have theirs
/// on the parent disk).
fn queue_attr(dev: u64, name: &str) -> Option<u64> {
    let (major, minor) = major_minor(dev);
    let base = format!("/sys/dev/block/{major}:{minor}");
    [
        format!("{base}/queue/{name}"),
        format!("{base}/../queue/{name}"),
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .and_then(|s| s.trim().parse().ok())
}

fn status_of(err: &io::Error) -> Status {
    match err.raw_os_error() {
        Some(libc::EINVAL) => Status::InvalidParameter,
        Some(libc::ENOSPC) => Status::Host(0xC000_007F), // STATUS_DISK_FULL
        Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM) => Status::MediaWriteProtected,
        _ => Status::IoDeviceError,
    }
}

impl FileHost {
    /// Opens an existing file or block device read-write.
    pub fn open(path: impl AsRef<Path>, opts: &FileOptions) -> io::Result<FileHost> {
        let path = path.as_ref().to_path_buf();
        let meta = std::fs::metadata(&path)?;
        let is_block = meta.file_type().is_block_device();
        let dev = if is_block { meta.rdev() } else { meta.dev() };
        let lbs = queue_attr(dev, "logical_block_size")
            .filter(|v| v.is_power_of_two())
            .unwrap_or(512);

        let (file, o_direct, message) = if !opts.allow_direct {
            (
                open_with(&path, false)?,
                false,
                "O_DIRECT not requested: page cache with O_DSYNC writes".to_string(),
            )
        } else {
            match open_with(&path, true) {
                Ok(f) => match probe_direct(&f, lbs as usize) {
                    Ok(()) => (
                        f,
                        true,
                        "O_DIRECT in effect (with O_DSYNC writes)".to_string(),
                    ),
                    Err(e) => {
                        let f = open_with(&path, false)?;
                        let msg = format!(
                            "O_DIRECT refused by the file system ({e}): fallback to page cache with O_DSYNC writes"
                        );
                        (f, false, msg)
                    }
                },
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    let f = open_with(&path, false)?;
                    let msg = format!(
                        "O_DIRECT refused by the file system ({e}): fallback to page cache with O_DSYNC writes"
                    );
                    (f, false, msg)
                }
                Err(e) => return Err(e),
            }
        };
        let size = if is_block {
            (&file).seek(SeekFrom::End(0))?
        } else {
            meta.len()
        };
        let max_transfer = queue_attr(dev, "max_sectors_kb")
            .map(|kb| (kb * 1024).min(u64::from(u32::MAX)) as u32)
            .unwrap_or(1 << 20)
            .max(lbs as u32);
        let limits = HostLimits {
            sector_size: if o_direct { lbs as u32 } else { 512 },
            max_transfer,
            max_physical_pages: max_transfer / 4096 + 1,
            alignment_mask: if o_direct {
                (lbs as u32).max(4096) - 1
            } else {
                0
            },
            page_size: 4096,
        };
        let kind = opts.kind.unwrap_or(HostKind::RawDevice);
        Ok(FileHost {
            file,
            path,
            size,
            kind,
            o_direct,
            message,
            limits,
            counters: Counters::default(),
        })
    }

    /// Creates (or truncates) a regular file of `size` bytes filled with non-zero data, so reads
    /// hit the medium rather than holes, and opens it.
    pub fn create(path: impl AsRef<Path>, size: u64, opts: &FileOptions) -> io::Result<FileHost> {
        let path = path.as_ref();
        {
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)?;
            let mut block = vec![0u8; 1 << 20];
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            for b in block.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            let mut off = 0u64;
            while off < size {
                let n = (size - off).min(block.len() as u64) as usize;
                f.write_all_at(&block[..n], off)?;
                off += n as u64;
            }
            f.sync_all()?;
        }
        FileHost::open(path, opts)
    }

    /// Whether O_DIRECT is in effect.
    pub fn o_direct(&self) -> bool {
        self.o_direct
    }
    /// Says whether O_DIRECT is in effect and, if not, why and what is used instead.
    pub fn direct_message(&self) -> &str {
        &self.message
    }
    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// The counters so far.
    pub fn counters(&self) -> HostCounters {
        self.counters.snapshot()
    }

    fn do_read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(status_of(&e)),
            }
        }
        Ok(done)
    }

    fn do_write(&self, offset: u64, buf: &[u8]) -> Result<usize, Status> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.size)
        {
            return Err(Status::InvalidParameter);
        }
        let mut done = 0;
        while done < buf.len() {
            match self.file.write_at(&buf[done..], offset + done as u64) {
                Ok(0) => return Err(Status::IoDeviceError),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(status_of(&e)),
            }
        }
        Ok(done)
    }
}

/// Reads one aligned block to see whether O_DIRECT I/O works here (some file systems accept
/// the flag at open and refuse the I/O).
fn probe_direct(file: &File, lbs: usize) -> io::Result<()> {
    let len = lbs.max(4096);
    let mut buf = Buf::zeroed_aligned(len, len);
    file.read_at(buf.as_mut_slice(), 0).map(|_| ())
}

impl HostDevice for FileHost {
    type Io<'a> = ReadyIo<'a>;
    type Read<'a> = KeptRead<'a, ReadyIo<'a>>;

    fn kind(&self) -> HostKind {
        self.kind
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn limits(&self) -> HostLimits {
        self.limits
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadyIo<'a> {
        let result = self.do_read(offset, buf);
        self.counters.record(false, &result);
        ReadyIo::new(result, None)
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        let result = self.do_read(offset, buf);
        self.counters.record(false, &result);
        KeptRead::new(ReadyIo::new(result, None), buf)
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> ReadyIo<'a> {
        let result = self.do_write(offset, buf);
        self.counters.record(true, &result);
        ReadyIo::new(result, None)
    }
    /// Carried out now (pread on this thread), as every operation of this host; the end is
    /// reported at once on this thread, raised to DISPATCH_LEVEL as a completion routine that
    /// runs inside IoCallDriver.
    /// As [`start_read_detached`](Self::start_read_detached), for a write (pwrite, O_DSYNC).
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        _origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        let result = self.do_write(offset, buf);
        self.counters.record(true, &result);
        super::report_now(result, then);
        Ok(())
    }
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        _origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        let result = self.do_read(offset, buf);
        self.counters.record(false, &result);
        super::report_now(result, then);
        Ok(())
    }
    /// Synchronous host I/O: W9 checks the row.
    #[track_caller]
    fn flush(&self) -> Result<(), Status> {
        crate::irql::check(vcdirect::platform::irql::Call::HostSyncIo);
        self.counters.record_flush();
        self.file.sync_data().map_err(|e| status_of(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> PathBuf {
        // Under target/, on the same file system as the build (not a tmpfs /tmp).
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/host-tests");
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(format!("{name}-{}.img", std::process::id()))
    }

    #[test]
    fn read_after_write_with_aligned_buffers() {
        let path = temp_path("raw");
        let h = FileHost::create(&path, 1 << 20, &FileOptions::default()).unwrap();
        assert_eq!(h.size(), 1 << 20);
        let align = h.limits().alignment_mask as usize + 1;
        let mut data = Buf::zeroed_aligned(8192, align);
        data.as_mut_slice()
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i % 251) as u8);
        assert_eq!(h.write(65536, data.as_slice()), Ok(8192));
        let mut back = Buf::zeroed_aligned(8192, align);
        assert_eq!(h.read(65536, back.as_mut_slice()), Ok(8192));
        assert_eq!(back.as_slice(), data.as_slice());
        assert_eq!(
            h.write((1 << 20) - 4096, data.as_slice()),
            Err(Status::InvalidParameter),
            "past the end"
        );
        assert_eq!(
            h.read((1 << 20) - 4096, back.as_mut_slice()),
            Ok(4096),
            "short read at the end"
        );
        assert_eq!(h.flush(), Ok(()));
        let c = h.counters();
        assert_eq!((c.reads, c.writes, c.flushes, c.failures), (2, 2, 1, 1));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn o_direct_detection_is_reported_in_flag_limits_and_message() {
        let path = temp_path("direct");
        let h = FileHost::create(&path, 1 << 16, &FileOptions::default()).unwrap();
        if h.o_direct() {
            assert!(h.direct_message().contains("O_DIRECT in effect"));
            assert!(h.limits().alignment_mask >= 511);
            // A misaligned buffer is refused by the kernel, as a real device would refuse it.
            let mut buf = Buf::zeroed_aligned(4096 + 1, 4096);
            assert_eq!(
                h.read(0, &mut buf.as_mut_slice()[1..]),
                Err(Status::InvalidParameter)
            );
        } else {
            assert!(
                h.direct_message().contains("fallback"),
                "{}",
                h.direct_message()
            );
            assert_eq!(h.limits().alignment_mask, 0);
        }
        let opts = FileOptions {
            allow_direct: false,
            kind: Some(HostKind::FileContainer),
        };
        let h = FileHost::open(&path, &opts).unwrap();
        assert!(!h.o_direct());
        assert!(h.direct_message().contains("O_DIRECT not requested"));
        assert_eq!(h.kind(), HostKind::FileContainer);
        assert_eq!(h.limits().alignment_mask, 0);
        let mut buf = vec![0u8; 513];
        assert_eq!(
            h.read(0, &mut buf[1..]),
            Ok(512),
            "buffered I/O takes any buffer"
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_missing_file_is_an_error_not_a_panic() {
        assert!(FileHost::open("/nonexistent/vcdirect-host", &FileOptions::default()).is_err());
    }

    #[test]
    fn dev_numbers_split_like_glibc() {
        assert_eq!(major_minor(0xfd00), (253, 0));
        assert_eq!(major_minor((259 << 8) | 3), (259, 3));
    }
}
