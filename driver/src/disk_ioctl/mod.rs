//! W10: the answers a mounted volume's disk device gives to the device controls a file system,
//! the volume stack, the mount manager and Explorer send it, and to IRP_MJ_PNP.
//!
//! Owns: which codes are answered and how (status, reply bytes, information) for a METHOD_BUFFERED
//! system buffer, the reply layouts (`layout`), the IOCTL codes (`code`), IOCTL_DISK_VERIFY's
//! input check and length cap ([`verify_range`], [`VERIFY_MAX`]; the engine reads its range,
//! `RequestKind::Verify`), and the PnP device-usage refusal ([`pnp`]). The answers are VeraCrypt
//! 1.26's with its "extended disk control codes" option on and TRIM off; the conformance table
//! `docs/disk-ioctls.tsv` lists every answer with VeraCrypt's, and the few deliberate
//! differences with their reason (tests-usermode/tests/w10_disk_ioctls.rs walks it).
//! Never: touches an IRP (the glue passes the system buffer and its two lengths, and completes
//! with the [`Reply`]); reads the host; allocates.
//!
//! Rules every answer keeps: an unknown code is STATUS_INVALID_DEVICE_REQUEST whatever its
//! buffers; `information` never exceeds the output length (the I/O manager copies that many
//! bytes back to the caller); a failure reports 0 bytes; input is read in full before the reply
//! is written over it (METHOD_BUFFERED shares one buffer).

pub mod code;
pub(crate) mod layout;
pub mod pnp;

use crate::platform::HostDevice;
use crate::Status;
use layout as at;

/// STATUS_BUFFER_TOO_SMALL.
pub const BUFFER_TOO_SMALL: Status = Status::Host(0xC000_0023);
/// STATUS_BUFFER_OVERFLOW (a warning: part of the reply was written).
pub const BUFFER_OVERFLOW: Status = Status::Host(0x8000_0005);
/// STATUS_NOT_SUPPORTED.
pub const NOT_SUPPORTED: Status = Status::Host(0xC000_00BB);
/// STATUS_NOT_FOUND.
pub const NOT_FOUND: Status = Status::Host(0xC000_0225);
/// STATUS_UNSUCCESSFUL.
pub const UNSUCCESSFUL: Status = Status::Host(0xC000_0001);

/// MEDIA_TYPE FixedMedia.
const FIXED_MEDIA: u32 = 12;
/// FILE_DEVICE_DISK.
const FILE_DEVICE_DISK: u32 = 7;
/// STORAGE_BUS_TYPE BusTypeVirtual.
const BUS_TYPE_VIRTUAL: u8 = 0x0E;
/// MEDIA_CURRENTLY_MOUNTED, MEDIA_READ_ONLY, MEDIA_READ_WRITE, MEDIA_WRITE_PROTECTED.
const MEDIA_CURRENTLY_MOUNTED: u32 = 0x8000_0000;
const MEDIA_READ_ONLY: u32 = 0x0000_0004;
const MEDIA_READ_WRITE: u32 = 0x0000_0008;
const MEDIA_WRITE_PROTECTED: u32 = 0x0000_0100;
/// The longest range one IOCTL_DISK_VERIFY reads (4 MiB); a longer one is refused with
/// STATUS_INVALID_PARAMETER before the host sees it. VeraCrypt 1.26 reads any length up to
/// 4 GiB in its volume thread. vcdirect also serves it on an engine thread, in turn with the
/// volume's I/O, but the IOCTL is FILE_ANY_ACCESS (any handle, even one opened for no access,
/// may send it), so one call is bounded: it holds its range in the volume's ordering and a
/// path's thread for at most 4 MiB of host reads (a legacy item for 16 fragments; the direct
/// workers take a VERIFY of 1 MiB at most, as they take reads), as long as a 4 MiB read, never
/// longer. And one at a time per volume: another sent while one is in service waits its turn
/// (`Volume::dispatch`).
/// File systems verify cluster runs far shorter than this.
pub const VERIFY_MAX: u32 = 4 << 20;
/// The partition type VeraCrypt reports for a mounted volume (PARTITION_ENTRY_UNUSED).
const PARTITION_TYPE: u8 = 0;

