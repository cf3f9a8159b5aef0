//! VeraCrypt's own volumes through the engine, every cipher and cascade: each volume listed in
//! cli/tests/data/veracrypt-written/volumes.tsv (one per algorithm VeraCrypt offers, other PRFs,
//! a PIM, keyfiles, hidden volumes with their own rows) is opened with vcctl's library (its
//! header, the row's PRF and PIM), then mounted on a memory host holding the container's bytes
//! twice: once with both gates off (the legacy queue) and once with both on (the direct path),
//! each on its own copy. On both paths the first sector is the FAT boot sector VeraCrypt wrote
//! (its volume serial as the manifest lists it); one seeded workload of writes and reads over
//! the data area gives the same statuses and bytes on both, every read returns what VeraCrypt
//! wrote or what the workload last wrote there, and the two containers end byte-identical and
//! decrypt (with the header's master key) to VeraCrypt's data with the workload's writes.
//! The direct volume's counters show the direct path served its reads and writes (a hidden
//! volume's writes stay on the legacy queue, R7); the legacy volume's show the queue alone did.

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use vcctl::kdf::Prf;
use vcctl::volume::{Credentials, Kind, Opened};
use vcdirect::platform::HostDevice;
use vcdirect::registry::Gates;
use vcdirect::volume::{CounterSnapshot, Volume};
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::mount::mount_params;
use vcdirect_usermode::request::Buf;
use vcdirect_usermode::std_platform::StdPlatform;

/// The manifest's columns, in order.
const COLUMNS: &str = "file\tvolume\tpassword\tkeyfiles\tprf\tpim\talgorithm\tfat_serial\t\
                       data_offset\tdata_size\tfile_size";

/// The fifteen encryption algorithms of VeraCrypt 1.26, as vcctl and the engine name them.
const EVERY_ALGORITHM: usize = 15;

/// The folder of VeraCrypt-written volumes, inside this repository.
fn written(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cli/tests/data/veracrypt-written")
        .join(name)
}

/// One row of volumes.tsv.
#[derive(Clone, Debug)]
struct Row {
    file: String,
    volume: String,
    password: String,
    keyfiles: Vec<String>,
    prf: String,
    pim: u32,
    algorithm: String,
    fat_serial: u32,
    data_offset: u64,
    data_size: u64,
    file_size: u64,
}

impl Row {
    fn what(&self) -> String {
        format!("{} ({}, {})", self.file, self.volume, self.algorithm)
    }
}

fn manifest() -> Vec<Row> {
    let text = std::fs::read_to_string(written("volumes.tsv")).expect("volumes.tsv");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(COLUMNS), "volumes.tsv columns");
    lines
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 11, "volumes.tsv row: {line:?}");
            let number = |i: usize| -> u64 { f[i].parse().unwrap_or_else(|_| panic!("{line:?}")) };
            Row {
                file: f[0].to_owned(),
                volume: f[1].to_owned(),
                password: f[2].to_owned(),
                keyfiles: match f[3] {
                    "-" => Vec::new(),
                    list => list.split(',').map(str::to_owned).collect(),
                },
                prf: f[4].to_owned(),
                pim: u32::try_from(number(5)).unwrap(),
                algorithm: f[6].to_owned(),
                fat_serial: u32::from_str_radix(f[7], 16)
                    .unwrap_or_else(|_| panic!("serial: {line:?}")),
                data_offset: number(8),
                data_size: number(9),
                file_size: number(10),
            }
        })
        .collect()
}

/// Opens the row's volume with vcctl's library (only the row's PRF: one derivation).
fn open(row: &Row) -> Opened {
    let prf = Prf::from_name(&row.prf).unwrap_or_else(|| panic!("{}: PRF", row.what()));
    let creds = Credentials {
        password: row.password.as_bytes().to_vec().into(),
        prf: Some(prf),
        pim: row.pim,
        keyfiles: row.keyfiles.iter().map(|k| written(k)).collect(),
    };
    let kind = if row.volume == "hidden" {
        Kind::Hidden
    } else {
        Kind::Normal
    };
    let mut file = std::fs::File::open(written(&row.file)).expect("container");
    match vcctl::volume::open_file(&mut file, &creds, kind) {
        Ok(opened) => opened,
        Err(e) => panic!("{}: vcctl does not open it: {e}", row.what()),
    }
}

