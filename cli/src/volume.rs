//! Opening a VeraCrypt volume: find a header that decrypts, then read its data area.
//!
//! Owns: where headers live (primary at 0, hidden at 65536, backups at size-131072 and
//! size-65536), the parallel trial of PRFs (one thread per PRF, the others cancelled once one
//! succeeds; Argon2id, which cannot be cancelled, last and only once no PBKDF2 PRF opened the
//! header), the notice of which PRF a slow open is trying ([`with_prf_notice`]), cipher
//! identification, and the data-area read with absolute XTS data-unit numbers.
//! Never: writes to a volume (see `create`).

use std::cell::RefCell;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

use crate::cipher::{Algorithm, Xts, ALGORITHMS};
use crate::header::{parse_decrypted_header, Header, HeaderError, HEADER_SIZE, SALT_SIZE};
use crate::kdf::{self, Prf};
use crate::keyfile;
use crate::VolumeError;

/// Bytes of one header slot; a header group is two slots (normal + hidden).
pub const HEADER_SLOT: u64 = 65_536;
/// Bytes of a header group (primary + hidden header slots).
pub const HEADER_GROUP: u64 = 131_072;

/// Which volume of a container to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The outer (or only) volume: header at 0.
    Normal,
    /// The hidden volume: header at 65536.
    Hidden,
}

impl Kind {
    /// `normal` or `hidden`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Normal => "normal",
            Kind::Hidden => "hidden",
        }
    }
}

/// Which copy of the header opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderCopy {
    /// The header at the start of the container.
    Primary,
    /// The backup header at the end.
    Backup,
}

impl HeaderCopy {
    /// `primary` or `backup`.
    pub fn name(self) -> &'static str {
        match self {
            HeaderCopy::Primary => "primary",
            HeaderCopy::Backup => "backup",
        }
    }
}

/// What opens a volume: password, PRF choice, PIM, keyfiles and which volume.
pub struct Credentials {
    /// The password bytes as typed (zeroized on drop).
    pub password: Zeroizing<Vec<u8>>,
    /// One PRF, or `None` to try all of them in parallel.
    pub prf: Option<Prf>,
    /// Personal iterations multiplier (0: VeraCrypt's default).
    pub pim: u32,
    /// Keyfiles, in order.
    pub keyfiles: Vec<std::path::PathBuf>,
}

impl Credentials {
    /// The password after keyfiles were mixed in.
    pub fn effective_password(&self) -> Result<Zeroizing<Vec<u8>>, VolumeError> {
        if self.password.len() > keyfile::MAX_PASSWORD {
            return Err(VolumeError::PasswordTooLong(self.password.len()));
        }
        keyfile::apply_keyfiles(&self.password, &self.keyfiles).map_err(VolumeError::Keyfile)
    }

    fn prfs(&self) -> Vec<Prf> {
        match self.prf {
            Some(p) => vec![p],
            None => Prf::ALL.to_vec(),
        }
    }
}

/// An opened volume: its checked header and how it was opened.
#[derive(Debug)]
pub struct Opened {
    /// The decrypted header (holds the master key).
    pub header: Header,
    /// The PRF that derived the header key.
    pub prf: Prf,
    /// The encryption algorithm of the volume.
    pub algorithm: Algorithm,
    /// Normal or hidden.
    pub kind: Kind,
    /// Primary or backup header.
    pub copy: HeaderCopy,
}

impl Opened {
    /// VeraCrypt's vulnerable-key check: the primary and secondary XTS keys (the first and
    /// second halves of the master key area the cipher uses) are equal. VeraCrypt mounts such
    /// a volume with a warning and refuses to change its password (the master key would stay).
    pub fn master_key_vulnerable(&self) -> bool {
        let half = self.algorithm.key_len() / 2;
        let key = &self.header.master_key[..];
        half > 0 && key.len() >= 2 * half && key[..half] == key[half..2 * half]
    }

    /// What the user must be told about this open, one line each (stderr; never an error):
    /// the backup header was used (with the command that repairs the primary), and a
    /// vulnerable master key (with VeraCrypt's advice). `volume` names the volume as given.
    pub fn warnings(&self, volume: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.copy == HeaderCopy::Backup {
            let (which, flag) = match self.kind {
                Kind::Hidden => ("the hidden volume's primary header", " --hidden"),
                Kind::Normal => ("the primary header", ""),
            };
            out.push(format!(
                "warning: {which} of {volume} did not open; its backup header at the end was used (repair the primary from it with: vcctl volume restore-header {volume} --password-stdin{flag})"
            ));
        }
        if self.master_key_vulnerable() {
            out.push(format!(
                "warning: the master key of {volume} is vulnerable (its two XTS key halves are equal): create a new volume and move the data to it"
            ));
        }
        out
    }

