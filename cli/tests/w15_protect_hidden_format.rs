//! W15: after `add-hidden`, the outer volume is mounted only with `--protect-hidden`, and a
//! format of the outer volume (what destroys a hidden volume) is refused at its first write
//! into the hidden volume. The container vcctl made is mounted in the engine (user-mode std
//! platform over the file itself) with exactly the mount request `vcctl mount
//! --protect-hidden` builds; the engine's rule (tests-usermode/tests/legacy_queue.rs,
//! `legacy_hidden_volume_protection_refuses_overlap_then_every_write`): a write that overlaps
//! the protected range fails with STATUS_INVALID_PARAMETER, and so does every later write.
#![cfg(unix)]

mod common;
use common::*;

use std::sync::mpsc;
use std::time::Duration;

use vcctl::driver::{mount_request, MountArgs};
use vcctl::kdf::Prf;
use vcctl::volume::{Credentials, Kind};
use vcdirect::platform::irql::Irql;
use vcdirect::platform::HostKind;
use vcdirect::registry::Gates;
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::host::{FileHost, FileOptions};
use vcdirect_usermode::request::TestRequest;
use vcdirect_usermode::std_platform::StdPlatform;
use zeroize::Zeroizing;

fn creds(pw: &[u8]) -> Credentials {
    Credentials {
        password: Zeroizing::new(pw.to_vec()),
        prf: Some(Prf::Sha256),
        pim: 1,
        keyfiles: Vec::new(),
    }
}

fn write(vol: &std::sync::Arc<Volume<StdPlatform<FileHost>>>, at: u64, data: &[u8]) -> Status {
    let (tx, rx) = mpsc::channel();
    let req = TestRequest::write(at, data, move |c| {
        let _ = tx.send(c);
    });
    vcdirect_usermode::irql::dispatch_at(Irql::Dispatch, vol, req);
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the write completes")
        .status
}

fn sha(bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).to_vec()
}

#[test]
fn w15_a_format_of_the_protected_outer_volume_is_refused_at_its_first_write_into_the_hidden_volume()
{
    const SIZE: u64 = 2 << 20;
    let f = TempPath::new("protect-format");
    let path = f.0.to_str().unwrap();
    ok(vcctl(
        &[
            "volume",
            "create",
            path,
            "--password-stdin",
            "--size",
            "2097152",
            "--prf",
            "sha256",
            "--pim",
            "1",
            "--quiet",
        ],
        "outer\n",
    ));
    let added = json(&ok(vcctl(
        &[
            "volume",
            "add-hidden",
            path,
            "--password-stdin",
            "--size",
            "1048576",
            "--yes",
            "--prf",
            "sha256",
            "--pim",
            "1",
            "--quiet",
        ],
        "outer\nhidden\n",
    )));
    let hs = added["hidden_data_offset"].as_u64().unwrap();
    let hl = added["hidden_data_size"].as_u64().unwrap();

    // The request `vcctl mount --protect-hidden` sends, parsed as the driver parses it.
    let args = MountArgs {
        host: path.into(),
        creds: creds(b"outer"),
        kind: Kind::Normal,
        hidden_creds: Some(creds(b"hidden")),
        letter: None,
        read_only: false,
        shared: false,
        wine_host_driver_name: None,
    };
    let mut file = std::fs::File::open(&f.0).unwrap();
    let req = mount_request(&args, &mut file, SIZE, None, &mut Vec::new()).unwrap();
    let req = vcdirect::abi::MountRequest::parse(&req, false).unwrap();
    assert_eq!(req.protected_range, (hs, hl));
    let mut params =
        vcdirect_usermode::mount::mount_params(req.data_offset, req.data_size, Gates::OFF);
    params.protected_range = Some(hs..hs + hl);
    let host = FileHost::open(
        &f.0,
        &FileOptions {
            allow_direct: false,
            kind: Some(HostKind::FileContainer),
        },
    )
    .unwrap();
    let vol = Volume::mount(StdPlatform::new(0), host, &req.key, params).expect("mount");

    let hidden_raw = || {
        let bytes = std::fs::read(&f.0).unwrap();
        sha(&bytes[hs as usize..(hs + hl) as usize])
    };
    let before = hidden_raw();
    // A format's pattern: the boot sector, then the backup boot sector in the volume's last
    // sector (NTFS, FAT32), which lies in VeraCrypt's reserved area after the hidden data and
    // is allowed, then a full pass from the start in 64 KiB writes (the tables, then every
    // sector). Every write before the hidden volume succeeds; the first that reaches it is
    // refused, and every write after it too, wherever it goes.
    let sector = vec![0xA5u8; 512];
    assert_eq!(write(&vol, 0, &sector), Status::Success);
    assert_eq!(write(&vol, req.data_size - 512, &sector), Status::Success);
    let chunk = vec![0u8; 65_536];
    let hidden_start = hs - req.data_offset;
    let mut first_refused = None;
    let mut at = 0;
    while at < req.data_size {
        let len = (req.data_size - at).min(chunk.len() as u64);
        let status = write(&vol, at, &chunk[..len as usize]);
        if at + len <= hidden_start {
            assert_eq!(
                status,
                Status::Success,
                "write at {at}, before the hidden volume"
            );
        } else {
            assert_eq!(status, Status::InvalidParameter, "write at {at}");
            first_refused.get_or_insert(at);
        }
        at += len;
    }
    assert_eq!(
        first_refused,
        Some(hidden_start / 65_536 * 65_536),
        "refused at the first write that reaches the hidden volume"
    );
    // After the first refusal even the reserved area's last sector is refused.
    assert_eq!(
        write(&vol, req.data_size - 512, &sector),
        Status::InvalidParameter
    );
    vol.dismount();
    assert_eq!(hidden_raw(), before, "the hidden volume changed");
    // The hidden volume still opens; the outer volume's start was overwritten by the format.
    let j = json(&ok(vcctl(
        &[
            "volume",
            "inspect",
            path,
            "--password-stdin",
            "--prf",
            "sha256",
            "--pim",
            "1",
            "--hidden",
        ],
        "hidden\n",
    )));
    assert_eq!(j["data_offset"].as_u64(), Some(hs));
}
