//! vcctl: the command-line tool for VeraCrypt volumes and the vcdirect driver.
//!
//! Every failure prints one line to stderr and exits with code 2.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use zeroize::Zeroizing;

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
        /// Wine test build of the driver only: the test disk driver's name.
        #[arg(long, hide = true)]
        wine_host_driver_name: Option<String>,
    },
    /// Dismount a volume (Windows).
    Dismount {
        /// Drive letter (V: or V) or volume number.
        volume: String,
        /// Dismount even if files are open.
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
    },
    /// Create a VeraCrypt volume file (AES-256-XTS).
    Create {
        /// The file to create (must not exist).
        file: PathBuf,
        /// Total container size in bytes.
        #[arg(long)]
        size: u64,
        /// Also create a hidden volume of this size (its password: second stdin line).
        #[arg(long)]
        hidden_size: Option<u64>,
        /// PRF for the header key.
        #[arg(long, value_enum)]
        prf: PrfArg,
        /// PIM (0: VeraCrypt's default 500,000 iterations).
        #[arg(long, default_value_t = 0)]
        pim: u32,
        /// Keyfile (repeatable, order matters).
        #[arg(long = "keyfile")]
        keyfiles: Vec<PathBuf>,
        /// Read the password(s) from stdin.
        #[arg(long, required = true)]
        password_stdin: bool,
        /// How to fill the data area.
        #[arg(long, value_enum, default_value_t = FillArg::Random)]
        fill: FillArg,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum PrfArg {
    Sha512,
    Sha256,
    Whirlpool,
    Blake2s,
    Streebog,
}

impl From<PrfArg> for Prf {
    fn from(p: PrfArg) -> Prf {
        match p {
            PrfArg::Sha512 => Prf::Sha512,
            PrfArg::Sha256 => Prf::Sha256,
            PrfArg::Whirlpool => Prf::Whirlpool,
            PrfArg::Blake2s => Prf::Blake2s,
            PrfArg::Streebog => Prf::Streebog,
        }
    }
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
    /// PRF (default: try all, in parallel).
    #[arg(long, value_enum)]
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
        Command::Volume(VolumeCommand::Inspect { file, open }) => {
            let mut pw = first_password(&open, 1)?;
            let creds = credentials(&open, pw.remove(0));
            let v = volume::open(&file, &creds, kind(&open))?;
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
            });
            println!("{json}");
            return Ok(());
        }
        Command::Volume(VolumeCommand::Read {
            file,
            offset,
            length,
            open,
        }) => {
            let mut pw = first_password(&open, 1)?;
            let creds = credentials(&open, pw.remove(0));
            let mut f = std::fs::File::open(&file)
                .map_err(|e| Failure(format!("cannot open {}: {e}", file.display())))?;
            let v = volume::open_file(&mut f, &creds, kind(&open))?;
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            volume::read_data_to(&mut f, &v, offset, length, &mut out)?;
            out.flush()
                .map_err(|e| Failure(format!("cannot write stdout: {e}")))?;
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
        }) => {
            debug_assert!(password_stdin);
            let mut lines = stdin_lines(if hidden_size.is_some() { 2 } else { 1 })?;
            let spec = |pw: Zeroizing<Vec<u8>>| -> Result<VolumeSpec, Failure> {
                let creds = Credentials {
                    password: pw,
                    prf: Some(prf.into()),
                    pim,
                    keyfiles: keyfiles.clone(),
                };
                Ok(VolumeSpec {
                    password: creds.effective_password()?,
                    prf: prf.into(),
                    pim,
                })
            };
            let outer = spec(lines.remove(0))?;
            let hidden = match hidden_size {
                Some(h) => Some((h, spec(lines.remove(0))?)),
                None => None,
            };
            let layout = create::create(
                &file,
                &CreateSpec {
                    size,
                    outer,
                    hidden,
                    fill: match fill {
                        FillArg::Random => Fill::Random,
                        FillArg::Zero => Fill::Zero,
                    },
                    algorithm: vcctl::cipher::AES,
                },
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
        Command::Mount {
            host,
            open,
            letter,
            read_only,
            shared,
            protect_hidden,
            wine_host_driver_name,
        } => {
            let lines = if protect_hidden { 2 } else { 1 };
            let mut pw = first_password(&open, lines)?;
            let creds = credentials(&open, pw.remove(0));
            let hidden_creds = if protect_hidden {
                Some(credentials(&open, pw.remove(0)))
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
            driver::mount(&req)?
        }
        Command::Dismount { volume, force } => driver::dismount(&volume, force)?,
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