    /// The master key area the volume's algorithm uses: its first `key_len()` bytes (64 for
    /// AES, 64 per cipher of a cascade), VeraCrypt's layout.
    pub fn key_area(&self) -> &[u8] {
        &self.header.master_key[..self.algorithm.key_len()]
    }

    /// The engine's cipher for the volume's data area (any algorithm).
    pub fn cipher(&self) -> vcdirect::crypto::VolumeCipher {
        vcdirect::crypto::VolumeCipher::new(self.algorithm, self.key_area())
    }
}

/// Which PRF a slow open is trying, as VeraCrypt shows its progress: an open that tries several
/// PRFs and has run for `after` names, through `say`, each PRF being derived then and each one
/// it starts from then on (one line each).
#[derive(Clone)]
pub struct PrfNotice {
    /// How long an open runs before it names the PRFs it tries (vcctl: 1.5 s).
    pub after: Duration,
    /// Takes each line (vcctl: stderr).
    pub say: Arc<dyn Fn(&str) + Send + Sync>,
}

thread_local! {
    static PRF_NOTICE: RefCell<Option<PrfNotice>> = const { RefCell::new(None) };
}

/// Runs `f` with `notice` for the opens it makes on this thread (none outside it).
pub fn with_prf_notice<T>(notice: Option<PrfNotice>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<PrfNotice>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            PRF_NOTICE.with(|n| *n.borrow_mut() = before);
        }
    }
    let _restore = Restore(PRF_NOTICE.with(|n| n.replace(notice)));
    f()
}

/// The notice of one open: since when, and which header and pass it is at.
struct Announce {
    notice: PrfNotice,
    start: Instant,
    what: String,
}

impl Announce {
    fn say(&self, prf: Prf) {
        (self.notice.say)(&format!(
            "trying PRF {} on {} ({:.1} s so far)",
            prf.name(),
            self.what,
            self.start.elapsed().as_secs_f64()
        ));
    }
}

/// Why a header candidate did not open.
enum Trial {
    Opened(Box<Opened>),
    /// Magic and CRC checks passed for no PRF/cipher.
    NoMatch,
    /// Some key gave the right magic but a later check failed: the header is damaged.
    Damaged(HeaderError),
    /// Argon2id could not run (the memory its PIM asks for): the header may be Argon2id's.
    Kdf(kdf::Argon2Error),
}

/// Opens `path` with `creds`: AES-256-XTS on the primary then the backup header, then the
/// other ciphers on both (to name them).
pub fn open(path: &Path, creds: &Credentials, kind: Kind) -> Result<Opened, VolumeError> {
    let mut file = File::open(path).map_err(|e| VolumeError::io(path, e))?;
    open_file(&mut file, creds, kind)
}

/// Like [`open`] on an already opened file.
pub fn open_file(file: &mut File, creds: &Credentials, kind: Kind) -> Result<Opened, VolumeError> {
    let size = file.metadata().map_err(VolumeError::Read)?.len();
    open_sized(file, size, creds, kind)
}

/// Like [`open_file`] for a host whose size the caller knows (raw devices report 0).
pub fn open_sized(
    file: &mut File,
    size: u64,
    creds: &Credentials,
    kind: Kind,
) -> Result<Opened, VolumeError> {
    open_host(file, size, 512, creds, kind)
}

/// Reads the 512-byte header at `at` with whole, aligned sectors of `sector` bytes into a
/// buffer aligned to 4096 bytes, as a raw disk with that logical sector size requires.
pub fn read_header<R: Read + Seek>(
    host: &mut R,
    at: u64,
    sector: u32,
) -> Result<Zeroizing<[u8; HEADER_SIZE]>, VolumeError> {
    let sector = u64::from(sector.max(HEADER_SIZE as u32));
    let start = at / sector * sector;
    let len = ((at + HEADER_SIZE as u64).div_ceil(sector) * sector - start) as usize;
    let mut buf = Zeroizing::new(vec![0u8; len + 4096]);
    let skip = buf.as_ptr().align_offset(4096).min(4096);
    let whole = &mut buf[skip..skip + len];
    host.seek(SeekFrom::Start(start))
        .and_then(|_| host.read_exact(whole))
        .map_err(VolumeError::Read)?;
    let from = (at - start) as usize;
    let mut raw = Zeroizing::new([0u8; HEADER_SIZE]);
    raw.copy_from_slice(&whole[from..from + HEADER_SIZE]);
    Ok(raw)
}

