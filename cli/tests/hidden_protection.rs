//! `--protect-hidden` and `create --hidden-size` with the hidden volume's own PRF, PIM and
//! keyfiles (`--hidden-prf`, `--hidden-pim`, `--hidden-keyfile`, `--hidden-no-keyfiles`;
//! defaults: the outer's).

mod common;
use common::*;

use vcctl::driver::{mount_request, MountArgs};
use vcctl::kdf::Prf;
use vcctl::volume::{Credentials, Kind};
use zeroize::Zeroizing;

fn creds(pw: &[u8], prf: Option<Prf>, pim: u32, keyfiles: &[&std::path::Path]) -> Credentials {
    Credentials {
        password: Zeroizing::new(pw.to_vec()),
        prf,
        pim,
        keyfiles: keyfiles.iter().map(|p| p.to_path_buf()).collect(),
    }
}

/// `vcctl volume create PATH` of a 1 MiB container with a 128 KiB hidden volume (SHA-256, PIM
/// 1 for both unless `extra` says otherwise; passwords "outer" and "hidden"), then `extra`.
fn create_with_hidden(path: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["volume", "create", path, "--password-stdin"];
    args.extend_from_slice(&["--size", "1048576", "--hidden-size", "131072"]);
    args.extend_from_slice(&["--prf", "sha256", "--pim", "1"]);
    args.extend_from_slice(extra);
    vcctl(&args, "outer\nhidden\n")
}

#[test]
fn protect_hidden_uses_the_hidden_headers_own_prf_pim_and_keyfiles() {
    let kf = TempPath::new("hidden-kf");
    std::fs::write(&kf.0, b"the hidden volume's keyfile").unwrap();
    let f = TempPath::new("own-hidden");
    let made = json(&ok(create_with_hidden(
        f.0.to_str().unwrap(),
        &[
            "--hidden-prf",
            "blake2s",
            "--hidden-pim",
            "2",
            "--hidden-keyfile",
            kf.0.to_str().unwrap(),
        ],
    )));
    let path = f.0.to_str().unwrap();
    // The hidden header opens with its own parameters only.
    let j = json(&ok(vcctl(
        &[
            "volume",
            "inspect",
            path,
            "--password-stdin",
            "--hidden",
            "--pim",
            "2",
            "--keyfile",
            kf.0.to_str().unwrap(),
        ],
        "hidden\n",
    )));
    assert_eq!(j["prf"], "blake2s");
    assert_eq!(j["data_offset"], made["hidden_data_offset"]);
    let err = fails(vcctl(
        &[
            "volume",
            "inspect",
            path,
            "--password-stdin",
            "--hidden",
            "--pim",
            "1",
            "--prf",
            "sha256",
        ],
        "hidden\n",
    ));
    assert!(err.contains("wrong password"), "{err}");

    let size = std::fs::metadata(&f.0).unwrap().len();
    let args = |hidden: Credentials| MountArgs {
        host: "x".into(),
        creds: creds(b"outer", Some(Prf::Sha256), 1, &[]),
        kind: Kind::Normal,
        hidden_creds: Some(hidden),
        letter: None,
        read_only: false,
        shared: false,
        wine_host_driver_name: None,
    };
    let mut file = std::fs::File::open(&f.0).unwrap();
    let own = args(creds(b"hidden", Some(Prf::Blake2s), 2, &[&kf.0]));
    let req = mount_request(&own, &mut file, size, None, &mut Vec::new()).unwrap();
    let req = vcdirect::abi::MountRequest::parse(&req, false).unwrap();
    assert_eq!(
        req.protected_range,
        (
            made["hidden_data_offset"].as_u64().unwrap(),
            made["hidden_data_size"].as_u64().unwrap()
        )
    );
    // The outer's PRF, PIM and keyfiles (the old behaviour) do not open the hidden header:
    // the mount is refused rather than left unprotected.
    let outer_params = args(creds(b"hidden", Some(Prf::Sha256), 1, &[]));
    let err = mount_request(&outer_params, &mut file, size, None, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("wrong password"), "{err}");
}

#[test]
fn hidden_parameters_without_a_hidden_volume_are_refused() {
    let f = TempPath::new("no-hidden");
    let err = fails(vcctl(
        &[
            "volume",
            "create",
            f.0.to_str().unwrap(),
            "--password-stdin",
            "--size",
            "524288",
            "--prf",
            "sha256",
            "--hidden-pim",
            "3",
        ],
        "",
    ));
    assert!(err.contains("--hidden-size"), "{err}");
    assert!(!f.0.exists());
    let err = fails(vcctl(
        &[
            "mount",
            f.0.to_str().unwrap(),
            "--password-stdin",
            "--hidden-prf",
            "sha512",
        ],
        "",
    ));
    assert!(err.contains("--protect-hidden"), "{err}");
}

#[test]
fn a_hidden_volume_without_keyfiles_inside_an_outer_with_keyfiles() {
    let kf = TempPath::new("outer-kf");
    std::fs::write(&kf.0, b"the outer volume's keyfile").unwrap();
    let kfp = kf.0.to_str().unwrap();
    let f = TempPath::new("hidden-no-kf");
    let path = f.0.to_str().unwrap();
    ok(create_with_hidden(
        path,
        &["--keyfile", kfp, "--hidden-no-keyfiles"],
    ));
    let inspect = |pw: &str, extra: &[&str]| {
        let mut args = vec![
            "volume",
            "inspect",
            path,
            "--password-stdin",
            "--prf",
            "sha256",
        ];
        args.extend_from_slice(&["--pim", "1"]);
        args.extend_from_slice(extra);
        vcctl(&args, pw)
    };
    // The outer needs its keyfile; the hidden volume opens with none, and not with the outer's.
    assert_eq!(
        json(&ok(inspect("outer\n", &["--keyfile", kfp])))["kind"],
        "normal"
    );
    assert_eq!(
        json(&ok(inspect("hidden\n", &["--hidden"])))["kind"],
        "hidden"
    );
    let err = fails(inspect("hidden\n", &["--hidden", "--keyfile", kfp]));
    assert!(err.contains("wrong password"), "{err}");
    // --protect-hidden with the outer's keyfile and --hidden-no-keyfiles builds the request.
    let outer = creds(b"outer", Some(Prf::Sha256), 1, &[&kf.0]);
    let hidden = creds(b"hidden", Some(Prf::Sha256), 1, &[]);
    let args = MountArgs {
        host: path.to_string(),
        creds: outer,
        kind: Kind::Normal,
        hidden_creds: Some(hidden),
        letter: None,
        read_only: false,
        shared: false,
        wine_host_driver_name: None,
    };
    let mut file = std::fs::File::open(&f.0).unwrap();
    assert!(mount_request(&args, &mut file, 1 << 20, None, &mut Vec::new()).is_ok());
    // The flag with a hidden keyfile is a contradiction: refused, nothing written.
    let g = TempPath::new("hidden-both");
    let err = fails(create_with_hidden(
        g.0.to_str().unwrap(),
        &["--hidden-no-keyfiles", "--hidden-keyfile", kfp],
    ));
    assert!(err.contains("cannot be used with"), "{err}");
    assert!(!g.0.exists());
}
