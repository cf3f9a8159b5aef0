//! vcctl volume create -> inspect -> read, for every PRF, with hidden volumes, PIM and keyfiles.

mod common;
use common::*;

use std::path::PathBuf;

const SIZE: u64 = 1 << 20;

fn create(file: &TempPath, extra: &[&str], stdin: &str) -> serde_json::Value {
    let mut args = vec![
        "volume",
        "create",
        file.0.to_str().unwrap(),
        "--password-stdin",
    ];
    args.extend_from_slice(extra);
    json(&ok(vcctl(&args, stdin)))
}

fn open_args<'a>(file: &'a TempPath, cmd: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["volume", cmd, file.0.to_str().unwrap(), "--password-stdin"];
    args.extend_from_slice(extra);
    args
}

#[test]
fn every_prf_round_trips_with_pim_and_zero_fill() {
    for prf in ["sha512", "sha256", "whirlpool", "blake2s", "streebog"] {
        let f = TempPath::new(prf);
        let size = SIZE.to_string();
        let made = create(
            &f,
            &[
                "--size",
                &size,
                "--prf",
                prf,
                "--pim",
                "1",
                "--fill",
                "zero",
                "--filesystem",
                "none",
            ],
            "pw\n",
        );
        assert_eq!(made["data_offset"], 131_072);
        assert_eq!(std::fs::metadata(&f.0).unwrap().len(), SIZE);
        // Without --prf: all PRFs are tried, and the right one is reported.
        let j = json(&ok(vcctl(
            &open_args(&f, "inspect", &["--pim", "1"]),
            "pw\n",
        )));
        assert_eq!(j["prf"], prf);
        assert_eq!(j["cipher"], "aes");
        assert_eq!(j["kind"], "normal");
        assert_eq!(j["header"], "primary");
        assert_eq!(j["data_offset"], 131_072);
        assert_eq!(j["data_size"], SIZE - 262_144);
        assert_eq!(j["sector_size"], 512);
        // The whole data area decrypts to the zeros that were encrypted at creation (no file
        // system was asked for).
        let len = (SIZE - 262_144).to_string();
        let data = ok(vcctl(
            &open_args(
                &f,
                "read",
                &[
                    "--pim", "1", "--prf", prf, "--offset", "0", "--length", &len,
                ],
            ),
            "pw\n",
        ));
        assert_eq!(data.len() as u64, SIZE - 262_144);
        assert!(
            data.iter().all(|b| *b == 0),
            "{prf}: data area is not zeros"
        );
        // Wrong PIM: no header opens.
        let err = fails(vcctl(
            &open_args(&f, "inspect", &["--pim", "2", "--prf", prf]),
            "pw\n",
        ));
        assert!(err.contains("wrong password"), "{err}");
    }
}

#[test]
fn hidden_volume_round_trips_and_outer_password_opens_outer() {
    let f = TempPath::new("hidden");
    let made = create(
        &f,
        &[
            "--size",
            &SIZE.to_string(),
            "--hidden-size",
            "262144",
            "--prf",
            "sha512",
            "--pim",
            "1",
        ],
        "outer pw\nhidden pw\n",
    );
    let hidden_offset = made["hidden_data_offset"].as_u64().unwrap();
    assert_eq!(hidden_offset, SIZE - 131_072 - 262_144);
    // VeraCrypt's reserved area (4 KiB below 2 MiB) is not part of the hidden data area.
    let hidden_size = 262_144 - 4096;
    let outer = json(&ok(vcctl(
        &open_args(&f, "inspect", &["--pim", "1", "--prf", "sha512"]),
        "outer pw\n",
    )));
    assert_eq!(outer["kind"], "normal");
    let hidden = json(&ok(vcctl(
        &open_args(
            &f,
            "inspect",
            &["--pim", "1", "--prf", "sha512", "--hidden"],
        ),
        "hidden pw\n",
    )));
    assert_eq!(hidden["kind"], "hidden");
    assert_eq!(hidden["data_offset"], hidden_offset);
    assert_eq!(hidden["data_size"], hidden_size);
    let whole = ok(vcctl(
        &open_args(
            &f,
            "read",
            &[
                "--pim",
                "1",
                "--hidden",
                "--offset",
                "0",
                "--length",
                &hidden_size.to_string(),
            ],
        ),
        "hidden pw\n",
    ));
    let data = ok(vcctl(
        &open_args(
            &f,
            "read",
            &[
                "--pim", "1", "--hidden", "--offset", "1000", "--length", "5000",
            ],
        ),
        "hidden pw\n",
    ));
    assert_eq!(&data[..], &whole[1000..6000]);
    // The hidden password does not open the outer header, and vice versa.
    fails(vcctl(
        &open_args(&f, "inspect", &["--pim", "1", "--prf", "sha512"]),
        "hidden pw\n",
    ));
    fails(vcctl(
        &open_args(
            &f,
            "inspect",
            &["--pim", "1", "--prf", "sha512", "--hidden"],
        ),
        "outer pw\n",
    ));
}