/// Like [`open_sized`] on any host, reading headers with whole, aligned sectors of the host's
/// logical sector size (`sector`: 512 or 4096, from the host's geometry).
pub fn open_host<R: Read + Seek>(
    file: &mut R,
    size: u64,
    sector: u32,
    creds: &Credentials,
    kind: Kind,
) -> Result<Opened, VolumeError> {
    let primary_at = primary_offset(kind);
    if size < primary_at + HEADER_SIZE as u64 {
        return Err(VolumeError::Truncated {
            size,
            need: primary_at + HEADER_SIZE as u64,
        });
    }
    let mut candidates = vec![(HeaderCopy::Primary, primary_at)];
    if size >= 2 * HEADER_GROUP {
        candidates.push((HeaderCopy::Backup, backup_offset(kind, size)));
    }
    open_candidates(file, size, &candidates, sector, creds, kind)
}

/// Where the primary header of `kind` lives.
pub fn primary_offset(kind: Kind) -> u64 {
    match kind {
        Kind::Normal => 0,
        Kind::Hidden => HEADER_SLOT,
    }
}

/// Where the embedded backup header of `kind` lives in a container of `size` bytes.
pub fn backup_offset(kind: Kind, size: u64) -> u64 {
    size - HEADER_GROUP + primary_offset(kind)
}

/// Tries the headers at `candidates` (in order) of `file`; the opened volume must fit in
/// `size` bytes (the volume's size, which need not be `file`'s: a header backup file).
pub fn open_candidates<R: Read + Seek>(
    file: &mut R,
    size: u64,
    candidates: &[(HeaderCopy, u64)],
    sector: u32,
    creds: &Credentials,
    kind: Kind,
) -> Result<Opened, VolumeError> {
    let start = Instant::now();
    let notice = PRF_NOTICE.with(|n| n.borrow().clone());
    let notice = notice.filter(|_| creds.prfs().len() > 1);
    let announce = |copy: HeaderCopy, pass: &str| {
        notice.clone().map(|notice| Announce {
            notice,
            start,
            what: format!(
                "the {}{} header, {pass}",
                match kind {
                    Kind::Normal => "",
                    Kind::Hidden => "hidden volume's ",
                },
                copy.name()
            ),
        })
    };
    let password = creds.effective_password()?;
    let prfs = creds.prfs();
    let mut damaged = None;
    let mut headers = Vec::with_capacity(candidates.len());
    for (copy, at) in candidates {
        headers.push((*copy, read_header(file, *at, sector)?));
    }
    // AES-256-XTS on every header copy first (64 bytes of key per PRF), so a damaged primary
    // header of an AES volume opens from its backup without the longer derivation; then the
    // other ciphers, continuing each PRF's derivation where the first pass stopped.
    // A header that decrypts but whose data area does not fit the volume is damaged like a
    // failed CRC: the next copy is tried, and the first such error is reported if none opens.
    let mut unfit = None;
    let mut kdf_failed = None;
    let mut first_keys = Vec::with_capacity(headers.len());
    for (copy, raw) in &headers {
        let (trial, keys) = try_header_aes(
            raw,
            &password,
            &prfs,
            creds.pim,
            announce(*copy, "AES").as_ref(),
        );
        match trial {
            Trial::Opened(o) => match finish(*o, kind, *copy, size) {
                Ok(opened) => return Ok(opened),
                Err(e) => unfit = unfit.or(Some(e)),
            },
            Trial::Damaged(e) if e.is_unsupported() => return Err(VolumeError::Unsupported(e)),
            Trial::Damaged(e) => damaged = damaged.or(Some(e)),
            Trial::Kdf(e) => kdf_failed = kdf_failed.or(Some(e)),
            Trial::NoMatch => {}
        }
        first_keys.push(keys);
    }
    for ((copy, raw), keys) in headers.iter().zip(&first_keys) {
        let announce = announce(*copy, "the other ciphers");
        match try_header_others(raw, &password, &prfs, creds.pim, keys, announce.as_ref()) {
            Trial::Opened(o) => match finish(*o, kind, *copy, size) {
                Ok(opened) => return Ok(opened),
                Err(e) => unfit = unfit.or(Some(e)),
            },
            Trial::Damaged(e) if e.is_unsupported() => return Err(VolumeError::Unsupported(e)),
            Trial::Damaged(e) => damaged = damaged.or(Some(e)),
            Trial::Kdf(e) => kdf_failed = kdf_failed.or(Some(e)),
            Trial::NoMatch => {}
        }
    }
    if let Some(e) = unfit {
        return Err(e);
    }
    // No header opened: a damaged one names its check; else Argon2id that could not run is the
    // cause to tell (the header may be Argon2id's); else the password or parameters are wrong.
    match (damaged, kdf_failed) {
        (Some(e), _) => Err(VolumeError::DamagedHeader(e)),
        (None, Some(e)) => Err(VolumeError::Kdf(e)),
        (None, None) => Err(VolumeError::WrongPassword {
            prfs: prfs.iter().map(|p| p.name()).collect::<Vec<_>>().join(","),
            pim: creds.pim,
        }),
    }
}

