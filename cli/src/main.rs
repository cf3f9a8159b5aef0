//! vcctl: the command-line tool for VeraCrypt volumes and the vcdirect driver.
//!
//! Every failure prints one line to stderr and exits with code 2.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use zeroize::Zeroizing;

use vcctl::backup;
use vcctl::cipher::{Algorithm, ALGORITHMS};
use vcctl::create::{self, CreateSpec, Fill, VolumeSpec};
use vcctl::driver;
use vcctl::kdf::Prf;
use vcctl::volume::{self, Credentials, Kind};

#[derive(Parser)]
#[command(
    name = "vcctl",
    version,
    about = "VeraCrypt volumes and the vcdirect driver"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Work with volume files (any OS).
    #[command(subcommand)]
    Volume(VolumeCommand),
    /// Mount a volume through the driver (Windows).
    Mount {
        /// Host path: a raw partition/drive (\\?\GLOBALROOT\Device\...) or a container file.
        host: String,
        #[command(flatten)]
        open: OpenArgs,
        /// Drive letter to assign.
        #[arg(long)]
        letter: Option<char>,
        /// Mount read-only.
        #[arg(long)]
        read_only: bool,
        /// Open the host shared instead of exclusive.
        #[arg(long)]
        shared: bool,
        /// Protect the hidden volume (its password is the second stdin line).
        #[arg(long)]
        protect_hidden: bool,
        #[command(flatten)]
        hidden_open: HiddenArgs,
        /// Wine test build of the driver only: the test disk driver's name.
        #[arg(long, hide = true)]
        wine_host_driver_name: Option<String>,
        /// No notice on stderr of which PRF a slow open is trying.
        #[arg(long)]
        quiet: bool,
    },
    /// Dismount a volume (Windows): the filesystem on it is locked and dismounted first;
    /// refused while files are open on it unless --force.
    Dismount {
        /// Drive letter (V: or V) or volume number.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        volume: Option<String>,
        /// Dismount every mounted volume.
        #[arg(long)]
        all: bool,
        /// Dismount even if files are open (they are closed under the applications).
        #[arg(long)]
        force: bool,
    },
    /// List mounted volumes (Windows).
    List,
    /// Status of a mounted volume as JSON (Windows).
    Status {
        /// Drive letter (V: or V) or volume number.
        volume: String,
    },
    /// Driver gates (Windows).
    Gates {
        #[command(subcommand)]
        op: GatesOp,
    },
    /// Erase the keys of every mounted volume (Windows).
    EraseKeys,
}

#[derive(Subcommand)]
enum GatesOp {
    /// Print the gates the driver has loaded.
    Get,
    /// Set the gates the driver uses for volumes mounted from now on.
    Set {
        /// Direct-path read gate (0 or 1).
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..=1), value_name = "0|1")]
        read: Option<u8>,
        /// Direct-path write gate (0 or 1).
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..=1), value_name = "0|1")]
        write: Option<u8>,
    },
    /// Make the driver re-read the gates from the registry.
    Reload,
}