#[test]
fn keyfiles_and_empty_password_round_trip_and_each_keyfile_counts() {
    let k1 = TempPath::new("k1");
    let k2 = TempPath::new("k2");
    std::fs::write(&k1.0, b"first keyfile contents").unwrap();
    std::fs::write(&k2.0, vec![0xA5u8; 3000]).unwrap();
    let (a, b) = (k1.0.to_str().unwrap(), k2.0.to_str().unwrap());
    let f = TempPath::new("kf");
    create(
        &f,
        &[
            "--size",
            "524288",
            "--prf",
            "blake2s",
            "--pim",
            "1",
            "--keyfile",
            a,
            "--keyfile",
            b,
        ],
        "\n",
    );
    let j = json(&ok(vcctl(
        &open_args(
            &f,
            "inspect",
            &["--pim", "1", "--keyfile", a, "--keyfile", b],
        ),
        "\n",
    )));
    assert_eq!(j["prf"], "blake2s");
    // The pool adds each keyfile's contribution from position 0: order does not matter
    // (as in VeraCrypt), but every keyfile does.
    let swapped = [
        "--pim",
        "1",
        "--prf",
        "blake2s",
        "--keyfile",
        b,
        "--keyfile",
        a,
    ];
    let j = json(&ok(vcctl(&open_args(&f, "inspect", &swapped), "\n")));
    assert_eq!(j["prf"], "blake2s");
    let one = ["--pim", "1", "--prf", "blake2s", "--keyfile", a];
    let err = fails(vcctl(&open_args(&f, "inspect", &one), "\n"));
    assert!(err.contains("wrong password"), "{err}");
    let missing: PathBuf = std::env::temp_dir().join("vcctl-no-such-keyfile");
    let err = fails(vcctl(
        &open_args(
            &f,
            "inspect",
            &["--pim", "1", "--keyfile", missing.to_str().unwrap()],
        ),
        "\n",
    ));
    assert!(err.contains("keyfile"), "{err}");
}

#[test]
fn destroyed_primary_header_opens_from_the_backup() {
    let f = TempPath::new("backup");
    create(
        &f,
        &[
            "--size",
            "524288",
            "--prf",
            "sha256",
            "--pim",
            "1",
            "--hidden-size",
            "65536",
        ],
        "o\nh\n",
    );
    let mut bytes = std::fs::read(&f.0).unwrap();
    bytes[..512].fill(0);
    bytes[65_536..65_536 + 512].fill(0);
    std::fs::write(&f.0, &bytes).unwrap();
    let j = json(&ok(vcctl(
        &open_args(&f, "inspect", &["--pim", "1"]),
        "o\n",
    )));
    assert_eq!(j["header"], "backup");
    let j = json(&ok(vcctl(
        &open_args(&f, "inspect", &["--pim", "1", "--hidden"]),
        "h\n",
    )));
    assert_eq!(j["header"], "backup");
    assert_eq!(j["kind"], "hidden");
}

#[test]
fn random_fill_is_not_zero_and_create_refuses_bad_sizes_and_existing_files() {
    let f = TempPath::new("random");
    create(
        &f,
        &["--size", "524288", "--prf", "sha512", "--pim", "1"],
        "pw\n",
    );
    let data = ok(vcctl(
        &open_args(
            &f,
            "read",
            &["--pim", "1", "--offset", "0", "--length", "4096"],
        ),
        "pw\n",
    ));
    assert_eq!(data.len(), 4096);
    assert!(data.iter().any(|b| *b != 0));
    let again = vcctl(
        &[
            "volume",
            "create",
            f.0.to_str().unwrap(),
            "--password-stdin",
            "--size",
            "524288",
            "--prf",
            "sha512",
        ],
        "pw\n",
    );
    assert!(fails(again).contains("cannot open"));
    let g = TempPath::new("small");
    for size in ["1000", "262144"] {
        let out = vcctl(
            &[
                "volume",
                "create",
                g.0.to_str().unwrap(),
                "--password-stdin",
                "--size",
                size,
                "--prf",
                "sha512",
            ],
            "pw\n",
        );
        assert!(fails(out).contains("--size"));
    }
}

#[test]
fn missing_password_and_driver_commands_fail_cleanly() {
    let f = TempPath::new("nopw");
    fails(vcctl(&["volume", "inspect", f.0.to_str().unwrap()], ""));
    fails(vcctl(
        &[
            "volume",
            "inspect",
            f.0.to_str().unwrap(),
            "--password-stdin",
        ],
        "",
    ));
    if !cfg!(windows) {
        for args in [
            &["list"][..],
            &["status", "V:"],
            &["gates", "get"],
            &["erase-keys"],
            &["dismount", "V:"],
        ] {
            assert!(fails(vcctl(args, "")).contains("needs Windows"));
        }
    }
}

#[test]
fn random_bytes_and_directories_are_refused_with_one_line() {
    let f = TempPath::new("noise");
    let mut noise = vec![0u8; 300_000];
    getrandom::fill(&mut noise).unwrap();
    std::fs::write(&f.0, &noise).unwrap();
    let err = fails(vcctl(
        &open_args(&f, "inspect", &["--pim", "1", "--prf", "sha256"]),
        "pw\n",
    ));
    assert!(err.contains("wrong password"), "{err}");
    let dir = std::env::temp_dir();
    fails(vcctl(
        &[
            "volume",
            "inspect",
            dir.to_str().unwrap(),
            "--password-stdin",
            "--pim",
            "1",
            "--prf",
            "sha256",
        ],
        "pw\n",
    ));
}