fn check_fits(h: &Header, size: u64) -> Result<(), VolumeError> {
    match h.data_offset.checked_add(h.data_size) {
        Some(end) if end <= size => Ok(()),
        _ => Err(VolumeError::Truncated {
            size,
            need: h.data_offset.saturating_add(h.data_size),
        }),
    }
}

fn finish(mut o: Opened, kind: Kind, copy: HeaderCopy, size: u64) -> Result<Opened, VolumeError> {
    o.kind = kind;
    o.copy = copy;
    check_fits(&o.header, size)?;
    Ok(o)
}

/// Each PRF's key of the first pass (`None` where the derivation was cancelled or failed): the
/// first 64 bytes of PBKDF2's, or Argon2id's whole 192 (not a prefix of a longer derivation,
/// so it is derived whole at once).
type FirstKeys = Vec<Option<Zeroizing<Vec<u8>>>>;

/// Runs `job` for every PRF index. Like VeraCrypt, PRFs run in parallel on a pool of one thread
/// per CPU, taken in VeraCrypt's order; a job that opens the header cancels the others. With
/// `announce`, once the open has run for its notice's time, each PRF in progress then and each
/// one started later is named (once).
fn parallel<T: Send>(
    prfs: &[Prf],
    announce: Option<&Announce>,
    job: impl Fn(usize, &AtomicBool) -> T + Sync,
    opened: impl Fn(&T) -> bool + Sync,
) -> Vec<(usize, T)> {
    /// PRFs in progress, whether the notice time has passed, whether every job is done.
    struct Progress {
        running: Vec<usize>,
        past: bool,
        finished: bool,
    }
    let progress = Mutex::new(Progress {
        running: Vec::new(),
        past: false,
        finished: false,
    });
    let changed = Condvar::new();
    let lock = || progress.lock().unwrap_or_else(|e| e.into_inner());
    let cancel = AtomicBool::new(false);
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(prfs.len());
    std::thread::scope(|s| {
        if let Some(a) = announce {
            let (lock, changed) = (&lock, &changed);
            s.spawn(move || {
                let deadline = a.start + a.notice.after;
                let mut p = lock();
                loop {
                    if p.finished {
                        return;
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    p = changed
                        .wait_timeout(p, deadline - now)
                        .map_or_else(|e| e.into_inner().0, |r| r.0);
                }
                // A worker that started a job past the deadline may have named them already.
                if !p.past {
                    p.past = true;
                    for &i in &p.running {
                        a.say(prfs[i]);
                    }
                }
            });
        }
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let (cancel, next, job, opened, lock) = (&cancel, &next, &job, &opened, &lock);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= prfs.len() || cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        if let Some(a) = announce {
                            let mut p = lock();
                            p.running.push(i);
                            if p.past {
                                a.say(prfs[i]);
                            } else if a.start.elapsed() >= a.notice.after {
                                // Past the deadline before the notice thread woke (a job can be
                                // quicker than its wake-up): name what runs now, this one too.
                                p.past = true;
                                for &j in &p.running {
                                    a.say(prfs[j]);
                                }
                            }
                        }
                        let r = job(i, cancel);
                        if announce.is_some() {
                            lock().running.retain(|&j| j != i);
                        }
                        let done = opened(&r);
                        mine.push((i, r));
                        if done {
                            cancel.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                    mine
                })
            })
            .collect();
        let results = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect();
        lock().finished = true;
        changed.notify_all();
        results
    })
}

