//! vc-e2e: the Windows side of the Wine end-to-end test (scripts/wine-e2e.sh).
//!
//! Drives a disk-like device (a mounted vcdirect volume `\\.\VcVolume0`, or the test disk
//! `\\.\VcTestDisk0`) with overlapped reads and writes (several in flight) and IOCTLs, and
//! keeps a model of the device's plaintext in a file (`--model`), so a later run (after a
//! remount) can check the data. Talks to the test disk's control device (faults, latency,
//! counters) and sends raw IOCTLs to vcdirect's control device (mount probing, malformed
//! buffers, key erasure). Prints one `PASS name (detail)` or `FAIL name (detail)` line per
//! check; exit code 1 if any check failed, 2 for a usage error, 3 for "not supported".

mod dev;
mod model;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use dev::Device;
use model::{Model, Rng};
use vctestdisk_abi as td;

/// Command-line options: `--name value` pairs after the subcommand.
struct Opts(Vec<(String, String)>);

impl Opts {
    fn parse(args: &[String]) -> Result<Opts, String> {
        let mut out = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let name = a
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {a}"))?;
            let value = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
            out.push((name.to_string(), value.clone()));
        }
        Ok(Opts(out))
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    fn str(&self, name: &str, default: &str) -> String {
        self.get(name).unwrap_or(default).to_string()
    }
    fn num(&self, name: &str, default: u64) -> Result<u64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => parse_num(v).ok_or_else(|| format!("--{name}: not a number: {v}")),
        }
    }
}

fn parse_num(v: &str) -> Option<u64> {
    let v = v.trim();
    let (digits, mult) = match v.as_bytes().last()? {
        b'K' | b'k' => (&v[..v.len() - 1], 1024),
        b'M' | b'm' => (&v[..v.len() - 1], 1024 * 1024),
        _ => (v, 1),
    };
    let n = match digits.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => digits.parse().ok()?,
    };
    n.checked_mul(mult)
}

/// Collects check results.
#[derive(Default)]
struct Report {
    failed: u32,
}

impl Report {
    fn check(&mut self, ok: bool, name: &str, detail: impl AsRef<str>) {
        if ok {
            println!("PASS {name} ({})", detail.as_ref());
        } else {
            self.failed += 1;
            println!("FAIL {name} ({})", detail.as_ref());
        }
    }
}

const USAGE: &str = "usage: vc-e2e <command> [--option value]...
  info          --device D [--expect-length N]
  fill          --device D --model M [--seed S] [--chunk 64K] [--qd 8]
  verify        --device D --model M [--chunk 64K] [--qd 8]
  random-mixed  --device D --model M --ops N [--seed S] [--qd 8] [--max-len 256K] [--read-pct 60]
  load          --device D --model M --seconds S [--seed S]   (reads; failures allowed, wrong data not)
  flush         --device D
  expect-status --device D --op read|write|ioctl|verify [--offset O] [--length L] [--code C]
                [--in-len N] [--out-len N] --expect ok|ERROR_NUMBER [--name NAME]
                (verify: IOCTL_DISK_VERIFY of --length bytes at --offset)
  latency       --device D --min-ms X
  disk-fault    --offset O --length L --status S [--ops 3]
  disk-clear-faults | disk-reset | disk-latency --us N | disk-write-protect [--on 1|0] | disk-device-type [--type N] | disk-counters
  check-counter --name NAME [--min X] [--max Y]
  mount-probe   [--device \\\\.\\vcdirect]          (exit 3 when the mount IOCTL is not supported)
  malformed-mount [--device \\\\.\\vcdirect]
  erase-under-load --device D --model M [--control \\\\.\\vcdirect] [--seconds 2]
  cancel-queued --device D --model M [--count 16]   (reads, then CancelIoEx on all of them)
  fat-boot-sector --device D --serial XXXXXXXX [--name NAME]   (sector 0: 55AA and the FAT serial)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let opts = match Opts::parse(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("vc-e2e: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut report = Report::default();
    match run(command, &opts, &mut report) {
        Ok(code) if report.failed == 0 => ExitCode::from(code),
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            println!("FAIL {command} ({e})");
            ExitCode::from(1)
        }
    }
}

