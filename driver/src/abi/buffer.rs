//! The control IOCTLs' METHOD_BUFFERED system buffer (docs/review.md W5).
//!
//! Owns: copying a request out of the system buffer, wiping the buffer before anything else
//! runs (a mount request carries the 64-byte master key), and writing the reply into it.
//! Never: decides what a request does (the handler passed in does).

use alloc::vec::Vec;
use zeroize::{Zeroize, Zeroizing};

use crate::Status;

/// STATUS_BUFFER_TOO_SMALL: the reply does not fit the caller's output buffer.
pub const BUFFER_TOO_SMALL: Status = Status::Host(0xC000_0023);

/// A control IOCTL's reply, as the handler gives it to [`serve`]. The small fixed-size
/// replies (mount, gates, erase keys) are arrays, so a request that changed something never
/// fails for want of memory for its reply (W6); the variable ones (list, status) are built
/// in fallibly allocated vectors before anything is written.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// No output (dismount).
    Empty,
    /// A 16-byte message (`MountReply`, `GatesMessage`, `EraseReply`).
    Small([u8; 16]),
    /// A built reply (`ListReply`, `StatusReply`).
    Built(Vec<u8>),
}

impl Answer {
    /// The length of every [`Answer::Small`] reply.
    pub const SMALL: usize = 16;

    /// Ok if a small reply fits an output buffer of `output_len` bytes, else
    /// STATUS_BUFFER_TOO_SMALL. A request that changes something (GATES_SET, ERASE_KEYS)
    /// calls this before it acts, so a reply that could not be written means nothing changed
    /// (bad input loses nothing).
    pub fn small_fits(output_len: usize) -> Result<(), Status> {
        if output_len < Self::SMALL {
            return Err(BUFFER_TOO_SMALL);
        }
        Ok(())
    }

    /// The reply's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Answer::Empty => &[],
            Answer::Small(b) => b,
            Answer::Built(v) => v,
        }
    }
}