/// Runs `job` for every PRF index as [`parallel`] does, the PBKDF2 PRFs first and Argon2id
/// only once none of them opened the header (VeraCrypt's order either way): an Argon2id run
/// cannot be cancelled once started (the crate runs all its passes in one call), so it never
/// runs beside a PBKDF2 PRF that may open the header, and an open that a PBKDF2 PRF can do never
/// waits for it.
fn staged<T: Send>(
    prfs: &[Prf],
    announce: Option<&Announce>,
    job: impl Fn(usize, &AtomicBool) -> T + Sync,
    opened: impl Fn(&T) -> bool + Sync,
) -> Vec<(usize, T)> {
    let mut out = Vec::with_capacity(prfs.len());
    for argon2 in [false, true] {
        let group: Vec<usize> = (0..prfs.len())
            .filter(|&i| prfs[i].is_argon2() == argon2)
            .collect();
        if group.is_empty() {
            continue;
        }
        let sub: Vec<Prf> = group.iter().map(|&i| prfs[i]).collect();
        let results = parallel(&sub, announce, |j, cancel| job(group[j], cancel), &opened);
        let done = results.iter().any(|(_, r)| opened(r));
        out.extend(results.into_iter().map(|(j, r)| (group[j], r)));
        if done {
            break;
        }
    }
    out
}

fn merge(results: impl IntoIterator<Item = Trial>) -> Trial {
    let mut damaged = None;
    let mut kdf = None;
    for r in results {
        match r {
            Trial::Opened(o) => return Trial::Opened(o),
            Trial::Damaged(e) => damaged = damaged.or(Some(e)),
            Trial::Kdf(e) => kdf = kdf.or(Some(e)),
            Trial::NoMatch => {}
        }
    }
    match (damaged, kdf) {
        (Some(e), _) => Trial::Damaged(e),
        (None, Some(e)) => Trial::Kdf(e),
        (None, None) => Trial::NoMatch,
    }
}

/// Pass 1: AES-256-XTS with every PRF; also returns each PRF's first 64 key bytes.
fn try_header_aes(
    raw: &[u8; HEADER_SIZE],
    password: &[u8],
    prfs: &[Prf],
    pim: u32,
    announce: Option<&Announce>,
) -> (Trial, FirstKeys) {
    let results = staged(
        prfs,
        announce,
        |i, cancel| {
            let len = if prfs[i].is_argon2() {
                kdf::ARGON2_KEY_LEN
            } else {
                64
            };
            let mut key = Zeroizing::new(vec![0u8; len]);
            let salt = &raw[..SALT_SIZE];
            match kdf::header_key(prfs[i], password, salt, pim, &mut key[..], cancel) {
                Ok(()) => {}
                Err(kdf::KdfError::Cancelled) => return (Trial::NoMatch, None),
                Err(kdf::KdfError::Argon2(e)) => return (Trial::Kdf(e), None),
            }
            let t = try_algorithm(raw, &key[..], crate::cipher::AES, prfs[i]);
            (t, Some(key))
        },
        |(t, _)| matches!(t, Trial::Opened(_)),
    );
    let mut keys: FirstKeys = (0..prfs.len()).map(|_| None).collect();
    let mut trials = Vec::new();
    for (i, (t, k)) in results {
        keys[i] = k;
        trials.push(t);
    }
    (merge(trials), keys)
}

/// Pass 2: every other cipher and cascade, deriving the key bytes 64..192 per PRF.
fn try_header_others(
    raw: &[u8; HEADER_SIZE],
    password: &[u8],
    prfs: &[Prf],
    pim: u32,
    first: &FirstKeys,
    announce: Option<&Announce>,
) -> Trial {
    let iterations = kdf::iterations(pim);
    let results = staged(
        prfs,
        announce,
        |i, cancel| {
            let Some(start) = &first[i] else {
                return Trial::NoMatch;
            };
            let mut key = Zeroizing::new([0u8; 192]);
            let have = start.len().min(192);
            key[..have].copy_from_slice(&start[..have]);
            let salt = &raw[..SALT_SIZE];
            // Argon2id's first pass derived all 192 bytes; PBKDF2 continues from byte 64.
            if have < 192
                && kdf::derive_from(
                    prfs[i],
                    password,
                    salt,
                    iterations,
                    64,
                    &mut key[64..],
                    cancel,
                )
                .is_err()
            {
                return Trial::NoMatch;
            }
            merge(
                ALGORITHMS
                    .iter()
                    .skip(1)
                    .map(|alg| try_algorithm(raw, &key[..], *alg, prfs[i])),
            )
        },
        |t| matches!(t, Trial::Opened(_)),
    );
    merge(results.into_iter().map(|(_, t)| t))
}