/// What the answers say about the volume (the glue fills it from the mounted volume; nothing
/// here is allocated per request).
#[derive(Clone, Copy, Debug)]
pub struct DiskFacts<'a> {
    /// Volume size in bytes (the data area).
    pub size: u64,
    /// The volume's sector size.
    pub sector_size: u32,
    /// Mounted read-only.
    pub read_only: bool,
    /// The mount's id (the MBR disk signature is its CRC-32, as VeraCrypt derives it from its
    /// unique volume id).
    pub volume_id: u32,
    /// `\Device\...` name of the volume device (IOCTL_MOUNTDEV_QUERY_DEVICE_NAME).
    pub device_name: &'a [u16],
    /// The bytes IOCTL_MOUNTDEV_QUERY_UNIQUE_ID answers.
    pub unique_id: &'a [u8],
    /// IOCTL_MOUNTDEV_QUERY_SUGGESTED_LINK_NAME's name (`\DosDevices\X:`), if any.
    pub suggested_link: Option<&'a [u16]>,
}

/// A device control as the I/O manager hands it over for METHOD_BUFFERED: one system buffer of
/// `max(input_len, output_len)` bytes, the input first, the reply written over it.
#[derive(Debug)]
pub struct Request<'b> {
    /// IoControlCode.
    pub code: u32,
    /// InputBufferLength.
    pub input_len: usize,
    /// OutputBufferLength.
    pub output_len: usize,
    /// The system buffer (empty when the I/O manager gave none); lengths beyond it count as
    /// what it holds.
    pub buffer: &'b mut [u8],
}

/// The answer: the IRP's final status and IoStatus.Information.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Final status.
    pub status: Status,
    /// Bytes of the reply (never more than the output length; 0 on failure).
    pub information: usize,
}

impl Reply {
    const fn new(status: Status, information: usize) -> Reply {
        Reply {
            status,
            information,
        }
    }
    const fn status(status: Status) -> Reply {
        Reply::new(status, 0)
    }
}

/// NT_ERROR: a failure (severity 3), after which the I/O manager copies nothing back.
pub const fn is_error(status: Status) -> bool {
    status.ntstatus() >> 30 == 3
}

/// Answers one device control on a volume device; `host` is the volume's host (only its
/// limits are asked). IRQL: any up to DISPATCH_LEVEL: the answers only compute. IOCTL_DISK_VERIFY
/// is not answered here ([`verify_range`]; refused should it be asked).
pub fn answer<H: HostDevice>(facts: &DiskFacts<'_>, host: &H, request: Request<'_>) -> Reply {
    let held = request.buffer.len();
    let input_len = request.input_len.min(held);
    let output_len = request.output_len.min(held);
    let mut input = [0u8; at::VERIFY_SIZE];
    let copied = input_len.min(input.len());
    input[..copied].copy_from_slice(&request.buffer[..copied]);
    let input = Input {
        bytes: &input[..copied],
        len: input_len,
    };
    let out = Out {
        buf: &mut request.buffer[..output_len],
    };
    let reply = serve(facts, host, request.code, input, out);
    if is_error(reply.status) || reply.information > output_len {
        debug_assert!(
            reply.information == 0,
            "a failure or an oversized reply reports bytes: {reply:?} for {:#x}",
            request.code
        );
        return Reply::new(reply.status, 0);
    }
    reply
}

/// The input buffer: its first bytes (as many as any parser reads) and its length.
#[derive(Clone, Copy)]
struct Input<'a> {
    bytes: &'a [u8],
    len: usize,
}

// Every parser checks `len` against its structure's size first, and the copy holds the first
// `VERIFY_SIZE` bytes, so each field a parser reads is in `bytes`.
const _: () = assert!(at::PROPERTY_QUERY_SIZE <= at::VERIFY_SIZE);

impl Input<'_> {
    /// The u32 at `at`; a field past the bytes copied reads as 0, never a panic (W6: the
    /// parsers' size checks make that unreachable).
    fn u32(&self, at: usize) -> u32 {
        at.checked_add(4)
            .and_then(|end| self.bytes.get(at..end))
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from(self.u32(at)) | (u64::from(self.u32(at + 4)) << 32)
    }
}