/// A memory host holding `bytes` (a copy of the container).
fn host_of(bytes: &[u8]) -> ProbeHost {
    let mem = MemoryHost::new(bytes.len() as u64);
    const STEP: usize = 64 * 1024;
    let mut buf = Buf::zeroed_aligned(STEP, 4096);
    for (i, chunk) in bytes.chunks(STEP).enumerate() {
        let b = &mut buf.as_mut_slice()[..chunk.len()];
        b.copy_from_slice(chunk);
        let at = (i * STEP) as u64;
        assert_eq!(mem.write(at, b), Ok(chunk.len()), "host write at {at}");
    }
    ProbeHost::new(mem)
}

/// The row's volume mounted on its own copy of the container, with the header's key and
/// algorithm, behind `gates`.
fn mount_on(row: &Row, opened: &Opened, container: &[u8], gates: Gates) -> (ProbeHost, Vol) {
    let host = host_of(container);
    let mut p = mount_params(opened.header.data_offset, opened.header.data_size, gates);
    p.algorithm = opened.algorithm;
    p.hidden = opened.kind == Kind::Hidden;
    match Volume::mount(StdPlatform::new(0), host.clone(), opened.key_area(), p) {
        Ok(vol) => (host, vol),
        Err(status) => panic!("{}: mount: {status:?}", row.what()),
    }
}

/// The FAT volume serial of a boot sector (FAT12/16 at byte 39, FAT32 at byte 67), after
/// checking its 0x55AA signature.
fn fat_serial(what: &str, boot: &[u8]) -> u32 {
    assert_eq!(
        boot[510..512],
        [0x55, 0xAA],
        "{what}: the first sector is not a boot sector"
    );
    let at = if &boot[82..90] == b"FAT32   " { 67 } else { 39 };
    u32::from_le_bytes(boot[at..at + 4].try_into().unwrap())
}

/// `n` requests over a data area of `size` bytes: mostly 1..16 sectors, some up to 256
/// (never past the end), often over the previous request, buffers at several page offsets;
/// the first is a read of the boot sector.
fn workload(seed: u64, n: usize, size: u64) -> Vec<Req> {
    let sectors_in = size / 512;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut last = 0u64;
    (0..n)
        .map(|i| {
            let sectors = match rng.gen_range(0..4) {
                0..=2 => rng.gen_range(1..=16u64),
                _ => rng.gen_range(17..=256u64),
            }
            .min(sectors_in);
            let first = if rng.gen_bool(0.4) {
                last
            } else {
                rng.gen_range(0..=sectors_in - sectors)
            }
            .min(sectors_in - sectors);
            last = first;
            Req {
                write: i > 0 && rng.gen_bool(0.5),
                offset: if i == 0 { 0 } else { first * 512 },
                len: if i == 0 {
                    512
                } else {
                    (sectors * 512) as usize
                },
                page_offset: [0, 512, 8, 3584][rng.gen_range(0..4)],
                seed: seed << 20 | i as u64,
            }
        })
        .collect()
}

/// The plaintext of the volume's data area in `container`, decrypted with the header's key.
fn plain_of(opened: &Opened, container: &[u8]) -> Vec<u8> {
    let start = opened.header.data_offset as usize;
    let mut data = container[start..start + opened.header.data_size as usize].to_vec();
    opened
        .cipher()
        .decrypt(&mut data, opened.header.data_offset / 512);
    data
}

