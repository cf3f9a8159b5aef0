//! The mount request across driver versions (the ABI's extended layout): vcctl sends an AES
//! mount in the first layout, byte for byte what an older driver accepts; another algorithm
//! in the extended layout (the algorithm and its whole key area), which a driver of this
//! version mounts and an older driver refuses by its size check, and vcctl turns that
//! refusal into one line naming the cipher.
//!
//! The check bites: with the request of an AES mount built in the extended layout
//! (`AbiAesRequestExtended`), the older driver refuses it. One test, because fault switches
//! are global to the process.

use vcctl::cipher::{Algorithm, AES, ALGORITHMS};
use vcctl::create::{create, CreateSpec, Fill, VolumeSpec};
use vcctl::driver::{mount_error, mount_request, MountArgs, ERROR_BAD_LENGTH};
use vcctl::kdf::Prf;
use vcctl::volume::{Credentials, Kind};
use vcdirect::abi::MountRequest;
use vcdirect::faults::{set_faults, Fault};
use zeroize::Zeroizing;

/// What a driver before the extended layout did with a mount request: its exact-size check,
/// then a 64-byte key length and a zero reserved field (its `MountRequest::parse`).
fn older_driver(request: &[u8]) -> Result<(), std::io::Error> {
    let u16_at = |at: usize| u16::from_le_bytes([request[at], request[at + 1]]);
    if request.len() != MountRequest::SIZE {
        return Err(std::io::Error::from_raw_os_error(ERROR_BAD_LENGTH));
    }
    assert_eq!(u16_at(50), 64);
    assert_eq!(&request[52..56], &[0; 4]);
    Ok(())
}

/// The mount request vcctl builds for a fresh container of `algorithm`.
fn request_for(algorithm: Algorithm) -> Zeroizing<Vec<u8>> {
    let path = std::env::temp_dir().join(format!(
        "vcctl-abi-compat-{}-{}",
        algorithm.name(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    create(
        &path,
        &CreateSpec {
            size: 1 << 20,
            outer: VolumeSpec {
                password: Zeroizing::new(b"pw".to_vec()),
                prf: Prf::Sha256,
                pim: 1,
            },
            hidden: None,
            fill: Fill::Random,
            algorithm,
            hidden_algorithm: None,
            filesystem: vcctl::create::Filesystem::None,
        },
    )
    .expect("create");
    let args = MountArgs {
        host: r"\??\C:\v.hc".to_string(),
        creds: Credentials {
            password: Zeroizing::new(b"pw".to_vec()),
            prf: Some(Prf::Sha256),
            pim: 1,
            keyfiles: Vec::new(),
        },
        kind: Kind::Normal,
        hidden_creds: None,
        letter: None,
        read_only: false,
        shared: false,
        wine_host_driver_name: None,
    };
    let mut file = std::fs::File::open(&path).expect("open");
    let bytes = mount_request(&args, &mut file, 1 << 20, None, &mut Vec::new()).expect("request");
    let _ = std::fs::remove_file(&path);
    bytes
}

#[test]
fn aes_mounts_keep_the_old_layout_and_an_old_driver_asked_for_a_cascade_is_one_line() {
    set_faults(&[]);
    // AES: the first layout, accepted by an older driver and by this one.
    let aes = request_for(AES);
    assert_eq!(aes.len(), MountRequest::SIZE);
    older_driver(&aes).expect("an older driver mounts an AES volume from this vcctl");
    let parsed = MountRequest::parse(&aes, false).expect("this driver");
    assert_eq!((parsed.algorithm, parsed.key.len()), (AES, 64));

    // A three-cipher cascade: the extended layout, all 192 key bytes; this driver takes it, an
    // older one refuses its size, and vcctl says why in one line.
    let cascade = ALGORITHMS[6];
    let request = request_for(cascade);
    assert_eq!(request.len(), MountRequest::SIZE_EXTENDED);
    let parsed = MountRequest::parse(&request, false).expect("this driver");
    assert_eq!((parsed.algorithm, parsed.key.len()), (cascade, 192));
    let refused = older_driver(&request).expect_err("an older driver refuses the size");
    let line = mount_error(&request, refused).to_string();
    assert_eq!(
        line,
        "the installed driver is too old for cipher aes-twofish-serpent: it mounts AES volumes only (install this vcctl's driver)"
    );
    // Any other failure of an AES mount is not blamed on the driver's age.
    let other = mount_error(&aes, std::io::Error::from_raw_os_error(ERROR_BAD_LENGTH));
    assert!(!other.to_string().contains("too old"), "{other}");

    // The check bites: an AES request in the extended layout is refused by an older driver.
    set_faults(&[Fault::AbiAesRequestExtended]);
    let extended = request_for(AES);
    set_faults(&[]);
    let refused = older_driver(&extended);
    eprintln!("fault switch AbiAesRequestExtended: an older driver answers {refused:?}");
    assert_eq!(
        refused.map_err(|e| e.raw_os_error()),
        Err(Some(ERROR_BAD_LENGTH)),
        "an AES mount from this vcctl must reach an older driver in the layout it knows"
    );
}
