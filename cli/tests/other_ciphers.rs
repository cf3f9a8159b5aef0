//! Volumes whose cipher is not AES-256-XTS: identified by name, refused by the data path.

mod common;
use common::*;

use vcctl::cipher::ALGORITHMS;
use vcctl::create::{create, CreateSpec, Fill, VolumeSpec};
use vcctl::kdf::Prf;
use zeroize::Zeroizing;

#[test]
fn cascade_and_single_ciphers_are_named_and_refused_for_reading() {
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
        let err = fails(vcctl(
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
        assert!(err.contains(name) && err.contains("only aes"), "{err}");
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