/// Decrypts the header with one algorithm and checks it.
fn try_algorithm(raw: &[u8; HEADER_SIZE], key: &[u8], alg: Algorithm, prf: Prf) -> Trial {
    let mut plain = Zeroizing::new(*raw);
    alg.decrypt(key, &mut plain[SALT_SIZE..], 0);
    match parse_decrypted_header(&plain) {
        Ok(header) => Trial::Opened(Box::new(Opened {
            header,
            prf,
            algorithm: alg,
            kind: Kind::Normal,
            copy: HeaderCopy::Primary,
        })),
        Err(HeaderError::BadMagic) => Trial::NoMatch,
        Err(e) => Trial::Damaged(e),
    }
}

/// Reads `length` bytes at `offset` of the data area (offset relative to the data area start)
/// and decrypts them; XTS data-unit numbers are absolute sector indexes in the container.
pub fn read_data(
    file: &mut File,
    opened: &Opened,
    offset: u64,
    length: u64,
) -> Result<Vec<u8>, VolumeError> {
    let mut out = Vec::new();
    read_data_to(file, opened, offset, length, &mut out)?;
    Ok(out)
}

/// Like [`read_data`], streaming to `out` in 1 MiB pieces (any length, bounded memory).
pub fn read_data_to<W: std::io::Write>(
    file: &mut File,
    opened: &Opened,
    offset: u64,
    length: u64,
    out: &mut W,
) -> Result<(), VolumeError> {
    const PIECE: u64 = 1 << 20;
    let h = &opened.header;
    let end = offset
        .checked_add(length)
        .filter(|e| *e <= h.data_size)
        .ok_or(VolumeError::OutOfRange {
            offset,
            length,
            data_size: h.data_size,
        })?;
    let unit = crate::cipher::UNIT as u64;
    let cipher = opened.cipher();
    let mut buf = vec![0u8; PIECE as usize];
    let mut at = offset;
    while at < end {
        let first = at / unit * unit;
        let last = end.min(first + PIECE).div_ceil(unit) * unit;
        let piece = &mut buf[..(last - first) as usize];
        let host = h.data_offset + first;
        file.seek(SeekFrom::Start(host))
            .and_then(|_| file.read_exact(piece))
            .map_err(VolumeError::Read)?;
        cipher.decrypt(piece, host / unit);
        let skip = (at - first) as usize;
        let take = (end.min(last) - at) as usize;
        out.write_all(&piece[skip..skip + take])
            .map_err(VolumeError::Read)?;
        at += take as u64;
    }
    Ok(())
}

/// Opens the volume file at `path` for reading and writing, exclusively: on Windows with no
/// sharing (so a volume vcdirect has mounted, or that another program has open, is refused),
/// and everywhere with an exclusive advisory lock (`flock` on Unix, `LockFileEx` on Windows),
/// held until the file is closed: another program that locks the file is seen, programs that
/// take no lock are not (on Unix). A file in use is a one-line error. Used by `add-hidden`.
pub fn open_exclusive(path: &Path) -> Result<File, VolumeError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true);
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        options.share_mode(0);
    }
    let in_use = || VolumeError::InUse(path.display().to_string());
    let file = match options.open(path) {
        Ok(f) => f,
        // ERROR_SHARING_VIOLATION: mounted by vcdirect, or open in another program.
        #[cfg(windows)]
        Err(e) if e.raw_os_error() == Some(32) => return Err(in_use()),
        Err(e) => return Err(VolumeError::io(path, e)),
    };
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => Ok(file),
        Err(fs4::TryLockError::WouldBlock) => Err(in_use()),
        Err(fs4::TryLockError::Error(e)) => Err(VolumeError::io(path, e)),
    }
}