/// The output buffer, exactly `output_len` bytes.
struct Out<'a> {
    buf: &'a mut [u8],
}

impl Out<'_> {
    fn len(&self) -> usize {
        self.buf.len()
    }
    /// VeraCrypt's output check: too small is STATUS_BUFFER_TOO_SMALL; otherwise the whole
    /// output is zeroed before the reply is written.
    fn fits(&mut self, n: usize) -> bool {
        if self.buf.len() < n {
            return false;
        }
        self.buf.fill(0);
        true
    }
    fn u8(&mut self, at: usize, v: u8) {
        self.buf[at] = v;
    }
    fn u16(&mut self, at: usize, v: u16) {
        self.buf[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, at: usize, v: u32) {
        self.buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, at: usize, v: u64) {
        self.buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// A reply of one fixed-size structure: BUFFER_TOO_SMALL below `size`, else the output zeroed,
/// `write` run, and `size` bytes reported.
fn fixed(out: &mut Out<'_>, size: usize, write: impl FnOnce(&mut Out<'_>)) -> Reply {
    if !out.fits(size) {
        return Reply::status(BUFFER_TOO_SMALL);
    }
    write(out);
    Reply::new(Status::Success, size)
}

fn serve<H: HostDevice>(
    facts: &DiskFacts<'_>,
    host: &H,
    code_: u32,
    input: Input<'_>,
    mut out: Out<'_>,
) -> Reply {
    use code::*;
    let geometry = Geometry::of(facts);
    match code_ {
        MOUNTDEV_QUERY_DEVICE_NAME => {
            let name = facts.device_name;
            counted(
                &mut out,
                at::MOUNTDEV_NAME_SIZE,
                at::MOUNTDEV_NAME_LENGTH,
                name.len() * 2,
                |o, at| {
                    for (i, c) in name.iter().enumerate() {
                        o.u16(at + 2 * i, *c);
                    }
                },
            )
        }
        MOUNTDEV_QUERY_UNIQUE_ID => {
            let id = facts.unique_id;
            counted(
                &mut out,
                at::MOUNTDEV_NAME_SIZE,
                at::MOUNTDEV_NAME_LENGTH,
                id.len(),
                |o, at| o.buf[at..at + id.len()].copy_from_slice(id),
            )
        }
        MOUNTDEV_QUERY_SUGGESTED_LINK_NAME => match facts.suggested_link {
            None => Reply::status(NOT_FOUND),
            Some(_) if out.len() < at::SUGGESTED_LINK_SIZE => {
                Reply::status(Status::InvalidParameter)
            }
            Some(link) => {
                // UseOnlyIfThereAreNoOtherLinks stays FALSE (the zeroed byte).
                counted(
                    &mut out,
                    at::SUGGESTED_LINK_SIZE,
                    at::SUGGESTED_LINK_NAME_LENGTH,
                    link.len() * 2,
                    |o, at| {
                        for (i, c) in link.iter().enumerate() {
                            o.u16(at + 2 * i, *c);
                        }
                    },
                )
            }
        },
        DISK_GET_DRIVE_GEOMETRY
        | DISK_GET_MEDIA_TYPES
        | STORAGE_GET_MEDIA_TYPES
        | DISK_UPDATE_DRIVE_SIZE => fixed(&mut out, at::GEOMETRY_SIZE, |o| geometry.write(o, 0)),
        DISK_GET_DRIVE_GEOMETRY_EX => {
            if !out.fits(at::GEOMETRY_EX_SIZE) {
                return Reply::status(BUFFER_TOO_SMALL);
            }
            geometry.write(&mut out, 0);
            out.u64(at::GEOMETRY_EX_DISK_SIZE, geometry.disk_size);
            if out.len() < at::GEOMETRY_EX_FULL_SIZE {
                return Reply::new(Status::Success, at::GEOMETRY_EX_SIZE);
            }
            let p = at::GEOMETRY_EX_PARTITION;
            out.u32(p, at::DISK_PARTITION_INFO_SIZE as u32);
            out.u32(p + at::DISK_PARTITION_INFO_STYLE, 0); // PARTITION_STYLE_MBR
            out.u32(p + at::DISK_PARTITION_INFO_SIGNATURE, geometry.signature);
            out.u32(
                at::GEOMETRY_EX_DETECTION,
                at::DISK_DETECTION_INFO_SIZE as u32,
            );
            Reply::new(Status::Success, at::GEOMETRY_EX_FULL_SIZE)
        }
        STORAGE_GET_MEDIA_TYPES_EX => fixed(&mut out, at::MEDIA_TYPES_SIZE, |o| {
            o.u32(at::MEDIA_TYPES_DEVICE_TYPE, FILE_DEVICE_DISK);
            o.u32(at::MEDIA_TYPES_COUNT, 1);
            let m = at::MEDIA_TYPES_INFO;
            o.u64(m + at::MEDIA_INFO_CYLINDERS, geometry.cylinders);
            o.u32(m + at::MEDIA_INFO_MEDIA_TYPE, FIXED_MEDIA);
            o.u32(m + at::MEDIA_INFO_TRACKS, 1);
            o.u32(m + at::MEDIA_INFO_SECTORS, 1);
            o.u32(m + at::MEDIA_INFO_BYTES_PER_SECTOR, facts.sector_size);
            o.u32(m + at::MEDIA_INFO_SIDES, 1);
            let access = if facts.read_only {
                MEDIA_READ_ONLY | MEDIA_WRITE_PROTECTED
            } else {
                MEDIA_READ_WRITE
            };
            o.u32(
                m + at::MEDIA_INFO_CHARACTERISTICS,
                MEDIA_CURRENTLY_MOUNTED | access,
            );
        }),
        STORAGE_QUERY_PROPERTY => storage_property(facts, host, input, &mut out),
        DISK_GET_PARTITION_INFO => {
            fixed(&mut out, at::PARTITION_SIZE, |o| geometry.partition(o, 0))
        }
        DISK_GET_PARTITION_INFO_EX => fixed(&mut out, at::PARTITION_EX_SIZE, |o| {
            geometry.partition_ex(o, 0)
        }),
        DISK_GET_DRIVE_LAYOUT => {
            // With room for four entries VeraCrypt reports four (three unused), else one.
            let full = at::LAYOUT_SIZE + 3 * at::PARTITION_SIZE;
            let reply = fixed(&mut out, at::LAYOUT_SIZE, |o| {
                let count = if o.len() >= full { 4 } else { 1 };
                o.u32(at::LAYOUT_COUNT, count);
                o.u32(at::LAYOUT_SIGNATURE, geometry.signature);
                geometry.partition(o, at::LAYOUT_ENTRY);
            });
            match reply.status {
                Status::Success if out.len() >= full => Reply::new(Status::Success, full),
                _ => reply,
            }
        }
        DISK_GET_DRIVE_LAYOUT_EX => {
            let full = at::LAYOUT_EX_SIZE + 3 * at::PARTITION_EX_SIZE;
            let reply = fixed(&mut out, at::LAYOUT_EX_SIZE, |o| {
                o.u32(at::LAYOUT_EX_STYLE, 0); // PARTITION_STYLE_MBR
                let count = if o.len() >= full { 4 } else { 1 };
                o.u32(at::LAYOUT_EX_COUNT, count);
                o.u32(at::LAYOUT_EX_SIGNATURE, geometry.signature);
                geometry.partition_ex(o, at::LAYOUT_EX_ENTRY);
            });
            match reply.status {
                Status::Success if out.len() >= full => Reply::new(Status::Success, full),
                _ => reply,
            }
        }
        DISK_GET_LENGTH_INFO => fixed(&mut out, at::LENGTH_INFO_SIZE, |o| {
            o.u64(at::LENGTH_INFO_LENGTH, facts.size)
        }),
        // Never answered here: the glue checks its input with `verify_range` and hands it to
        // the engine, which reads the range on a path's thread. Asked anyway, it is refused.
        DISK_VERIFY => Reply::status(Status::InvalidDeviceRequest),
        DISK_CHECK_VERIFY | STORAGE_CHECK_VERIFY | STORAGE_CHECK_VERIFY2 => {
            // The media change count, when there is room for it.
            if out.len() >= 4 {
                out.u32(0, 0);
                Reply::new(Status::Success, 4)
            } else {
                Reply::status(Status::Success)
            }
        }
        DISK_IS_WRITABLE if facts.read_only => Reply::status(Status::MediaWriteProtected),
        DISK_IS_WRITABLE
        | VOLUME_ONLINE
        | VOLUME_POST_ONLINE
        | EFS_ACCESS_WINDOWS10
        | DISK_UPDATE_PROPERTIES
        | DISK_MEDIA_REMOVAL
        | STORAGE_MEDIA_REMOVAL => Reply::status(Status::Success),
        STORAGE_READ_CAPACITY => fixed(&mut out, at::CAPACITY_SIZE, |o| {
            o.u32(at::CAPACITY_VERSION, at::CAPACITY_SIZE as u32);
            o.u32(at::CAPACITY_SIZE_FIELD, at::CAPACITY_SIZE as u32);
            o.u32(at::CAPACITY_BLOCK_LENGTH, facts.sector_size);
            o.u64(at::CAPACITY_BLOCKS, geometry.cylinders);
            o.u64(at::CAPACITY_DISK_LENGTH, geometry.disk_size);
        }),
        STORAGE_GET_HOTPLUG_INFO => fixed(&mut out, at::HOTPLUG_SIZE, |o| {
            // Not removable, no hotplug, no write-cache override.
            o.u32(at::HOTPLUG_SIZE_FIELD, at::HOTPLUG_SIZE as u32);
        }),
        // A BOOLEAN FALSE.
        VOLUME_IS_DYNAMIC | DISK_IS_CLUSTERED => fixed(&mut out, 1, |_| {}),
        // No GPT attribute: the volume presents itself as an MBR partition.
        VOLUME_GET_GPT_ATTRIBUTES => fixed(&mut out, at::GPT_ATTRIBUTES_SIZE, |_| {}),
        DISK_GET_CLUSTER_INFO => Reply::status(NOT_SUPPORTED),
        // Everything else, the codes VeraCrypt refuses by name (disk extents without its
        // "allow defragmentation" option, TRIM while it is off, device number, priority hints,
        // allocation hints, FT_BALANCED_READ_MODE, link created) among them.
        _ => Reply::status(Status::InvalidDeviceRequest),
    }
}

/// `USHORT length; name bytes` at `length_at` in a structure of `header` bytes (MOUNTDEV_NAME,
/// MOUNTDEV_UNIQUE_ID, MOUNTDEV_SUGGESTED_LINK_NAME): the mount manager's protocol is the
/// length alone with STATUS_BUFFER_OVERFLOW and `header` bytes when the name does not fit.
fn counted(
    out: &mut Out<'_>,
    header: usize,
    length_at: usize,
    bytes: usize,
    write: impl FnOnce(&mut Out<'_>, usize),
) -> Reply {
    if out.len() < header {
        return Reply::status(BUFFER_TOO_SMALL);
    }
    out.buf.fill(0);
    let Ok(length) = u16::try_from(bytes) else {
        return Reply::status(Status::InvalidParameter);
    };
    out.u16(length_at, length);
    let total = length_at + 2 + bytes;
    if out.len() < total {
        return Reply::new(BUFFER_OVERFLOW, header);
    }
    write(out, length_at + 2);
    Reply::new(Status::Success, total)
}

/// The virtual disk VeraCrypt presents: one cylinder per sector, the partition starting at the
/// second sector (so the disk is one sector larger than the volume).
struct Geometry {
    sector: u32,
    cylinders: u64,
    disk_size: u64,
    length: u64,
    signature: u32,
}

impl Geometry {
    fn of(facts: &DiskFacts<'_>) -> Geometry {
        let sector = facts.sector_size.max(1);
        Geometry {
            sector,
            cylinders: facts.size / u64::from(sector) + 1,
            disk_size: facts.size.saturating_add(u64::from(sector)),
            length: facts.size,
            signature: crc32(&facts.volume_id.to_le_bytes()),
        }
    }

    /// DISK_GEOMETRY at `base`.
    fn write(&self, o: &mut Out<'_>, base: usize) {
        o.u64(base + at::GEOMETRY_CYLINDERS, self.cylinders);
        o.u32(base + at::GEOMETRY_MEDIA_TYPE, FIXED_MEDIA);
        o.u32(base + at::GEOMETRY_TRACKS_PER_CYLINDER, 1);
        o.u32(base + at::GEOMETRY_SECTORS_PER_TRACK, 1);
        o.u32(base + at::GEOMETRY_BYTES_PER_SECTOR, self.sector);
    }

    /// PARTITION_INFORMATION at `base` (of a zeroed output).
    fn partition(&self, o: &mut Out<'_>, base: usize) {
        o.u64(base + at::PARTITION_STARTING_OFFSET, u64::from(self.sector));
        o.u64(base + at::PARTITION_LENGTH, self.length);
        o.u32(base + at::PARTITION_NUMBER, 1);
        o.u8(base + at::PARTITION_TYPE, PARTITION_TYPE);
        o.u8(base + at::PARTITION_BOOT, 0);
        o.u8(base + at::PARTITION_RECOGNIZED, 1);
    }

    /// PARTITION_INFORMATION_EX (MBR style) at `base` (of a zeroed output).
    fn partition_ex(&self, o: &mut Out<'_>, base: usize) {
        o.u32(base + at::PARTITION_EX_STYLE, 0); // PARTITION_STYLE_MBR
        o.u64(
            base + at::PARTITION_EX_STARTING_OFFSET,
            u64::from(self.sector),
        );
        o.u64(base + at::PARTITION_EX_LENGTH, self.length);
        o.u32(base + at::PARTITION_EX_NUMBER, 1);
        o.u8(base + at::PARTITION_EX_MBR_TYPE, PARTITION_TYPE);
        o.u8(base + at::PARTITION_EX_MBR_RECOGNIZED, 1);
        o.u32(base + at::PARTITION_EX_MBR_HIDDEN, 0);
    }
}

/// StorageDeviceProperty, StorageAdapterProperty, StorageAccessAlignmentProperty,
/// StorageDeviceSeekPenaltyProperty, StorageDeviceTrimProperty.
const DEVICE_PROPERTY: u32 = 0;
const ADAPTER_PROPERTY: u32 = 1;
const ALIGNMENT_PROPERTY: u32 = 6;
const SEEK_PENALTY_PROPERTY: u32 = 7;
const TRIM_PROPERTY: u32 = 8;
/// The largest of the five descriptors.
const DESCRIPTOR_MAX: usize = {
    let mut max = at::DEVICE_DESCRIPTOR_SIZE;
    let sizes = [
        at::ADAPTER_DESCRIPTOR_SIZE,
        at::ALIGNMENT_DESCRIPTOR_SIZE,
        at::SEEK_PENALTY_SIZE,
        at::TRIM_SIZE,
    ];
    let mut i = 0;
    while i < sizes.len() {
        if sizes[i] > max {
            max = sizes[i];
        }
        i += 1;
    }
    max
};

/// IOCTL_STORAGE_QUERY_PROPERTY: the five descriptors VeraCrypt answers. A standard query
/// with an output of at least a STORAGE_DESCRIPTOR_HEADER gets `min(descriptor, output)` bytes
/// of the descriptor with success, as the storage class driver answers (the header's Size says
/// how much there is); a shorter output is STATUS_BUFFER_TOO_SMALL; an exists query succeeds
/// with nothing. The device descriptor is its 40-byte structure alone: no vendor, product,
/// revision or serial string (offset 0, "none"), so sizeof(STORAGE_DEVICE_DESCRIPTOR) gets it
/// whole.
fn storage_property<H: HostDevice>(
    facts: &DiskFacts<'_>,
    host: &H,
    input: Input<'_>,
    out: &mut Out<'_>,
) -> Reply {
    if input.len < at::PROPERTY_QUERY_SIZE {
        return Reply::status(BUFFER_TOO_SMALL);
    }
    let property = input.u32(at::PROPERTY_QUERY_ID);
    let query = input.u32(at::PROPERTY_QUERY_TYPE);
    let size = match property {
        DEVICE_PROPERTY => at::DEVICE_DESCRIPTOR_SIZE,
        ADAPTER_PROPERTY => at::ADAPTER_DESCRIPTOR_SIZE,
        ALIGNMENT_PROPERTY => at::ALIGNMENT_DESCRIPTOR_SIZE,
        SEEK_PENALTY_PROPERTY => at::SEEK_PENALTY_SIZE,
        TRIM_PROPERTY => at::TRIM_SIZE,
        _ => return Reply::status(Status::InvalidDeviceRequest),
    };
    match query {
        0 => {}                                     // PropertyStandardQuery
        1 => return Reply::status(Status::Success), // PropertyExistsQuery
        _ => return Reply::status(Status::InvalidDeviceRequest),
    }
    if out.len() < at::DESCRIPTOR_HEADER_SIZE {
        return Reply::status(BUFFER_TOO_SMALL);
    }
    // The whole descriptor is built here, then as much of it as the output holds is copied.
    let mut whole = [0u8; DESCRIPTOR_MAX];
    let d = &mut Out {
        buf: &mut whole[..size],
    };
    d.u32(at::DESCRIPTOR_VERSION, size as u32);
    d.u32(at::DESCRIPTOR_SIZE, size as u32);
    let limits = host.limits();
    match property {
        DEVICE_PROPERTY => {
            // DeviceType 0 (a direct-access block device; see the table's note), not
            // removable, no vendor/product/revision/serial string (offsets 0).
            d.u32(at::DEVICE_DESCRIPTOR_BUS_TYPE, u32::from(BUS_TYPE_VIRTUAL));
        }
        ADAPTER_PROPERTY => {
            d.u32(at::ADAPTER_MAX_TRANSFER, limits.max_transfer);
            d.u32(at::ADAPTER_MAX_PAGES, limits.max_physical_pages);
            d.u32(at::ADAPTER_ALIGNMENT_MASK, limits.alignment_mask);
            d.u8(at::ADAPTER_BUS_TYPE, BUS_TYPE_VIRTUAL);
        }
        ALIGNMENT_PROPERTY => {
            d.u32(at::ALIGNMENT_LOGICAL_SECTOR, facts.sector_size);
            d.u32(
                at::ALIGNMENT_PHYSICAL_SECTOR,
                limits.sector_size.max(facts.sector_size),
            );
        }
        // The host is not asked: VeraCrypt's value for a host that does not answer.
        SEEK_PENALTY_PROPERTY => d.u8(at::SEEK_PENALTY_FLAG, 1),
        // TRIM is never passed down.
        _ => d.u8(at::TRIM_FLAG, 0),
    }
    let n = size.min(out.len());
    out.buf.fill(0);
    out.buf[..n].copy_from_slice(&whole[..n]);
    Reply::new(Status::Success, n)
}

/// IOCTL_DISK_VERIFY's input, checked as VeraCrypt checks it: the whole VERIFY_INFORMATION
/// (16 bytes, tail padding included) or STATUS_BUFFER_TOO_SMALL; then its StartingOffset and
/// Length. `input` holds the system buffer's bytes (at least `input_len` of them, or fewer
/// when the I/O manager gave fewer: those count as missing). The glue then hands the IRP to
/// the engine (`Volume::dispatch`, `RequestKind::Verify`), which refuses a range longer than
/// [`VERIFY_MAX`], misaligned or past the end with STATUS_INVALID_PARAMETER and reads the rest
/// from the host on a path's thread.
pub fn verify_range(input: &[u8], input_len: usize) -> Result<(i64, u32), Status> {
    let held = input_len.min(input.len());
    if held < at::VERIFY_SIZE {
        return Err(BUFFER_TOO_SMALL);
    }
    let input = Input {
        bytes: &input[..at::VERIFY_SIZE],
        len: held,
    };
    Ok((
        input.u64(at::VERIFY_STARTING_OFFSET) as i64,
        input.u32(at::VERIFY_LENGTH),
    ))
}

/// CRC-32 (IEEE 802.3, reflected, as VeraCrypt's `GetCrc32`).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests;