#[derive(Subcommand)]
enum VolumeCommand {
    /// Open a volume and print its header facts as JSON.
    Inspect {
        /// The volume file.
        file: PathBuf,
        #[command(flatten)]
        open: OpenArgs,
        /// No notice on stderr of which PRF a slow open is trying.
        #[arg(long)]
        quiet: bool,
    },
    /// Print decrypted bytes of the data area.
    Read {
        /// The volume file.
        file: PathBuf,
        /// Offset relative to the data area start.
        #[arg(long)]
        offset: u64,
        /// Bytes to read.
        #[arg(long)]
        length: u64,
        #[command(flatten)]
        open: OpenArgs,
        /// No notice on stderr of which PRF a slow open is trying.
        #[arg(long)]
        quiet: bool,
    },
    /// Back up the volume's headers to FILE (two slots: normal, then hidden or random).
    BackupHeader {
        /// The volume file.
        volume: PathBuf,
        /// The backup file to write (must not exist).
        out: PathBuf,
        #[command(flatten)]
        open: OpenArgs,
        /// Also back up the hidden volume's header (its password: second stdin line).
        #[arg(long)]
        with_hidden: bool,
        #[command(flatten)]
        hidden_open: HiddenArgs,
        /// No notice on stderr of which PRF a slow open is trying.
        #[arg(long)]
        quiet: bool,
    },
    /// Restore a header from the embedded backup, or from a backup FILE (--from).
    RestoreHeader {
        /// The volume file.
        volume: PathBuf,
        /// A header backup file (default: the backup header embedded in the volume).
        #[arg(long)]
        from: Option<PathBuf>,
        #[command(flatten)]
        open: OpenArgs,
        /// No notice on stderr of which PRF a slow open is trying.
        #[arg(long)]
        quiet: bool,
    },
    /// Create a VeraCrypt volume file (any of VeraCrypt's ciphers and cascades; AES by default).
    Create {
        /// The file to create (must not exist).
        file: PathBuf,
        /// Total container size in bytes.
        #[arg(long)]
        size: u64,
        /// Also create a hidden volume of this size (its password: second stdin line).
        #[arg(long)]
        hidden_size: Option<u64>,
        /// Header key derivation: a PBKDF2 PRF, or argon2 (Argon2id, VeraCrypt's --hash argon2).
        #[arg(long, value_enum, alias = "hash")]
        prf: PrfArg,
        /// PIM (0: VeraCrypt's default: 500,000 PBKDF2 iterations, or Argon2id's PIM 12;
        /// with argon2 a PIM below 12 needs a password of 20 characters or more).
        #[arg(long, default_value_t = 0)]
        pim: u32,
        /// Keyfile (repeatable, order matters).
        #[arg(long = "keyfile")]
        keyfiles: Vec<PathBuf>,
        /// Read the password(s) from stdin.
        #[arg(long, required = true)]
        password_stdin: bool,
        /// How to fill the data area (zero is refused with --hidden-size).
        #[arg(long, value_enum, default_value_t = FillArg::Random)]
        fill: FillArg,
        /// No progress on stderr while the data area is filled.
        #[arg(long)]
        quiet: bool,
        /// The outer volume's file system, written through its encryption (fat: FAT12, FAT16
        /// or FAT32 by size, as VeraCrypt chooses; none: leave the fill). --hidden-size needs
        /// fat.
        #[arg(long, value_enum, default_value_t = FilesystemArg::Fat)]
        filesystem: FilesystemArg,
        /// Encryption algorithm, as VeraCrypt names it: aes, serpent, twofish, camellia,
        /// kuznyechik, or a cascade such as aes-twofish-serpent.
        #[arg(long, value_parser = parse_cipher, default_value = "aes")]
        cipher: Algorithm,
        /// The hidden volume's encryption algorithm (default: --cipher).
        #[arg(long, value_parser = parse_cipher)]
        hidden_cipher: Option<Algorithm>,
        #[command(flatten)]
        hidden_open: HiddenArgs,
    },
    /// Add a hidden volume after the used clusters of an outer volume's FAT (VeraCrypt's
    /// order: create the outer volume, copy the decoy files in, then add the hidden volume;
    /// from then on mount the outer volume only with --protect-hidden). Passwords: outer on
    /// the first stdin line, hidden on the second.
    AddHidden {
        /// The outer volume file (not mounted, not open elsewhere).
        outer: PathBuf,
        /// The hidden volume's size in bytes (as create's --hidden-size), or max: the largest
        /// that fits after the outer file system's last used cluster (the maximum is printed, in
        /// the JSON or in the refusal).
        #[arg(long, value_name = "N|max")]
        size: HiddenSizeArg,
        /// Required: any hidden volume already in that space is destroyed (nothing can tell
        /// whether there is one).
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        open: OpenArgs,
        /// No progress on stderr while the hidden data area is filled.
        #[arg(long)]
        quiet: bool,
        /// The hidden volume's encryption algorithm, as VeraCrypt names it (default: the
        /// outer volume's).
        #[arg(long, value_parser = parse_cipher)]
        hidden_cipher: Option<Algorithm>,
        #[command(flatten)]
        hidden_open: HiddenArgs,
    },
}

/// `--size N|max` of add-hidden.
#[derive(Clone, Copy)]
enum HiddenSizeArg {
    Max,
    Bytes(u64),
}