/// A volume's data area seen decrypted, as a file system sees it once the volume is mounted:
/// `Read`, `Write` and `Seek` over `size` bytes, encrypting under the volume's master key with
/// the absolute XTS data-unit numbers (host offset / 512). Partial sectors are read, changed
/// and written back whole. What a FAT crate formats, reads and writes through (`fat`).
pub struct DataArea<'a, F: Read + std::io::Write + Seek> {
    host: &'a mut F,
    cipher: Box<vcdirect::crypto::VolumeCipher>,
    start: u64,
    size: u64,
    pos: u64,
}

impl<'a, F: Read + std::io::Write + Seek> DataArea<'a, F> {
    /// The data area of `size` bytes at host byte `start`, under `algorithm` and `master_key`.
    pub fn new(
        host: &'a mut F,
        algorithm: Algorithm,
        master_key: &[u8; crate::header::KEY_AREA_SIZE],
        start: u64,
        size: u64,
    ) -> Self {
        let cipher = Box::new(vcdirect::crypto::VolumeCipher::new(
            algorithm,
            &master_key[..algorithm.key_len()],
        ));
        DataArea {
            host,
            cipher,
            start,
            size,
            pos: 0,
        }
    }

    /// The data area of an opened volume.
    pub fn of(host: &'a mut F, opened: &Opened) -> Self {
        let h = &opened.header;
        DataArea::new(
            host,
            opened.algorithm,
            &h.master_key,
            h.data_offset,
            h.data_size,
        )
    }

    /// Bytes in the data area.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Reads and decrypts whole sectors at data-area offset `at` (sector aligned) into `buf`.
    fn read_sectors(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let host = self.start + at;
        self.host.seek(SeekFrom::Start(host))?;
        self.host.read_exact(buf)?;
        self.cipher.decrypt(buf, host / 512);
        Ok(())
    }

    /// Encrypts `buf` (whole sectors) and writes it at data-area offset `at` (sector aligned).
    fn write_sectors(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let host = self.start + at;
        self.cipher.encrypt(buf, host / 512);
        self.host.seek(SeekFrom::Start(host))?;
        self.host.write_all(buf)
    }

    /// The sector-aligned span around `len` bytes at the current position (bounded by the
    /// data area and by 1 MiB per call).
    fn span(&self, len: usize) -> (u64, u64, usize) {
        const MOST: u64 = 1 << 20;
        let end = self.size.min(self.pos + (len as u64).min(MOST));
        let first = self.pos / 512 * 512;
        let last = end.div_ceil(512) * 512;
        (first, last, (end - self.pos) as usize)
    }
}

impl<F: Read + std::io::Write + Seek> Read for DataArea<'_, F> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.size || out.is_empty() {
            return Ok(0);
        }
        let (first, last, n) = self.span(out.len());
        let mut buf = Zeroizing::new(vec![0u8; (last - first) as usize]);
        self.read_sectors(first, &mut buf)?;
        let skip = (self.pos - first) as usize;
        out[..n].copy_from_slice(&buf[skip..skip + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl<F: Read + std::io::Write + Seek> std::io::Write for DataArea<'_, F> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        if self.pos >= self.size {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WriteZero,
                "write past the end of the data area",
            ));
        }
        let (first, last, n) = self.span(data.len());
        let mut buf = Zeroizing::new(vec![0u8; (last - first) as usize]);
        let skip = (self.pos - first) as usize;
        // Whole sectors only: keep the bytes of a partly written first or last sector.
        if skip != 0 || n != buf.len() {
            self.read_sectors(first, &mut buf)?;
        }
        buf[skip..skip + n].copy_from_slice(&data[..n]);
        self.write_sectors(first, &mut buf)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.host.flush()
    }
}

