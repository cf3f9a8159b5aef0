//! Volumes whose cipher is not AES-256-XTS: identified by name, served by the engine's XTS
//! (`volume read`), created with `volume create --cipher` and `--hidden-cipher`.

mod common;
use common::*;

use vcctl::cipher::ALGORITHMS;
use vcctl::create::{create, CreateSpec, Fill, VolumeSpec};
use vcctl::kdf::Prf;
use zeroize::Zeroizing;

#[test]
fn cascade_and_single_ciphers_are_named_and_read() {
    for (alg, name) in [
        (ALGORITHMS[6], "aes-twofish-serpent"),
        (ALGORITHMS[1], "serpent"),
        (ALGORITHMS[14], "kuznyechik-serpent-camellia"),
    ] {
        let f = TempPath::new(name);
        let spec = CreateSpec {
            size: 524_288,
            outer: VolumeSpec {
                password: Zeroizing::new(b"pw".to_vec()),
                prf: Prf::Sha512,
                pim: 1,
            },
            hidden: None,
            fill: Fill::Zero,
            algorithm: alg,
            hidden_algorithm: None,
            filesystem: vcctl::create::Filesystem::None,
        };
        create(&f.0, &spec).unwrap();
        let path = f.0.to_str().unwrap();
        let j = json(&ok(vcctl(
            &[
                "volume",
                "inspect",
                path,
                "--password-stdin",
                "--pim",
                "1",
                "--prf",
                "sha512",
            ],
            "pw\n",
        )));
        assert_eq!(j["cipher"], name);
        let data = ok(vcctl(
            &[
                "volume",
                "read",
                path,
                "--password-stdin",
                "--pim",
                "1",
                "--prf",
                "sha512",
                "--offset",
                "0",
                "--length",
                "512",
            ],
            "pw\n",
        ));
        // Filled with zeros encrypted under the volume's algorithm: reads back as zeros.
        assert_eq!(data, vec![0u8; 512], "{name}");
    }
}

#[test]
fn non_aes_volume_with_destroyed_primary_header_is_named_from_its_backup() {
    let f = TempPath::new("twofish-backup");
    let spec = CreateSpec {
        size: 524_288,
        outer: VolumeSpec {
            password: Zeroizing::new(b"pw".to_vec()),
            prf: Prf::Whirlpool,
            pim: 1,
        },
        hidden: None,
        fill: Fill::Random,
        algorithm: ALGORITHMS[2],
        hidden_algorithm: None,
        filesystem: vcctl::create::Filesystem::None,
    };
    create(&f.0, &spec).unwrap();
    let mut bytes = std::fs::read(&f.0).unwrap();
    bytes[..512].fill(0);
    std::fs::write(&f.0, &bytes).unwrap();
    let path = f.0.to_str().unwrap();
    let j = json(&ok(vcctl(
        &["volume", "inspect", path, "--password-stdin", "--pim", "1"],
        "pw\n",
    )));
    assert_eq!(j["cipher"], "twofish");
    assert_eq!(j["prf"], "whirlpool");
    assert_eq!(j["header"], "backup");
}

/// `volume create --cipher` and `--hidden-cipher` (they may differ, as in VeraCrypt): each
/// volume's header names its own algorithm and its data area reads through it (the outer
/// one's FAT boot sector).
#[test]
fn create_takes_cipher_and_a_different_hidden_cipher() {
    let f = TempPath::new("cipher-args");
    let path = f.0.to_str().unwrap();
    ok(vcctl(
        &[
            "volume",
            "create",
            path,
            "--size",
            "3145728",
            "--hidden-size",
            "1048576",
            "--prf",
            "sha512",
            "--pim",
            "1",
            "--password-stdin",
            "--quiet",
            "--cipher",
            "aes-twofish-serpent",
            "--hidden-cipher",
            "kuznyechik-serpent-camellia",
        ],
        "outer pw\nhidden pw\n",
    ));
    for (password, hidden, cipher) in [
        ("outer pw\n", false, "aes-twofish-serpent"),
        ("hidden pw\n", true, "kuznyechik-serpent-camellia"),
    ] {
        let mut args = vec!["--password-stdin", "--pim", "1", "--prf", "sha512"];
        if hidden {
            args.push("--hidden");
        }
        let mut inspect = vec!["volume", "inspect", path];
        inspect.extend(&args);
        let j = json(&ok(vcctl(&inspect, password)));
        assert_eq!(j["cipher"], cipher, "{j}");
        let mut read = vec!["volume", "read", path];
        read.extend(&args);
        read.extend(["--offset", "0", "--length", "512"]);
        let sector = ok(vcctl(&read, password));
        assert_eq!(sector.len(), 512, "{cipher}");
        // The outer volume is formatted FAT through its cipher (the hidden one keeps its
        // random fill).
        if !hidden {
            assert_eq!(&sector[510..], &[0x55, 0xAA], "{cipher}: a FAT boot sector");
        }
    }
    // An unknown name is one line, exit 2, nothing created.
    let g = TempPath::new("cipher-unknown");
    let out = vcctl(
        &[
            "volume",
            "create",
            g.0.to_str().unwrap(),
            "--size",
            "524288",
            "--prf",
            "sha512",
            "--password-stdin",
            "--cipher",
            "aes-blowfish",
        ],
        "pw\n",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown cipher \"aes-blowfish\""));
    assert!(!g.0.exists());
}