/// Serves one buffered IOCTL. The first `input_len` bytes of `buf` are copied into zeroizing
/// storage and the whole of `buf` is zeroed before `handler` sees the copy, so no path out
/// (success, a refused or malformed request, a reply too large) leaves request bytes in the
/// buffer the I/O manager copies back and frees. The reply is written only if it fits
/// `output_len`. Returns the status and the IoStatus.Information (reply length).
///
/// The copy is as long as the caller's input, which any user who may open the control device
/// chooses: it is allocated fallibly (W6), and a copy that cannot be made is
/// STATUS_INSUFFICIENT_RESOURCES with the buffer wiped all the same.
pub fn serve(
    buf: &mut [u8],
    input_len: usize,
    output_len: usize,
    handler: impl FnOnce(&[u8], usize) -> Result<Answer, Status>,
) -> (Status, usize) {
    let input_len = input_len.min(buf.len());
    let copy = crate::io::try_vec(input_len).map(|mut v| {
        v.extend_from_slice(&buf[..input_len]);
        Zeroizing::new(v)
    });
    buf.zeroize();
    let Ok(input) = copy else {
        return (Status::InsufficientResources, 0);
    };
    let output_len = output_len.min(buf.len());
    match handler(&input, output_len) {
        Err(status) => (status, 0),
        Ok(reply) => {
            let reply = reply.bytes();
            match buf.get_mut(..reply.len()) {
                Some(out) if reply.len() <= output_len => {
                    out.copy_from_slice(reply);
                    (Status::Success, reply.len())
                }
                _ => (BUFFER_TOO_SMALL, 0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;

    use super::*;
    use crate::abi::{MasterKey, MountReply, MountRequest};
    use crate::crypto::{Algorithm, AES, ALGORITHMS};

    /// The three-cipher cascade whose request carries the largest key area (192 bytes).
    const CASCADE: Algorithm = ALGORITHMS[6];

    /// A key area whose bytes (0xC0..=0xFF) appear nowhere else in a request or reply built
    /// here but in the key length field of a 192-byte key (0xC0).
    fn key(algorithm: Algorithm) -> Vec<u8> {
        (0..algorithm.key_len())
            .map(|i| 0xC0 + (i % 64) as u8)
            .collect()
    }

    fn request_bytes_for(algorithm: Algorithm) -> Vec<u8> {
        MountRequest {
            flags: 0,
            sector_size: 512,
            data_offset: 131_072,
            data_size: 1 << 20,
            protected_range: (0, 0),
            drive_letter: Some('V'),
            algorithm,
            key: MasterKey::try_new(&key(algorithm)).unwrap(),
            host_path: "C:\\v.hc".encode_utf16().collect(),
            wine_host_driver_name: Vec::new(),
        }
        .build()
        .unwrap()
        .to_vec()
    }

    /// The mount handler's shape in the glue: parse, the policy, the host open, the mount.
    /// `fail_at` picks the step that fails (None: success).
    fn mount_handler(
        fail_at: Option<&'static str>,
    ) -> impl FnOnce(&[u8], usize) -> Result<Answer, Status> {
        move |input, output_len| {
            let request = MountRequest::parse(input, false).map_err(|e| e.status())?;
            assert_eq!(
                *request.key,
                key(request.algorithm)[..],
                "the handler sees the key"
            );
            for step in ["policy", "host open", "mount"] {
                if fail_at == Some(step) {
                    return Err(Status::Host(0xC000_0022));
                }
            }
            if output_len < MountReply::SIZE {
                return Err(BUFFER_TOO_SMALL);
            }
            Ok(Answer::Small(
                MountReply {
                    volume_id: 7,
                    drive_letter: request.drive_letter,
                }
                .build(),
            ))
        }
    }

    fn holds_key_byte(buf: &[u8]) -> bool {
        buf.iter().any(|b| key(AES).contains(b))
    }

    #[test]
    fn w5_mount_buffer_holds_no_key_byte_after_success() {
        for algorithm in [AES, CASCADE] {
            w5_no_key_byte_after_success(algorithm);
        }
    }

    fn w5_no_key_byte_after_success(algorithm: Algorithm) {
        let mut buf = request_bytes_for(algorithm);
        assert!(
            buf.iter().filter(|b| key(AES).contains(b)).count() >= algorithm.key_len(),
            "every key byte is in the request"
        );
        let len = buf.len();
        let (status, info) = serve(&mut buf, len, MountReply::SIZE, mount_handler(None));
        assert_eq!(status, Status::Success);
        assert_eq!(info, MountReply::SIZE);
        assert_eq!(
            MountReply::parse(&buf[..info]).unwrap(),
            MountReply {
                volume_id: 7,
                drive_letter: Some('V')
            }
        );
        assert!(!holds_key_byte(&buf));
        assert!(
            buf[info..].iter().all(|b| *b == 0),
            "only the reply remains"
        );
    }

    #[test]
    fn w5_mount_buffer_holds_no_key_byte_after_each_failure() {
        for algorithm in [AES, CASCADE] {
            w5_no_key_byte_after_each_failure(algorithm);
        }
    }

    fn w5_no_key_byte_after_each_failure(algorithm: Algorithm) {
        let request_bytes = || request_bytes_for(algorithm);
        let len = request_bytes().len();
        // (case, input length, output length, failing step, expected status)
        let cases: [(&str, usize, usize, Option<&'static str>, Status); 6] = [
            (
                "refused by the policy",
                len,
                MountReply::SIZE,
                Some("policy"),
                Status::Host(0xC000_0022),
            ),
            (
                "host open failed",
                len,
                MountReply::SIZE,
                Some("host open"),
                Status::Host(0xC000_0022),
            ),
            (
                "mount failed",
                len,
                MountReply::SIZE,
                Some("mount"),
                Status::Host(0xC000_0022),
            ),
            (
                "output too small",
                len,
                MountReply::SIZE - 1,
                None,
                BUFFER_TOO_SMALL,
            ),
            (
                "input cut short",
                len - 1,
                MountReply::SIZE,
                None,
                Status::Host(0xC000_0004),
            ),
            ("no output buffer", len, 0, None, BUFFER_TOO_SMALL),
        ];
        for (case, input_len, output_len, fail_at, want) in cases {
            let mut buf = request_bytes();
            let (status, info) = serve(&mut buf, input_len, output_len, mount_handler(fail_at));
            assert_eq!((status, info), (want, 0), "{case}");
            assert!(buf.iter().all(|b| *b == 0), "{case}: buffer not wiped");
        }
        // A malformed request (wrong version) is refused by the parser and wiped as well.
        let mut buf = request_bytes();
        buf[0] = 9;
        let (status, _) = serve(&mut buf, len, MountReply::SIZE, mount_handler(None));
        assert_eq!(status, Status::Host(0xC000_0059));
        assert!(
            buf.iter().all(|b| *b == 0),
            "wrong version: buffer not wiped"
        );
    }

    #[test]
    fn w5_a_reply_larger_than_the_output_buffer_is_not_written() {
        let mut buf = vec![0xAA; 16];
        let (status, info) = serve(&mut buf, 16, 8, |_, _| Ok(Answer::Built(vec![1; 12])));
        assert_eq!((status, info), (BUFFER_TOO_SMALL, 0));
        assert_eq!(buf, vec![0; 16]);
    }

    /// GATES_SET's and ERASE_KEYS' shape in the glue: the output size is checked before the
    /// request acts, so a too-small output buffer is STATUS_BUFFER_TOO_SMALL and nothing
    /// changed; a large enough one acts and gets the reply.
    #[test]
    fn w6_a_request_that_acts_checks_its_output_size_first_and_changes_nothing() {
        for (output_len, acted, expected) in [
            (0, false, (BUFFER_TOO_SMALL, 0)),
            (Answer::SMALL - 1, false, (BUFFER_TOO_SMALL, 0)),
            (Answer::SMALL, true, (Status::Success, Answer::SMALL)),
        ] {
            let mut changed = false;
            let mut buf = vec![0xAA; 32];
            let got = serve(&mut buf, 16, output_len, |_, output_len| {
                Answer::small_fits(output_len)?;
                changed = true;
                Ok(Answer::Small([7; Answer::SMALL]))
            });
            assert_eq!(got, expected, "output {output_len}");
            assert_eq!(changed, acted, "output {output_len}");
        }
    }

    #[cfg(feature = "fault-switches")]
    #[test]
    fn w6_an_input_copy_that_cannot_be_made_is_insufficient_resources_and_the_buffer_is_wiped() {
        let mut buf = vec![0xAA; 64];
        crate::faults::fail_allocation_at(1);
        let (status, info) = serve(&mut buf, 64, 64, |_, _| panic!("the handler must not run"));
        crate::faults::fail_allocation_at(0);
        assert_eq!((status, info), (Status::InsufficientResources, 0));
        assert_eq!(buf, vec![0; 64]);
    }

    /// Each fallible allocation of serving a mount request in turn (the input copy, then the
    /// master key's block, the parsed host path and Wine driver name): STATUS_INSUFFICIENT_RESOURCES, the handler's
    /// later steps never run, the buffer wiped; the mount's reply itself allocates nothing.
    #[cfg(feature = "fault-switches")]
    #[test]
    fn w6_a_failed_allocation_while_serving_a_mount_is_insufficient_resources_and_wiped() {
        let request_bytes = || request_bytes_for(AES);
        let len = request_bytes().len();
        let mut buf = request_bytes();
        crate::faults::fail_allocation_at(0);
        let (status, _) = serve(&mut buf, len, MountReply::SIZE, mount_handler(None));
        let asked = crate::faults::allocations_seen();
        assert_eq!(status, Status::Success);
        assert_eq!(
            asked, 4,
            "the input copy, the key's block and the two parsed strings"
        );
        for n in 1..=asked {
            let mut buf = request_bytes();
            crate::faults::fail_allocation_at(n);
            let (status, info) = serve(&mut buf, len, MountReply::SIZE, mount_handler(None));
            crate::faults::fail_allocation_at(0);
            assert_eq!(
                (status, info),
                (Status::InsufficientResources, 0),
                "site {n}"
            );
            assert!(buf.iter().all(|b| *b == 0), "site {n}: buffer not wiped");
        }
    }
}