const COUNTER_NAMES: [&str; td::COUNTERS] = [
    "reads",
    "writes",
    "flushes",
    "bytes_read",
    "bytes_written",
    "in_flight",
    "max_in_flight",
    "faults_hit",
    "limit_violations",
    "max_length_seen",
    "queue_full",
    "latency_us",
    "max_transfer",
    "disk_bytes",
    "no_buffer",
    "no_cache_missing",
    "mdl_mismatch",
    "partial_mdl",
    "paging_io",
    "with_mdl",
];

fn run(command: &str, o: &Opts, report: &mut Report) -> Result<u8, String> {
    let device_path = o.str("device", r"\\.\VcVolume0");
    match command {
        "info" => {
            let d = Device::open(&device_path)?;
            let length = d.length()?;
            println!("length {length}");
            match d.adapter_limits() {
                Ok((mt, pages, mask)) => {
                    println!("max_transfer {mt} max_pages {pages} alignment_mask {mask:#x}")
                }
                Err(e) => println!("adapter property: {e}"),
            }
            if let Some(expected) = o.get("expect-length") {
                let expected = parse_num(expected).ok_or("--expect-length: not a number")?;
                report.check(
                    length == expected,
                    "length",
                    format!("{length} bytes, expected {expected}"),
                );
            }
        }
        "fill" => {
            let d = Device::open(&device_path)?;
            let length = d.length()?;
            let mut model = Model::new(length as usize);
            let mut rng = Rng::new(o.num("seed", 1)?);
            rng.fill(&mut model.bytes);
            let chunk = o.num("chunk", 64 * 1024)? as usize;
            let qd = o.num("qd", 8)? as usize;
            let ops = (0..length as usize).step_by(chunk).map(|off| {
                dev::Op::write(
                    off as u64,
                    model.bytes[off..(off + chunk).min(length as usize)].to_vec(),
                )
            });
            let stats = d.run_ops(ops, qd, |_, _| Ok(()))?;
            model.save(&o.str("model", "model.bin"))?;
            report.check(
                stats.failed == 0,
                "fill",
                format!(
                    "{} writes of {chunk} bytes at QD {qd}, {} failed, most in flight {}",
                    stats.done, stats.failed, stats.max_in_flight
                ),
            );
        }
        "verify" => {
            let d = Device::open(&device_path)?;
            let model = Model::load(&o.str("model", "model.bin"))?;
            let chunk = o.num("chunk", 64 * 1024)? as usize;
            let mismatch = verify_all(&d, &model, o.num("qd", 8)? as usize, chunk)?;
            report.check(
                mismatch.is_none(),
                "verify",
                mismatch.unwrap_or_else(|| {
                    format!(
                        "{} bytes equal the model (reads of {chunk} bytes)",
                        model.bytes.len()
                    )
                }),
            );
        }
        "random-mixed" => random_mixed(&device_path, o, report)?,
        "load" => load(&device_path, o, report)?,
        "flush" => {
            let d = Device::open(&device_path)?;
            let r = d.flush();
            report.check(
                r.is_ok(),
                "flush",
                r.err()
                    .unwrap_or_else(|| "FlushFileBuffers succeeded".into()),
            );
        }
        "expect-status" => expect_status(&device_path, o, report)?,
        "latency" => {
            let d = Device::open(&device_path)?;
            let min = Duration::from_millis(o.num("min-ms", 0)?);
            let start = Instant::now();
            let r = d.run_ops([dev::Op::read(0, 4096)], 1, |_, _| Ok(()))?;
            let took = start.elapsed();
            report.check(
                r.failed == 0 && took >= min,
                "latency",
                format!("one 4 KiB read took {took:?}, expected at least {min:?}"),
            );
        }
        "disk-fault" => {
            let fault = td::Fault {
                offset: o.num("offset", 0)?,
                length: o.num("length", 512)?,
                status: o.num("status", 0xC000_0185)? as u32,
                ops: o.num("ops", 3)? as u32,
            };
            let c = Device::open(td::CONTROL_PATH)?;
            c.ioctl(td::IOCTL_SET_FAULT, &fault.encode(), 0)
                .map_err(|e| format!("set fault: {e}"))?;
            println!("fault set: {fault:?}");
        }
        "disk-clear-faults" => {
            Device::open(td::CONTROL_PATH)?
                .ioctl(td::IOCTL_CLEAR_FAULTS, &[], 0)
                .map_err(|e| e.to_string())?;
        }
        "disk-reset" => {
            Device::open(td::CONTROL_PATH)?
                .ioctl(td::IOCTL_RESET_COUNTERS, &[], 0)
                .map_err(|e| e.to_string())?;
        }
        "disk-latency" => {
            let us = o.num("us", 0)? as u32;
            Device::open(td::CONTROL_PATH)?
                .ioctl(td::IOCTL_SET_LATENCY, &us.to_le_bytes(), 0)
                .map_err(|e| e.to_string())?;
        }
        "disk-write-protect" => {
            let on = o.num("on", 1)? as u32;
            Device::open(td::CONTROL_PATH)?
                .ioctl(td::IOCTL_SET_WRITE_PROTECTED, &on.to_le_bytes(), 0)
                .map_err(|e| e.to_string())?;
        }
        "disk-device-type" => {
            let value = o.num("type", 7)? as u32;
            Device::open(td::CONTROL_PATH)?
                .ioctl(td::IOCTL_SET_DEVICE_TYPE, &value.to_le_bytes(), 0)
                .map_err(|e| e.to_string())?;
        }
        "disk-counters" => {
            for (name, value) in COUNTER_NAMES.iter().zip(disk_counters()?) {
                println!("{name}={value}");
            }
        }
        "check-counter" => {
            let name = o.str("name", "");
            let index = COUNTER_NAMES
                .iter()
                .position(|n| *n == name)
                .ok_or_else(|| format!("unknown counter {name}"))?;
            let value = disk_counters()?[index];
            let (min, max) = (o.num("min", 0)?, o.num("max", u64::MAX)?);
            report.check(
                (min..=max).contains(&value),
                &format!("counter-{name}"),
                if max == u64::MAX {
                    format!("{value}, expected at least {min}")
                } else {
                    format!("{value}, expected {min}..={max}")
                },
            );
        }
        "mount-probe" => {
            let d = Device::open(&o.str("device", r"\\.\vcdirect"))?;
            let outcome = d.ioctl(vc::IOCTL_MOUNT, &vc::empty(), 64);
            println!("mount IOCTL: {outcome:?}");
            if outcome == Err(dev::Win32(dev::ERROR_INVALID_FUNCTION)) {
                return Ok(3);
            }
        }
        "std-read" => std_read(&device_path, o, report)?,
        "fat-boot-sector" => fat_boot_sector(&device_path, o, report)?,
        "malformed-mount" => malformed_mount(o, report)?,
        "erase-under-load" => erase_under_load(&device_path, o, report)?,
        "cancel-queued" => cancel_queued(&device_path, o, report)?,
        _ => return Err(format!("unknown command {command}\n{USAGE}")),
    }
    Ok(0)
}