/// One row: both mounts, the boot sector, the workload, the media and the counters.
fn check_row(index: usize, row: &Row, opened: &Opened) -> (CounterSnapshot, CounterSnapshot) {
    let what = row.what();
    assert_eq!(
        (
            opened.algorithm.name(),
            opened.header.data_offset,
            opened.header.data_size
        ),
        (row.algorithm.as_str(), row.data_offset, row.data_size),
        "{what}: the header's algorithm and data area are not the manifest's"
    );
    let container = std::fs::read(written(&row.file)).expect("container");
    assert_eq!(container.len() as u64, row.file_size, "{what}: file size");
    let mut expected = plain_of(opened, &container);
    let serial = fat_serial(&what, &expected);
    assert!(
        serial == row.fat_serial,
        "{what}: the data area decrypted by the header's key has serial {serial:08X}, the manifest {:08X}",
        row.fat_serial
    );

    let (lh, lv) = mount_on(row, opened, &container, BOTH_OFF);
    let (dh, dv) = mount_on(row, opened, &container, BOTH_ON);
    for (path, vol) in [("legacy", &lv), ("direct", &dv)] {
        let (status, information, boot) = read(vol, 0, 512);
        assert_eq!(
            (status, information),
            (Status::Success, 512),
            "{what}: {path}: boot sector read"
        );
        let serial = fat_serial(&format!("{what}: {path}"), &boot);
        assert!(
            serial == row.fat_serial,
            "{what}: {path}: the mounted volume's boot sector has serial {serial:08X}, VeraCrypt wrote {:08X}",
            row.fat_serial
        );
    }

    let reqs = workload(31 + index as u64, 40, row.data_size);
    let legacy = run(&lv, &reqs);
    let direct = run(&dv, &reqs);
    for (i, ((l, d), r)) in legacy.iter().zip(&direct).zip(&reqs).enumerate() {
        assert_eq!(
            (l.status, l.information),
            (Status::Success, r.len),
            "{what}: legacy #{i} {r:?}"
        );
        assert_eq!(
            (l.status, l.information),
            (d.status, d.information),
            "{what}: direct and legacy statuses differ at #{i} {r:?}"
        );
        assert!(
            l.read == d.read,
            "{what}: direct and legacy read different bytes at #{i} {r:?}"
        );
        let span = r.offset as usize..r.offset as usize + r.len;
        match &l.read {
            Some(bytes) => assert!(
                bytes[..] == expected[span],
                "{what}: #{i} {r:?} did not read VeraCrypt's data or the last write"
            ),
            None => expected[span].copy_from_slice(&pattern(r.seed, r.len)),
        }
    }
    let (legacy_medium, direct_medium) = (lh.mem.snapshot(), dh.mem.snapshot());
    assert!(
        legacy_medium == direct_medium,
        "{what}: the direct and legacy containers differ after the same writes"
    );
    assert!(
        plain_of(opened, &direct_medium) == expected,
        "{what}: the container does not decrypt to VeraCrypt's data with the writes"
    );
    let start = row.data_offset as usize;
    let end = start + row.data_size as usize;
    assert!(
        direct_medium[..start] == container[..start] && direct_medium[end..] == container[end..],
        "{what}: bytes outside the data area changed"
    );
    let (lc, dc) = (lv.counters.snapshot(), dv.counters.snapshot());
    lv.dismount();
    dv.dismount();
    (lc, dc)
}

#[test]
fn veracrypt_written_volumes_of_every_cipher_read_and_round_trip_on_both_paths() {
    vcdirect_usermode::security::set_caller(vcdirect_usermode::security::Caller::System);
    let rows: Vec<Row> = manifest()
        .into_iter()
        .filter(|r| r.prf != "argon2")
        .collect();
    let algorithms: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.algorithm.as_str()).collect();
    assert_eq!(
        algorithms.len(),
        EVERY_ALGORITHM,
        "the manifest's algorithms: {algorithms:?}"
    );
    assert!(
        rows.iter().any(|r| r.volume == "hidden") && rows.iter().any(|r| !r.keyfiles.is_empty()),
        "the manifest has hidden and keyfile rows"
    );
    // One header derivation per row (the row's PRF), two at a time (PBKDF2 at PIM 0 is
    // 500,000 iterations); the key serves both mounts.
    let opened: Vec<Opened> = std::thread::scope(|s| {
        let halves: Vec<_> = (0..2)
            .map(|half| {
                let rows = &rows;
                s.spawn(move || {
                    rows.iter()
                        .enumerate()
                        .filter(|(i, _)| i % 2 == half)
                        .map(|(i, r)| (i, open(r)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<(usize, Opened)> = halves
            .into_iter()
            .flat_map(|h| h.join().expect("opening thread"))
            .collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, o)| o).collect()
    });
    for (index, (row, opened)) in rows.iter().zip(&opened).enumerate() {
        let (lc, dc) = check_row(index, row, opened);
        let what = row.what();
        if row.volume == "hidden" {
            // R7: a hidden volume's writes stay on the legacy queue; its reads go direct.
            assert!(
                dc.direct_reads > 0 && dc.direct_writes == 0 && dc.legacy_writes > 0,
                "{what}: the direct path did not serve the reads alone: {dc:?}"
            );
        } else {
            assert!(
                dc.direct_reads > 0 && dc.direct_writes > 0,
                "{what}: the direct path did not serve: {dc:?}"
            );
        }
        assert!(
            lc.legacy_reads > 0 && lc.legacy_writes > 0 && lc.direct_reads + lc.direct_writes == 0,
            "{what}: the legacy queue did not serve alone: {lc:?}"
        );
    }
}