impl std::str::FromStr for HiddenSizeArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "max" => Ok(HiddenSizeArg::Max),
            _ => s
                .parse()
                .map(HiddenSizeArg::Bytes)
                .map_err(|_| format!("{s:?} is neither a size in bytes nor max")),
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum FilesystemArg {
    Fat,
    None,
}

#[derive(Clone, Copy, ValueEnum)]
enum PrfArg {
    Sha512,
    Sha256,
    Whirlpool,
    Blake2s,
    Streebog,
    /// Argon2id (VeraCrypt 1.26.25 and later).
    Argon2,
}

impl From<PrfArg> for Prf {
    fn from(p: PrfArg) -> Prf {
        match p {
            PrfArg::Sha512 => Prf::Sha512,
            PrfArg::Sha256 => Prf::Sha256,
            PrfArg::Whirlpool => Prf::Whirlpool,
            PrfArg::Blake2s => Prf::Blake2s,
            PrfArg::Streebog => Prf::Streebog,
            PrfArg::Argon2 => Prf::Argon2,
        }
    }
}

/// `--cipher NAME`: one of VeraCrypt's fifteen algorithms, by VeraCrypt's name.
fn parse_cipher(name: &str) -> Result<Algorithm, String> {
    Algorithm::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = ALGORITHMS.iter().map(|a| a.name()).collect();
        format!("unknown cipher {name:?}; one of: {}", names.join(", "))
    })
}

#[derive(Clone, Copy, ValueEnum)]
enum FillArg {
    Random,
    Zero,
}

#[derive(Args)]
struct OpenArgs {
    /// Read the password from the first line of stdin (an empty line is an empty password).
    #[arg(long)]
    password_stdin: bool,
    /// Header key derivation: a PBKDF2 PRF or argon2 (Argon2id) (default: try all, in
    /// parallel, in VeraCrypt's order, Argon2id last).
    #[arg(long, value_enum, alias = "hash")]
    prf: Option<PrfArg>,
    /// PIM (0: VeraCrypt's default).
    #[arg(long, default_value_t = 0)]
    pim: u32,
    /// Keyfile (repeatable, order matters).
    #[arg(long = "keyfile")]
    keyfiles: Vec<PathBuf>,
    /// Open the hidden volume (header at 65536).
    #[arg(long)]
    hidden: bool,
}

/// The hidden volume's own header parameters (`mount --protect-hidden`, `create
/// --hidden-size`); each defaults to the outer volume's.
#[derive(Args)]
struct HiddenArgs {
    /// PRF or argon2 of the hidden volume's header (default: the outer's --prf).
    #[arg(long, value_enum, alias = "hidden-hash")]
    hidden_prf: Option<PrfArg>,
    /// PIM of the hidden volume's header (default: the outer's --pim).
    #[arg(long)]
    hidden_pim: Option<u32>,
    /// Keyfile of the hidden volume (repeatable, order matters; default: the outer's).
    #[arg(long = "hidden-keyfile")]
    hidden_keyfiles: Vec<PathBuf>,
    /// The hidden volume has no keyfiles, even where the outer volume has some.
    #[arg(long)]
    hidden_no_keyfiles: bool,
}

impl HiddenArgs {
    /// The hidden volume's credentials: its own values where given, else the outer's.
    fn credentials(&self, outer: &Credentials, password: Zeroizing<Vec<u8>>) -> Credentials {
        Credentials {
            password,
            prf: self.hidden_prf.map(Prf::from).or(outer.prf),
            pim: self.hidden_pim.unwrap_or(outer.pim),
            keyfiles: if self.hidden_no_keyfiles {
                Vec::new()
            } else if self.hidden_keyfiles.is_empty() {
                outer.keyfiles.clone()
            } else {
                self.hidden_keyfiles.clone()
            },
        }
    }

    /// Refuses `--hidden-no-keyfiles` with `--hidden-keyfile` (one line, nothing done).
    fn check(&self) -> Result<(), Failure> {
        if self.hidden_no_keyfiles && !self.hidden_keyfiles.is_empty() {
            return Err(Failure(
                "--hidden-no-keyfiles cannot be used with --hidden-keyfile".into(),
            ));
        }
        Ok(())
    }