/// Reads 512 bytes at --offset through std's synchronous `File`, the way vcctl reads a
/// header: by seeking then reading, and by a positional read (`seek_read`, an OVERLAPPED
/// offset). Under Wine the seek needs a Unix fd, which a driver-served device has none of.
fn std_read(path: &str, o: &Opts, report: &mut Report) -> Result<(), String> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::windows::fs::FileExt;
    let offset = o.num("offset", 0)?;
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open {path}: {e}"))?;
    let mut buf = vec![0u8; 512];
    let seek = f
        .seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(&mut buf));
    // Not a check: Wine cannot seek on a driver-served device (ERROR_BAD_DEV_TYPE), Windows can.
    println!("note: std seek then read: {seek:?}");
    let positional = f.seek_read(&mut buf, offset);
    report.check(
        positional.is_ok(),
        "std-seek_read",
        format!("{positional:?}"),
    );
    Ok(())
}

fn disk_counters() -> Result<Vec<u64>, String> {
    let c = Device::open(td::CONTROL_PATH)?;
    let out = c
        .ioctl(td::IOCTL_COUNTERS, &[], td::COUNTERS * 8)
        .map_err(|e| format!("counters: {e}"))?;
    if out.len() != td::COUNTERS * 8 {
        return Err(format!("counters: {} bytes", out.len()));
    }
    Ok(out
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

/// Reads the whole device in reads of `chunk` bytes (at least a sector) and compares with the
/// model; the first difference, if any.
fn verify_all(
    d: &Device,
    model: &Model,
    qd: usize,
    chunk: usize,
) -> Result<Option<String>, String> {
    let chunk = chunk.max(512) / 512 * 512;
    let len = model.bytes.len();
    let mut mismatch = None;
    let ops = (0..len)
        .step_by(chunk)
        .map(|off| dev::Op::read(off as u64, chunk.min(len - off)));
    let stats = d.run_ops(ops, qd, |op, data| {
        if mismatch.is_none() {
            mismatch = model.diff(op.offset as usize, data);
        }
        Ok(())
    })?;
    if stats.failed > 0 {
        return Ok(Some(format!(
            "{} reads failed, first: {}",
            stats.failed, stats.first_error
        )));
    }
    Ok(mismatch)
}

/// Random reads and writes (sector-aligned, up to --max-len), never two overlapping in flight,
/// every read compared with the model.
fn random_mixed(path: &str, o: &Opts, report: &mut Report) -> Result<(), String> {
    let d = Device::open(path)?;
    let model_path = o.str("model", "model.bin");
    let mut model = Model::load(&model_path)?;
    let mut rng = Rng::new(o.num("seed", 1)?);
    let n = o.num("ops", 200)?;
    let qd = o.num("qd", 8)? as usize;
    let max_len = (o.num("max-len", 256 * 1024)? / 512).max(1);
    let read_pct = o.num("read-pct", 60)?;
    let sectors = model.bytes.len() as u64 / 512;
    let mut planned = Vec::new();
    for _ in 0..n {
        let len = 1 + rng.below(max_len.min(sectors));
        let off = rng.below(sectors - len + 1) * 512;
        let len = (len * 512) as usize;
        if rng.below(100) < read_pct {
            planned.push(dev::Op::read(off, len));
        } else {
            let mut data = vec![0u8; len];
            rng.fill(&mut data);
            planned.push(dev::Op::write(off, data));
        }
    }
    // The model changes when a write is submitted: run_ops never has overlapping requests in
    // flight, so each read sees exactly the writes submitted before it.
    let mut mismatch = None;
    let (mut reads, mut writes) = (0u64, 0u64);
    let stats = d.run_ops(planned, qd, |op, data| {
        match &op.write {
            Some(w) => {
                writes += 1;
                model.bytes[op.offset as usize..op.offset as usize + w.len()].copy_from_slice(w);
            }
            None => {
                reads += 1;
                if mismatch.is_none() {
                    mismatch = model.diff(op.offset as usize, data);
                }
            }
        }
        Ok(())
    })?;
    model.save(&model_path)?;
    report.check(
        stats.failed == 0,
        "random-mixed-status",
        format!(
            "{} ops at QD {qd}, {} failed{}, most in flight {}",
            stats.done,
            stats.failed,
            if stats.failed > 0 {
                format!(" (first: {})", stats.first_error)
            } else {
                String::new()
            },
            stats.max_in_flight
        ),
    );
    report.check(
        mismatch.is_none(),
        "random-mixed-data",
        mismatch
            .unwrap_or_else(|| format!("{reads} reads equal the model, {writes} writes applied")),
    );
    Ok(())
}

/// Reads for a while; failures are allowed (the volume may be dismounted meanwhile), reads
/// that succeed must equal the model.
fn load(path: &str, o: &Opts, report: &mut Report) -> Result<(), String> {
    let d = Device::open(path)?;
    let model = Model::load(&o.str("model", "model.bin"))?;
    let until = Instant::now() + Duration::from_secs(o.num("seconds", 2)?);
    let mut rng = Rng::new(o.num("seed", 7)?);
    let sectors = model.bytes.len() as u64 / 512;
    let (mut ok, mut failed) = (0u64, 0u64);
    let mut mismatch = None;
    while Instant::now() < until && failed < 64 {
        let ops: Vec<_> = (0..32)
            .map(|_| {
                let len = 1 + rng.below(128);
                dev::Op::read(rng.below(sectors - len + 1) * 512, (len * 512) as usize)
            })
            .collect();
        let stats = d.run_ops(ops, 8, |op, data| {
            if mismatch.is_none() {
                mismatch = model.diff(op.offset as usize, data);
            }
            Ok(())
        })?;
        ok += stats.done - stats.failed;
        failed += stats.failed;
    }
    report.check(
        mismatch.is_none(),
        "load-data",
        mismatch.unwrap_or_else(|| format!("{ok} reads equal the model, {failed} failed")),
    );
    Ok(())
}

/// Reads the volume's first sector and checks it is the FAT boot sector its writer made: the
/// 0x55AA signature and the volume serial (`--serial`, 8 hex digits as `vol` prints it, at
/// byte 39 for FAT12/16 and 67 for FAT32, little-endian).
fn fat_boot_sector(path: &str, o: &Opts, report: &mut Report) -> Result<(), String> {
    let d = Device::open(path)?;
    let want = o.str("serial", "");
    let sector = d
        .one(dev::Op::read(0, 512))
        .map_err(|e| format!("read of sector 0: {e}"))?;
    let serial_at = |at: usize| {
        sector
            .get(at..at + 4)
            .map(|b| format!("{:08X}", u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .unwrap_or_default()
    };
    let fat32 = sector.get(82..87) == Some(b"FAT32".as_slice());
    let serial = serial_at(if fat32 { 67 } else { 39 });
    let signed = sector.get(510..512) == Some([0x55, 0xaa].as_slice());
    report.check(
        signed && serial.eq_ignore_ascii_case(&want),
        &o.str("name", "fat-boot-sector"),
        format!("signature 55AA: {signed}, serial {serial}, expected {want}"),
    );
    Ok(())
}

fn expect_status(path: &str, o: &Opts, report: &mut Report) -> Result<(), String> {
    let d = Device::open(path)?;
    let offset = o.num("offset", 0)?;
    let length = o.num("length", 512)? as usize;
    let result: Result<(), dev::Win32> = match o.str("op", "read").as_str() {
        "read" => d.one(dev::Op::read(offset, length)).map(|_| ()),
        "write" => d
            .one(dev::Op::write(offset, vec![0x5a; length]))
            .map(|_| ()),
        "ioctl" => d
            .ioctl(
                o.num("code", 0)? as u32,
                &vec![0u8; o.num("in-len", 0)? as usize],
                o.num("out-len", 0)? as usize,
            )
            .map(|_| ()),
        // IOCTL_DISK_VERIFY with a VERIFY_INFORMATION: StartingOffset i64, Length u32, and
        // the structure's tail padding (16 bytes).
        "verify" => {
            let mut input = [0u8; 16];
            input[..8].copy_from_slice(&offset.to_le_bytes());
            input[8..12].copy_from_slice(&(length as u32).to_le_bytes());
            d.ioctl(0x0007_0014, &input, 0).map(|_| ())
        }
        other => return Err(format!("--op {other}")),
    };
    let expect = o.str("expect", "ok");
    let ok = match (&result, expect.as_str()) {
        (Ok(()), "ok") => true,
        (Err(dev::Win32(e)), want) => parse_num(want) == Some(u64::from(*e)),
        _ => false,
    };
    let got = match result {
        Ok(()) => "success".to_string(),
        Err(e) => e.to_string(),
    };
    report.check(
        ok,
        &o.str("name", "expect-status"),
        format!("got {got}, expected {expect}"),
    );
    Ok(())
}

/// vcdirect's control ABI as far as this client needs it (driver/src/abi: version 1,
/// `version: u32, size: u32` at the start of every buffer; the mount request's layout).
mod vc {
    const fn ctl(function: u32, access: u32) -> u32 {
        (0x22 << 16) | (access << 14) | (function << 2)
    }
    /// IOCTL_MOUNT (read-write access).
    pub const IOCTL_MOUNT: u32 = ctl(0x800, 3);
    /// IOCTL_LIST.
    pub const IOCTL_LIST: u32 = ctl(0x802, 0);
    /// IOCTL_ERASE_KEYS.
    pub const IOCTL_ERASE_KEYS: u32 = ctl(0x807, 3);
    /// MountRequest::SIZE: 120 + 2 * 512 + 2 * 64.
    pub const MOUNT_SIZE: usize = 1272;

    /// An EmptyRequest (version 1, size 8).
    pub fn empty() -> Vec<u8> {
        header(8)
    }

    pub fn header(size: usize) -> Vec<u8> {
        let mut v = vec![0u8; size];
        v[0..4].copy_from_slice(&1u32.to_le_bytes());
        if size >= 8 {
            v[4..8].copy_from_slice(&(size as u32).to_le_bytes());
        }
        v
    }

    /// A well-formed mount request for `host` (a zero key: never actually used, since each
    /// caller breaks one field).
    pub fn mount(host: &str) -> Vec<u8> {
        let mut v = header(MOUNT_SIZE);
        v[12..16].copy_from_slice(&512u32.to_le_bytes());
        v[16..24].copy_from_slice(&131_072u64.to_le_bytes());
        v[24..32].copy_from_slice(&(1024u64 * 1024).to_le_bytes());
        v[50..52].copy_from_slice(&64u16.to_le_bytes());
        for (i, c) in host.encode_utf16().take(511).enumerate() {
            v[120 + 2 * i..122 + 2 * i].copy_from_slice(&c.to_le_bytes());
        }
        v
    }
}

fn malformed_mount(o: &Opts, report: &mut Report) -> Result<(), String> {
    let control = o.str("device", r"\\.\vcdirect");
    let d = Device::open(&control)?;
    let good = vc::mount(&o.str("host", r"\Device\VcTestDisk0"));
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("short", good[..8].to_vec()),
        ("long", [good.clone(), vec![0; 8]].concat()),
        ("empty", Vec::new()),
    ];
    let mut with = |name: &'static str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        cases.push((name, b));
    };
    with("wrong-version", &|b| {
        b[0..4].copy_from_slice(&2u32.to_le_bytes())
    });
    with("size-field-mismatch", &|b| {
        b[4..8].copy_from_slice(&1000u32.to_le_bytes())
    });
    with("misaligned-data-offset", &|b| {
        b[16..24].copy_from_slice(&131_073u64.to_le_bytes())
    });
    with("overflowing-range", &|b| {
        b[24..32].copy_from_slice(&(u64::MAX - 511).to_le_bytes())
    });
    with("bad-key-length", &|b| {
        b[50..52].copy_from_slice(&32u16.to_le_bytes())
    });
    with("unterminated-path", &|b| {
        for i in 0..512 {
            b[120 + 2 * i..122 + 2 * i].copy_from_slice(&u16::from(b'A').to_le_bytes());
        }
    });
    with("unknown-flags", &|b| {
        b[8..12].copy_from_slice(&0x100u32.to_le_bytes())
    });
    for (name, buf) in cases {
        let r = d.ioctl(vc::IOCTL_MOUNT, &buf, 64);
        let ok = matches!(r, Err(dev::Win32(e)) if e != dev::ERROR_INVALID_FUNCTION);
        report.check(
            ok,
            &format!("malformed-mount-{name}"),
            format!(
                "{} bytes -> {}",
                buf.len(),
                match r {
                    Ok(_) => "success".into(),
                    Err(e) => e.to_string(),
                }
            ),
        );
    }
    let alive = d.ioctl(vc::IOCTL_LIST, &vc::empty(), 16 + 16 * 64);
    report.check(
        alive.is_ok(),
        "malformed-mount-driver-still-serving",
        format!(
            "IOCTL_LIST after the malformed requests: {:?}",
            alive.map(|v| v.len())
        ),
    );
    Ok(())
}

/// Key erasure while reads are in flight (R2, R3): every read either fails or returns the
/// model's bytes; after erasure, reads fail.
fn erase_under_load(path: &str, o: &Opts, report: &mut Report) -> Result<(), String> {
    let model = Model::load(&o.str("model", "model.bin"))?;
    let control = o.str("control", r"\\.\vcdirect");
    let secs = o.num("seconds", 2)?;
    let path2 = path.to_string();
    let loader = std::thread::spawn(move || -> Result<(u64, u64, Option<String>), String> {
        let d = Device::open(&path2)?;
        let mut rng = Rng::new(11);
        let sectors = model.bytes.len() as u64 / 512;
        let until = Instant::now() + Duration::from_secs(secs);
        let (mut ok, mut failed, mut mismatch) = (0, 0, None);
        while Instant::now() < until {
            let ops: Vec<_> = (0..16)
                .map(|_| dev::Op::read(rng.below(sectors - 256 + 1) * 512, 128 * 1024))
                .collect();
            let stats = d.run_ops(ops, 8, |op, data| {
                if mismatch.is_none() {
                    mismatch = model.diff(op.offset as usize, data);
                }
                Ok(())
            })?;
            ok += stats.done - stats.failed;
            failed += stats.failed;
        }
        Ok((ok, failed, mismatch))
    });
    std::thread::sleep(Duration::from_millis(300));
    let erase = Device::open(&control)?.ioctl(vc::IOCTL_ERASE_KEYS, &vc::empty(), 16);
    report.check(
        erase.is_ok(),
        "erase-keys-ioctl",
        format!("{:?}", erase.as_ref().map(|v| v.len())),
    );
    let (ok, failed, mismatch) = loader
        .join()
        .map_err(|_| "load thread panicked".to_string())??;
    report.check(
        mismatch.is_none(),
        "erase-no-corrupted-data",
        mismatch.unwrap_or_else(|| format!("{ok} reads equal the model, {failed} failed")),
    );
    report.check(
        failed > 0,
        "erase-in-flight-fail",
        format!("{failed} reads failed after erasure"),
    );
    let after = Device::open(path)?.one(dev::Op::read(0, 4096));
    report.check(
        after.is_err(),
        "erase-later-reads-fail",
        format!("{:?}", after.map(|v| v.len())),
    );
    Ok(())
}

/// Starts `--count` 64 KiB reads at once on a slow disk, then cancels them all (CancelIoEx):
/// the ones still queued in the driver end with ERROR_OPERATION_ABORTED (its cancel routine),
/// the ones a worker had taken finish with the model's data, and the volume keeps serving.
/// 16 by default: 8 occupy the direct workers, the rest wait in the FIFO. More in flight only
/// widens Wine 8.0's window for a stale IoCancelIrp (tests-usermode/wine/README.md).
fn cancel_queued(path: &str, o: &Opts, report: &mut Report) -> Result<(), String> {
    const ERROR_OPERATION_ABORTED: u32 = 995;
    const LEN: usize = 64 * 1024;
    let model = Model::load(&o.str("model", "model.bin"))?;
    let count = o.num("count", 16)? as usize;
    let span = model.bytes.len() / (2 * LEN);
    let ops = (0..count)
        .map(|i| dev::Op::read(((i % span) * 2 * LEN) as u64, LEN))
        .collect();
    let d = Device::open(path)?;
    let start = Instant::now();
    let results = d.start_all_then_cancel(ops)?;
    let took = start.elapsed();
    let (mut ok, mut aborted, mut other, mut mismatch) = (0, 0, Vec::new(), None);
    for (op, r) in &results {
        match r {
            Ok(buf) => {
                ok += 1;
                if mismatch.is_none() {
                    mismatch = model.diff(op.offset as usize, buf.as_slice());
                }
            }
            Err(dev::Win32(ERROR_OPERATION_ABORTED)) => aborted += 1,
            Err(e) => other.push(format!("{} at {}", e, op.offset)),
        }
    }
    report.check(
        aborted > 0,
        "cancel-queued-aborted",
        format!("{aborted} of {count} reads ended with ERROR_OPERATION_ABORTED, {ok} completed, all in {took:?}"),
    );
    report.check(
        other.is_empty() && mismatch.is_none(),
        "cancel-queued-others-intact",
        match (other.first(), &mismatch) {
            (Some(e), _) => format!("{} other errors, first {e}", other.len()),
            (None, Some(m)) => m.clone(),
            (None, None) => format!("{ok} completed reads equal the model"),
        },
    );
    let after = d.one(dev::Op::read(0, 4096));
    let serves = match &after {
        Ok(data) => model.diff(0, data).is_none(),
        Err(_) => false,
    };
    report.check(
        serves,
        "cancel-queued-volume-serves",
        format!("a later read: {:?}", after.map(|v| v.len())),
    );
    Ok(())
}