impl<F: Read + std::io::Write + Seek> Seek for DataArea<'_, F> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match target {
            Some(n) => {
                self.pos = n;
                Ok(n)
            }
            None => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the start of the data area",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::create::{create, CreateSpec, Fill, VolumeSpec};

    /// Opens `path` with password `pw`, PRF `prf` (None: all), PIM 1, and a notice after
    /// `after`; returns whether it opened and the notice's lines.
    fn open_noticed(
        path: &Path,
        pw: &[u8],
        prf: Option<Prf>,
        after: Duration,
    ) -> (bool, Vec<String>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let notice = PrfNotice {
            after,
            say: Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_string())),
        };
        let creds = Credentials {
            password: Zeroizing::new(pw.to_vec()),
            prf,
            pim: 1,
            keyfiles: Vec::new(),
        };
        let opened = with_prf_notice(Some(notice), || open(path, &creds, Kind::Normal)).is_ok();
        let lines = lines.lock().unwrap().clone();
        (opened, lines)
    }

    #[test]
    fn a_slow_open_names_each_prf_it_tries_after_the_notice_time() {
        let path = std::env::temp_dir().join(format!("vcctl-notice-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let spec = CreateSpec {
            size: 512 << 10,
            outer: VolumeSpec {
                password: Zeroizing::new(b"p".to_vec()),
                prf: Prf::Sha256,
                pim: 1,
            },
            hidden: None,
            fill: Fill::Random,
            algorithm: crate::cipher::AES,
            hidden_algorithm: None,
            filesystem: crate::create::Filesystem::None,
        };
        create(&path, &spec).unwrap();
        // The clock's seam: a notice time of 0 makes every open "slow".
        let now = Duration::ZERO;
        // The right password: SHA-512 and SHA-256 start together (VeraCrypt's order, one
        // thread per CPU, at least two here); SHA-256 opens, and no PRF is named twice.
        let (opened, lines) = open_noticed(&path, b"p", None, now);
        assert!(opened);
        let named = |prf: &str, lines: &[String]| {
            lines
                .iter()
                .filter(|l| {
                    l.starts_with(&format!("trying PRF {prf} on the primary header, AES ("))
                })
                .count()
        };
        assert_eq!(named("sha256", &lines), 1, "{lines:?}");
        assert!(lines.iter().all(|l| l.ends_with(" s so far)")), "{lines:?}");
        // A wrong password: every PRF on both header copies, AES first, then the others.
        let (opened, lines) = open_noticed(&path, b"wrong", None, now);
        assert!(!opened);
        assert_eq!(lines.len(), 4 * Prf::ALL.len(), "{lines:?}");
        for prf in Prf::ALL {
            for what in [
                "the primary header, AES",
                "the backup header, AES",
                "the primary header, the other ciphers",
                "the backup header, the other ciphers",
            ] {
                let want = format!("trying PRF {} on {what} (", prf.name());
                assert_eq!(
                    lines.iter().filter(|l| l.starts_with(&want)).count(),
                    1,
                    "{want} in {lines:?}"
                );
            }
        }
        // Opens quicker than the notice time, and opens that try one PRF, say nothing.
        let hour = Duration::from_secs(3600);
        assert_eq!(open_noticed(&path, b"wrong", None, hour), (false, vec![]));
        assert_eq!(
            open_noticed(&path, b"wrong", Some(Prf::Sha256), now),
            (false, vec![])
        );
        // Nothing outside `with_prf_notice`.
        let creds = Credentials {
            password: Zeroizing::new(b"p".to_vec()),
            prf: None,
            pim: 1,
            keyfiles: Vec::new(),
        };
        assert!(PRF_NOTICE.with(|n| n.borrow().is_none()));
        assert!(open(&path, &creds, Kind::Normal).is_ok());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn streamed_reads_across_piece_boundaries_match_whole_reads() {
        let path = std::env::temp_dir().join(format!("vcctl-stream-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let spec = CreateSpec {
            size: 3 << 20,
            outer: VolumeSpec {
                password: Zeroizing::new(b"p".to_vec()),
                prf: Prf::Sha256,
                pim: 1,
            },
            hidden: None,
            fill: Fill::Random,
            algorithm: crate::cipher::AES,
            hidden_algorithm: None,
            filesystem: crate::create::Filesystem::None,
        };
        create(&path, &spec).unwrap();
        let creds = Credentials {
            password: Zeroizing::new(b"p".to_vec()),
            prf: Some(Prf::Sha256),
            pim: 1,
            keyfiles: Vec::new(),
        };
        let mut f = File::open(&path).unwrap();
        let v = open_file(&mut f, &creds, Kind::Normal).unwrap();
        let size = v.header.data_size;
        let all = read_data(&mut f, &v, 0, size).unwrap();
        assert_eq!(all.len() as u64, size);
        for (off, len) in [
            (1, 3 << 19),
            ((1 << 20) - 7, 100),
            (size - 513, 513),
            (0, 0),
        ] {
            let part = read_data(&mut f, &v, off, len).unwrap();
            assert_eq!(&part[..], &all[off as usize..(off + len) as usize]);
        }
        let _ = std::fs::remove_file(&path);
    }
}