    fn given(&self) -> bool {
        self.hidden_prf.is_some()
            || self.hidden_pim.is_some()
            || !self.hidden_keyfiles.is_empty()
            || self.hidden_no_keyfiles
    }
}

/// Progress of a long write on stderr (VeraCrypt shows it too): a bar redrawn in place when
/// stderr is a terminal, a line every few seconds otherwise, nothing with `--quiet`.
struct Progress {
    quiet: bool,
    terminal: bool,
    start: std::time::Instant,
    last: Option<std::time::Instant>,
}

impl Progress {
    fn new(quiet: bool) -> Progress {
        use std::io::IsTerminal;
        Progress {
            quiet,
            terminal: std::io::stderr().is_terminal(),
            start: std::time::Instant::now(),
            last: None,
        }
    }

    fn update(&mut self, done: u64, total: u64) {
        if self.quiet {
            return;
        }
        let now = std::time::Instant::now();
        let every = if self.terminal {
            std::time::Duration::from_millis(200)
        } else {
            std::time::Duration::from_secs(5)
        };
        let first = now.duration_since(self.start) >= every;
        let due = self.last.map_or(first, |t| now.duration_since(t) >= every);
        let finished = done >= total && self.last.is_some();
        if !(due || finished) {
            return;
        }
        self.last = Some(now);
        let line = progress_line(done, total, now.duration_since(self.start));
        if self.terminal {
            eprint!("\r{line}{}", if done >= total { "\n" } else { "" });
        } else {
            eprintln!("{line}");
        }
    }
}

/// `vcctl: filled 120.0 MiB of 1.0 GiB (11 %), 230.0 MiB/s, 4 s left`.
fn progress_line(done: u64, total: u64, elapsed: std::time::Duration) -> String {
    const MIB: f64 = 1048576.0;
    let size = |b: u64| {
        if b >= 1 << 30 {
            format!("{:.1} GiB", b as f64 / (MIB * 1024.0))
        } else {
            format!("{:.1} MiB", b as f64 / MIB)
        }
    };
    let secs = elapsed.as_secs_f64().max(1e-3);
    let rate = done as f64 / secs;
    let percent = (done * 100).checked_div(total).unwrap_or(100);
    let left = if rate > 0.0 {
        format!("{:.0} s left", total.saturating_sub(done) as f64 / rate)
    } else {
        "time left unknown".to_string()
    };
    format!(
        "vcctl: filled {} of {} ({percent} %), {:.1} MiB/s, {left}",
        size(done),
        size(total),
        rate / MIB
    )
}

/// How long an open that tries several PRFs runs before it names the ones it tries.
const PRF_NOTICE_AFTER: std::time::Duration = std::time::Duration::from_millis(1500);

/// The PRF notice of a command that opens a volume (VeraCrypt shows its progress too): on
/// stderr once an open has run for [`PRF_NOTICE_AFTER`], none with `--quiet`.
fn prf_notice(quiet: bool) -> Option<volume::PrfNotice> {
    (!quiet).then(|| volume::PrfNotice {
        after: vcctl::faults::prf_notice_after().unwrap_or(PRF_NOTICE_AFTER),
        say: std::sync::Arc::new(|line: &str| eprintln!("vcctl: {line}")),
    })
}

/// A one-line failure.
struct Failure(String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

/// Reads the password lines from stdin (trailing CR/LF removed) into zeroizing storage,
/// unbuffered (W5: see `vcctl::secret`).
fn stdin_lines(n: usize) -> Result<Vec<Zeroizing<Vec<u8>>>, Failure> {
    Ok(vcctl::secret::stdin_lines(n)?)
}

fn credentials(open: &OpenArgs, password: Zeroizing<Vec<u8>>) -> Credentials {
    Credentials {
        password,
        prf: open.prf.map(Prf::from),
        pim: open.pim,
        keyfiles: open.keyfiles.clone(),
    }
}

fn first_password(open: &OpenArgs, lines: usize) -> Result<Vec<Zeroizing<Vec<u8>>>, Failure> {
    if !open.password_stdin {
        return Err(Failure(
            "no password source: pass --password-stdin".to_string(),
        ));
    }
    stdin_lines(lines)
}

fn kind(open: &OpenArgs) -> Kind {
    if open.hidden {
        Kind::Hidden
    } else {
        Kind::Normal
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    let reply = match cli.command {
        Command::Volume(VolumeCommand::Inspect { file, open, quiet }) => {
            let mut pw = first_password(&open, 1)?;
            let creds = credentials(&open, pw.remove(0));
            let v = volume::with_prf_notice(prf_notice(quiet), || {
                volume::open(&file, &creds, kind(&open))
            })?;
            let warnings = v.warnings(&file.display().to_string());
            for w in &warnings {
                eprintln!("vcctl: {w}");
            }
            let json = serde_json::json!({
                "prf": v.prf.name(),
                "cipher": v.algorithm.name(),
                "kind": v.kind.name(),
                "header": v.copy.name(),
                "data_offset": v.header.data_offset,
                "data_size": v.header.data_size,
                "sector_size": v.header.sector_size,
                "volume_size": v.header.volume_size,
                "hidden_volume_size": v.header.hidden_volume_size,
                "header_version": v.header.version,
                "flags": v.header.flags,
                "master_key_vulnerable": v.master_key_vulnerable(),
                "warnings": warnings,
            });
            println!("{json}");
            return Ok(());
        }
        Command::Volume(VolumeCommand::Read {
            file,
            offset,
            length,
            open,
            quiet,
        }) => {
            let mut pw = first_password(&open, 1)?;
            let creds = credentials(&open, pw.remove(0));
            let mut f = std::fs::File::open(&file)
                .map_err(|e| Failure(format!("cannot open {}: {e}", file.display())))?;
            let v = volume::with_prf_notice(prf_notice(quiet), || {
                volume::open_file(&mut f, &creds, kind(&open))
            })?;
            for w in v.warnings(&file.display().to_string()) {
                eprintln!("vcctl: {w}");
            }
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            volume::read_data_to(&mut f, &v, offset, length, &mut out)?;
            out.flush()
                .map_err(|e| Failure(format!("cannot write stdout: {e}")))?;
            return Ok(());
        }
        Command::Volume(VolumeCommand::BackupHeader {
            volume,
            out,
            open,
            with_hidden,
            hidden_open,
            quiet,
        }) => {
            if open.hidden {
                return Err(Failure(
                    "backup-header takes the outer password; use --with-hidden for the hidden header".into(),
                ));
            }
            hidden_open.check()?;
            if !with_hidden && hidden_open.given() {
                return Err(Failure(
                    "--hidden-prf/--hidden-pim/--hidden-keyfile/--hidden-no-keyfiles need --with-hidden".into(),
                ));
            }
            let mut pw = first_password(&open, if with_hidden { 2 } else { 1 })?;
            let creds = credentials(&open, pw.remove(0));
            let hidden = with_hidden.then(|| hidden_open.credentials(&creds, pw.remove(0)));
            volume::with_prf_notice(prf_notice(quiet), || {
                backup::backup(&volume, &out, &creds, hidden.as_ref())
            })?;
            println!(
                "{}",
                serde_json::json!({ "backup": out.display().to_string(), "hidden": with_hidden })
            );
            return Ok(());
        }
        Command::Volume(VolumeCommand::RestoreHeader {
            volume,
            from,
            open,
            quiet,
        }) => {
            let mut pw = first_password(&open, 1)?;
            let creds = credentials(&open, pw.remove(0));
            let source = match &from {
                Some(p) => backup::Source::File(p),
                None => backup::Source::Embedded,
            };
            let written = volume::with_prf_notice(prf_notice(quiet), || {
                backup::restore(&volume, source, &creds, kind(&open))
            })?;
            println!(
                "{}",
                serde_json::json!({ "restored": kind(&open).name(), "written_at": written })
            );
            return Ok(());
        }
        Command::Volume(VolumeCommand::Create {
            file,
            size,
            hidden_size,
            prf,
            pim,
            keyfiles,
            password_stdin,
            fill,
            quiet,
            filesystem,
            cipher,
            hidden_cipher,
            hidden_open,
        }) => {
            debug_assert!(password_stdin);
            hidden_open.check()?;
            if hidden_size.is_none() && hidden_cipher.is_some() {
                return Err(Failure("--hidden-cipher needs --hidden-size".into()));
            }
            if hidden_size.is_none() && hidden_open.given() {
                return Err(Failure(
                    "--hidden-prf/--hidden-pim/--hidden-keyfile/--hidden-no-keyfiles need --hidden-size".into(),
                ));
            }
            let mut lines = stdin_lines(if hidden_size.is_some() { 2 } else { 1 })?;
            let spec = |creds: &Credentials| -> Result<VolumeSpec, Failure> {
                Ok(VolumeSpec {
                    password: creds.effective_password()?,
                    prf: creds.prf.unwrap_or(prf.into()),
                    pim: creds.pim,
                })
            };
            let outer_creds = Credentials {
                password: lines.remove(0),
                prf: Some(prf.into()),
                pim,
                keyfiles,
            };
            let outer = spec(&outer_creds)?;
            let hidden = match hidden_size {
                Some(h) => {
                    let hc = hidden_open.credentials(&outer_creds, lines.remove(0));
                    Some((h, spec(&hc)?))
                }
                None => None,
            };
            let mut shown = Progress::new(quiet);
            let layout = create::create_with_progress(
                &file,
                &CreateSpec {
                    size,
                    outer,
                    hidden,
                    fill: match fill {
                        FillArg::Random => Fill::Random,
                        FillArg::Zero => Fill::Zero,
                    },
                    algorithm: cipher,
                    hidden_algorithm: hidden_cipher,
                    filesystem: match filesystem {
                        FilesystemArg::Fat => create::Filesystem::Fat,
                        FilesystemArg::None => create::Filesystem::None,
                    },
                },
                &mut |done, total| shown.update(done, total),
            )?;
            let mut json = serde_json::json!({
                "data_offset": layout.outer.0,
                "data_size": layout.outer.1,
            });
            if let Some((o, s)) = layout.hidden {
                json["hidden_data_offset"] = o.into();
                json["hidden_data_size"] = s.into();
            }
            println!("{json}");
            return Ok(());
        }
        Command::Volume(VolumeCommand::AddHidden {
            outer,
            size,
            yes,
            open,
            quiet,
            hidden_cipher,
            hidden_open,
        }) => {
            if !yes {
                return Err(Failure(
                    "add-hidden needs --yes: any hidden volume already in that space is destroyed"
                        .into(),
                ));
            }
            if open.hidden {
                return Err(Failure(
                    "add-hidden opens the outer volume; --hidden does not apply".into(),
                ));
            }
            hidden_open.check()?;
            let mut pw = first_password(&open, 2)?;
            let outer_creds = credentials(&open, pw.remove(0));
            let hidden_creds = hidden_open.credentials(&outer_creds, pw.remove(0));
            let name = outer.display().to_string();
            let mut shown = Progress::new(quiet);
            let (layout, room) = volume::with_prf_notice(prf_notice(quiet), || {
                create::add_hidden(
                    &outer,
                    &outer_creds,
                    match size {
                        HiddenSizeArg::Max => None,
                        HiddenSizeArg::Bytes(n) => Some(n),
                    },
                    &hidden_creds,
                    hidden_cipher,
                    &mut |opened, _| {
                        for w in opened.warnings(&name) {
                            eprintln!("vcctl: {w}");
                        }
                    },
                    &mut |done, total| shown.update(done, total),
                )
            })?;
            let (o, s) = layout.hidden.unwrap_or((0, 0));
            println!(
                "{}",
                serde_json::json!({
                    "outer_filesystem": room.facts.name(),
                    "last_used_cluster": room.facts.last_used_cluster,
                    "used_end": room.facts.used_end(),
                    "max_hidden_size": room.max,
                    "hidden_size": layout.outer.0 + layout.outer.1 - o,
                    "hidden_data_offset": o,
                    "hidden_data_size": s,
                })
            );
            return Ok(());
        }
        Command::Mount {
            host,
            open,
            letter,
            read_only,
            shared,
            protect_hidden,
            hidden_open,
            wine_host_driver_name,
            quiet,
        } => {
            hidden_open.check()?;
            if !protect_hidden && hidden_open.given() {
                return Err(Failure(
                    "--hidden-prf/--hidden-pim/--hidden-keyfile/--hidden-no-keyfiles need --protect-hidden".into(),
                ));
            }
            let lines = if protect_hidden { 2 } else { 1 };
            let mut pw = first_password(&open, lines)?;
            let creds = credentials(&open, pw.remove(0));
            let hidden_creds = if protect_hidden {
                Some(hidden_open.credentials(&creds, pw.remove(0)))
            } else {
                None
            };
            let req = driver::MountArgs {
                host,
                creds,
                kind: kind(&open),
                hidden_creds,
                letter,
                read_only,
                shared,
                wine_host_driver_name,
            };
            volume::with_prf_notice(prf_notice(quiet), || driver::mount(&req))?
        }
        Command::Dismount { volume, all, force } => match volume {
            Some(volume) if !all => driver::dismount(&volume, force)?,
            _ => driver::dismount_all(force)?,
        },
        Command::List => driver::list()?,
        Command::Status { volume } => driver::status(&volume)?,
        Command::Gates { op } => match op {
            GatesOp::Get => driver::gates_get()?,
            GatesOp::Set { read, write } => {
                driver::gates_set(read.map(|r| r == 1), write.map(|w| w == 1))?
            }
            GatesOp::Reload => driver::gates_reload()?,
        },
        Command::EraseKeys => driver::erase_keys()?,
    };
    println!("{reply}");
    Ok(())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout with success; usage errors exit 2 (clap's code).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg)) => {
            eprintln!("vcctl: {msg}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_say_how_much_how_fast_and_how_long() {
        let l = progress_line(120 << 20, 1 << 30, std::time::Duration::from_millis(500));
        assert_eq!(
            l,
            "vcctl: filled 120.0 MiB of 1.0 GiB (11 %), 240.0 MiB/s, 4 s left"
        );
        let done = progress_line(1 << 20, 1 << 20, std::time::Duration::from_secs(1));
        assert!(
            done.contains("(100 %)") && done.contains("0 s left"),
            "{done}"
        );
        // --quiet prints nothing, whatever the progress.
        let mut q = Progress::new(true);
        q.start -= std::time::Duration::from_secs(60);
        q.update(1, 2);
        assert!(q.last.is_none());
    }

    #[test]
    fn protect_hidden_parameters_default_to_the_outers_and_override_each() {
        let parse = |extra: &[&str]| {
            let mut argv = vec![
                "vcctl",
                "mount",
                "H",
                "--password-stdin",
                "--protect-hidden",
            ];
            argv.extend_from_slice(&["--prf", "sha256", "--pim", "5", "--keyfile", "a"]);
            argv.extend_from_slice(extra);
            match Cli::try_parse_from(argv).unwrap().command {
                Command::Mount {
                    open, hidden_open, ..
                } => {
                    let outer = credentials(&open, Zeroizing::new(b"o".to_vec()));
                    hidden_open.credentials(&outer, Zeroizing::new(b"h".to_vec()))
                }
                _ => unreachable!(),
            }
        };
        let same = parse(&[]);
        assert_eq!((same.prf, same.pim), (Some(Prf::Sha256), 5));
        assert_eq!(same.keyfiles, vec![PathBuf::from("a")]);
        let own = parse(&[
            "--hidden-prf",
            "whirlpool",
            "--hidden-pim",
            "0",
            "--hidden-keyfile",
            "b",
            "--hidden-keyfile",
            "c",
        ]);
        assert_eq!((own.prf, own.pim), (Some(Prf::Whirlpool), 0));
        assert_eq!(own.keyfiles, vec![PathBuf::from("b"), PathBuf::from("c")]);
        assert_eq!(&own.password[..], b"h");
        // "None" is a flag, never a keyfile name: the outer's keyfiles are not used.
        let none = parse(&["--hidden-no-keyfiles"]);
        assert!(none.keyfiles.is_empty());
        assert_eq!((none.prf, none.pim), (Some(Prf::Sha256), 5));
        // With a hidden keyfile it is a contradiction (refused before anything is done).
        let mut argv = vec![
            "vcctl",
            "mount",
            "H",
            "--password-stdin",
            "--protect-hidden",
        ];
        argv.extend_from_slice(&["--hidden-no-keyfiles", "--hidden-keyfile", "b"]);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Mount { hidden_open, .. } => assert!(hidden_open.check().is_err()),
            _ => unreachable!(),
        }
    }
}
