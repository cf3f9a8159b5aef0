//! The names a mounted volume has in the object namespace (docs/review.md W2).
//!
//! Owns: the volume's names and the mount-manager answers derived from them ([`VolumeNames`]:
//! device name, unique id, suggested link name, which always agree), the check that a drive
//! letter is free everywhere the caller could see it ([`letter_free`]), and the bookkeeping of
//! the links a mount made ([`Links`]): exactly the links it created, each recorded by full
//! path only after it exists and points at this volume's device, removed on every path out by
//! one call ([`Links::remove_all`]) that deletes a link only while it still points at this
//! device. Never: talks to the kernel (the glue implements [`Namespace`] and [`MountManager`]
//! with kernel calls; the tests with a model of global and per-session directories).
//!
//! How a letter is made, as VeraCrypt does by default: the volume arrival notification to the
//! mount manager, then a create-point request for `\DosDevices\X:` (made in the system
//! context, so the link is global); if the mount manager does not make the link, an explicit
//! link under the global directory. A mount without a letter is never announced to the mount
//! manager, so it cannot get one (from the suggested name or a remembered one).

use alloc::vec::Vec;
use core::cell::Cell;

use crate::Status;

pub mod mountmgr;

/// STATUS_OBJECT_NAME_COLLISION: the letter (or link) is in use by someone else.
pub const OBJECT_NAME_COLLISION: Status = Status::Host(0xC000_0035);
/// STATUS_OBJECT_NAME_NOT_FOUND: no such link.
pub const OBJECT_NAME_NOT_FOUND: Status = Status::Host(0xC000_0034);

/// The object namespace, as far as links go. Paths are full object paths in UTF-16
/// (`\GLOBAL??\V:`); a path under the caller's directory (`\??\V:`) is resolved in the
/// calling thread's context (its logon session's directory first, then the global one).
pub trait Namespace {
    /// The target of the symbolic link `path`; `Ok(None)` when there is no such object.
    fn query(&self, path: &[u16]) -> Result<Option<Vec<u16>>, Status>;
    /// Creates the symbolic link `path` to `target`; an existing object of that name is
    /// OBJECT_NAME_COLLISION.
    fn create(&self, path: &[u16], target: &[u16]) -> Result<(), Status>;
    /// Deletes the symbolic link `path`.
    fn delete(&self, path: &[u16]) -> Result<(), Status>;
    /// Waits before a call that failed for want of memory is tried again ([`retried_within`]; the
    /// kernel: KeDelayExecutionThread, [`MEMORY_RETRY_MS`]; PASSIVE_LEVEL only). A model
    /// need not wait.
    fn wait_for_memory(&self) {}
    /// Something [`Links::remove_all`] could not undo (`what`: a link still there, or a
    /// mount-manager request not served), with the last call's status, reported once, after
    /// its tries ([`MemoryBudget`]): the kernel logs it (DbgPrint). A model may record it.
    fn left_behind(&self, what: Leftover, path: &[u16], status: Status) {
        let _ = (what, path, status);
    }
}

/// What [`Links::remove_all`] could not undo ([`Namespace::left_behind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftover {
    /// A link of this mount (its full path) could not be read or deleted: it stays.
    Link,
    /// The mount manager's delete points for `\DosDevices\X:` failed: it may keep the
    /// letter's record.
    DeletePoints,
    /// The mount manager's volume removal notification for the device failed: it keeps the
    /// volume's record.
    Removal,
}

/// How many waits for memory ([`Namespace::wait_for_memory`]) one operation may spend in
/// all: a mount's link making after the arrival, or one [`Links::remove_all`] (its
/// [`MemoryBudget`]). 20 waits, 100 ms apart in the kernel: about 2 s per operation, however
/// many calls it makes; once spent, each further call is made once, with no wait.
pub const MEMORY_WAITS: u32 = 20;
/// The kernel's wait between two tries, in milliseconds.
pub const MEMORY_RETRY_MS: u32 = 100;

/// The waits for memory one operation has left ([`MEMORY_WAITS`] at the start), shared by
/// every call of it that is tried again ([`retried_within`]).
#[derive(Debug)]
pub struct MemoryBudget {
    waits: Cell<u32>,
}

impl MemoryBudget {
    /// A whole budget: [`MEMORY_WAITS`] waits.
    pub const fn new() -> MemoryBudget {
        MemoryBudget {
            waits: Cell::new(MEMORY_WAITS),
        }
    }

    /// Takes one wait; `false` when none is left.
    fn spend(&self) -> bool {
        let left = self.waits.get();
        self.waits.set(left.saturating_sub(1));
        left > 0
    }
}

impl Default for MemoryBudget {
    fn default() -> MemoryBudget {
        MemoryBudget::new()
    }
}

/// `call` again while it fails for want of memory and `budget` has a wait left,
/// `ns.wait_for_memory()` before each new try; its last result. A spent budget makes the
/// call once.
pub fn retried_within<N: Namespace + ?Sized, T>(
    ns: &N,
    budget: &MemoryBudget,
    mut call: impl FnMut() -> Result<T, Status>,
) -> Result<T, Status> {
    loop {
        match call() {
            Err(status) if status.is_out_of_memory() && budget.spend() => ns.wait_for_memory(),
            result => return result,
        }
    }
}

/// [`retried_within`] with a budget of its own: a lone call (the glue's reopen of the mount
/// manager for a removal).
pub fn retried<N: Namespace + ?Sized, T>(
    ns: &N,
    call: impl FnMut() -> Result<T, Status>,
) -> Result<T, Status> {
    retried_within(ns, &MemoryBudget::new(), call)
}

/// The requests the mount manager (`\Device\MountPointManager`) serves for a volume.
pub trait MountManager {
    /// IOCTL_MOUNTMGR_VOLUME_ARRIVAL_NOTIFICATION for the device `device` (the mount manager
    /// then asks the device its MOUNTDEV names and may create the suggested link).
    fn volume_arrival(&self, device: &[u16]) -> Result<(), Status>;
    /// IOCTL_MOUNTMGR_CREATE_POINT: the mount point `link` (`\DosDevices\X:`) for `device`.
    fn create_point(&self, link: &[u16], device: &[u16]) -> Result<(), Status>;
    /// IOCTL_MOUNTMGR_DELETE_POINTS naming only the symbolic link `link` (`\DosDevices\X:`),
    /// as VeraCrypt does (naming the device or unique id would make the mount manager ignore
    /// later arrivals of that id).
    fn delete_point(&self, link: &[u16]) -> Result<(), Status>;
    /// IOCTL_MOUNTMGR_VOLUME_REMOVAL_NOTIFICATION for `device`: the mount manager forgets the
    /// volume (its record and `\GLOBAL??\Volume{GUID}` link). A volume announced by IOCTL
    /// gets no PnP removal, so without it the record outlives the device and a later device of
    /// the same name is taken for the old volume (its arrival is answered from the record).
    fn volume_removal(&self, device: &[u16]) -> Result<(), Status>;
}

/// Where global links live and how the caller's own directory is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Directories {
    /// The global directory, with its trailing backslash (`\GLOBAL??\`).
    pub global: &'static str,
    /// The calling thread's view (`\??\`): its session's directory, then the global one.
    pub caller: &'static str,
}

impl Directories {
    /// Windows: `\GLOBAL??` and the caller's `\??`.
    pub const WINDOWS: Directories = Directories {
        global: "\\GLOBAL??\\",
        caller: "\\??\\",
    };
    /// Wine 8: one `\??` directory for everyone, and no `\GLOBAL??`.
    pub const WINE: Directories = Directories {
        global: "\\??\\",
        caller: "\\??\\",
    };

    /// `name` in the global directory (W6: fallible).
    pub fn global(&self, name: &str) -> Result<Vec<u16>, Status> {
        join(&[self.global, name])
    }

    /// `name` as the caller sees it (W6: fallible).
    pub fn caller(&self, name: &str) -> Result<Vec<u16>, Status> {
        join(&[self.caller, name])
    }
}

/// How a volume's drive letter was made (what `vcctl list` shows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LinkKind {
    /// No letter.
    #[default]
    None,
    /// Through the mount manager (arrival notification, create point).
    MountManager,
    /// An explicit link in the global directory (the mount manager did not make it).
    GlobalLink,
}

impl LinkKind {
    /// Its value in the ABI (`ListEntry`).
    pub const fn to_raw(self) -> u16 {
        match self {
            LinkKind::None => 0,
            LinkKind::MountManager => 1,
            LinkKind::GlobalLink => 2,
        }
    }

    /// From its ABI value; `None` for an unknown one.
    pub const fn from_raw(raw: u16) -> Option<LinkKind> {
        match raw {
            0 => Some(LinkKind::None),
            1 => Some(LinkKind::MountManager),
            2 => Some(LinkKind::GlobalLink),
            _ => None,
        }
    }

    /// Short text for vcctl.
    pub const fn name(self) -> &'static str {
        match self {
            LinkKind::None => "none",
            LinkKind::MountManager => "mount manager",
            LinkKind::GlobalLink => "global link",
        }
    }
}

/// ASCII to UTF-16 (tests and the Wine build's stand-in; the mount path uses [`join`]).
pub fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// `parts` one after the other in UTF-16, in room allocated fallibly (W6): every name the
/// mount path makes goes through it, so a failed allocation is STATUS_INSUFFICIENT_RESOURCES.
pub fn join(parts: &[&str]) -> Result<Vec<u16>, Status> {
    let units = parts.iter().map(|p| p.encode_utf16().count()).sum();
    let mut v = crate::io::try_vec(units)?;
    for p in parts {
        v.extend(p.encode_utf16());
    }
    Ok(v)
}

/// `n` in decimal, written into `digits` (no allocation).
fn decimal(n: u32, digits: &mut [u8; 10]) -> &str {
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    core::str::from_utf8(&digits[at..]).unwrap_or("0")
}

fn letter_name(letter: char) -> [u8; 2] {
    [letter.to_ascii_uppercase() as u8, b':']
}

fn letter_str(letter: &[u8; 2]) -> &str {
    core::str::from_utf8(letter).unwrap_or("?:")
}

/// `\DosDevices\X:`, the name the mount manager and the suggested link use for a letter
/// (W6: fallible).
pub fn dos_letter(letter: char) -> Result<Vec<u16>, Status> {
    let l = letter_name(letter);
    join(&["\\DosDevices\\", letter_str(&l)])
}

/// Bytes of a [`UniqueId`].
pub const UNIQUE_ID_BYTES: usize = 24;

/// The mount manager's unique id of one mounted volume (W2). A mount with a drive letter gets
/// the id of that letter, `vcdirect-volume-X` padded with zeros, the same at every mount on X
/// (VeraCrypt's approach, a fixed prefix and the letter): the mount manager keeps one
/// `\??\Volume{GUID}` entry in its database (HKLM\SYSTEM\MountedDevices) per unique id it
/// has seen, and a delete-points request naming `\DosDevices\X:` removes only the letter's,
/// so fresh ids left one entry behind per mount; per letter there are at most 26, and after a
/// crash while mounted the letter stays bound to an id that returns with the next mount on it.
/// A mount without a letter is never announced to the mount manager and gets `vcdirect` and
/// 16 bytes drawn fresh (the glue takes them from ExUuidCreate), so two of them never share an
/// id. Never derived from the slot number (a later volume in the same `\Device\VcVolume<N>`
/// would inherit a letter the mount manager remembers for that id) nor from key material.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UniqueId([u8; UNIQUE_ID_BYTES]);

impl UniqueId {
    /// The id for a mount without a letter whose fresh 16 bytes are `nonce`.
    pub fn new(nonce: [u8; 16]) -> UniqueId {
        let mut id = [0u8; UNIQUE_ID_BYTES];
        id[..8].copy_from_slice(b"vcdirect");
        id[8..].copy_from_slice(&nonce);
        UniqueId(id)
    }

    /// The id of every mount on drive letter `letter` (`A`..=`Z`, either case).
    pub fn for_letter(letter: char) -> UniqueId {
        let mut id = [0u8; UNIQUE_ID_BYTES];
        id[..16].copy_from_slice(b"vcdirect-volume-");
        id[16] = letter_name(letter)[0];
        UniqueId(id)
    }

    /// The id for a mount: its letter's, or the fresh one from `nonce` without a letter, or
    /// when `live` says a mounted volume answers the letter's id already (one the user moved
    /// from that letter to another with mountvol): one id never belongs to two live volumes.
    pub fn for_mount(
        letter: Option<char>,
        live: impl FnOnce(&UniqueId) -> bool,
        nonce: impl FnOnce() -> Result<[u8; 16], Status>,
    ) -> Result<UniqueId, Status> {
        match letter.map(UniqueId::for_letter) {
            Some(id) if !live(&id) => Ok(id),
            _ => nonce().map(UniqueId::new),
        }
    }

    /// Its bytes (the MOUNTDEV_UNIQUE_ID payload).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// How many first volume ids [`first_volume_id`] picks from: ids stay below 2^31, with 2^30
/// mounts per driver load before they could wrap.
pub const VOLUME_ID_SPAN: u32 = 1 << 30;

/// W2: the first volume id of a driver load, from 16 bytes drawn fresh at DriverEntry (the
/// glue takes them from ExUuidCreate), in `1..=VOLUME_ID_SPAN`. Ids that restarted at 1 on
/// every load would reuse `\Device\VcVolume<N>` names across loads, and the mount manager
/// (which answers a known name's arrival from its record) could take a new volume for an old
/// one; a load starting at a fresh point does not meet the previous load's names.
pub fn first_volume_id(seed: [u8; 16]) -> u32 {
    let folded = seed.chunks_exact(4).fold(0u32, |acc, c| {
        acc.rotate_left(7) ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]])
    });
    folded % VOLUME_ID_SPAN + 1
}

/// The names of one mounted volume and the MOUNTDEV answers built from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeNames {
    id: u32,
    device: Vec<u16>,
    letter: Option<char>,
    /// `\DosDevices\X:` for a mount with a letter, made with the names.
    dos: Option<Vec<u16>>,
    unique_id: UniqueId,
}

impl VolumeNames {
    /// The names of volume `id` (`\Device\VcVolume<id>`), its letter if any, its unique id.
    /// Allocated fallibly (W6): STATUS_INSUFFICIENT_RESOURCES when they cannot be.
    pub fn new(id: u32, letter: Option<char>, unique_id: UniqueId) -> Result<VolumeNames, Status> {
        let mut digits = [0u8; 10];
        let device = join(&["\\Device\\VcVolume", decimal(id, &mut digits)])?;
        let letter = letter.map(|c| c.to_ascii_uppercase());
        let dos = letter.map(dos_letter).transpose()?;
        Ok(VolumeNames {
            id,
            device,
            letter,
            dos,
            unique_id,
        })
    }

    /// IOCTL_MOUNTDEV_QUERY_DEVICE_NAME: `\Device\VcVolume<id>`.
    pub fn device_name(&self) -> &[u16] {
        &self.device
    }

    /// IOCTL_MOUNTDEV_QUERY_UNIQUE_ID.
    pub fn unique_id(&self) -> &[u8] {
        self.unique_id.as_bytes()
    }

    /// IOCTL_MOUNTDEV_QUERY_SUGGESTED_LINK_NAME: `\DosDevices\X:` for a mount with a letter;
    /// `None` (STATUS_NOT_FOUND) without one.
    pub fn suggested_link_name(&self) -> Option<&[u16]> {
        self.dos.as_deref()
    }

    /// The drive letter asked for.
    pub fn letter(&self) -> Option<char> {
        self.letter
    }

    /// The `VcVolume<id>` link name (global), which vcctl and the tests open as
    /// `\\.\VcVolume<id>` (W6: fallible).
    fn device_link(&self, dirs: &Directories) -> Result<Vec<u16>, Status> {
        let mut digits = [0u8; 10];
        join(&[dirs.global, "VcVolume", decimal(self.id, &mut digits)])
    }
}

/// Refuses `letter` (OBJECT_NAME_COLLISION) when a link or object of that name exists in the
/// global directory or in the caller's view (its logon session's directory). Called before
/// anything of a mount is created, in the caller's thread.
pub fn letter_free<N: Namespace + ?Sized>(
    ns: &N,
    dirs: &Directories,
    letter: char,
) -> Result<(), Status> {
    let l = letter_name(letter);
    let (global, caller) = (dirs.global(letter_str(&l))?, dirs.caller(letter_str(&l))?);
    none_exists(ns, &[&global, &caller])
}

/// OBJECT_NAME_COLLISION when any of `paths` exists.
fn none_exists<N: Namespace + ?Sized>(ns: &N, paths: &[&[u16]]) -> Result<(), Status> {
    for path in paths {
        if ns.query(path)?.is_some() {
            return Err(OBJECT_NAME_COLLISION);
        }
    }
    Ok(())
}

/// Whether the mount manager took a request. One policy for every failure of the mount
/// manager, out of memory included (W2, W6): refused, or a request that could not be built
/// or served for want of memory (after [`retried_within`]), is `false` and the letter becomes an
/// explicit global link, as when the mount manager cannot be opened at all; so a failure
/// after the mount manager was told of the arrival never undoes an announced mount.
fn accepted(r: Result<(), Status>) -> bool {
    r.is_ok()
}

/// One link a mount created.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Created {
    /// Full path of the link.
    path: Vec<u16>,
    /// `Some(\DosDevices\X:)` when the mount manager made it (removed through it first).
    mount_point: Option<Vec<u16>>,
}

/// The links one mount created, and only those.
///
/// # Invariants
/// Every entry was recorded after the link existed and pointed at `device`; nothing else is
/// ever recorded, so [`Links::remove_all`] can never delete a link someone else made.
#[derive(Debug, Default)]
pub struct Links {
    device: Vec<u16>,
    created: Vec<Created>,
    kind: LinkKind,
    /// The mount manager accepted the arrival notification: `remove_all` sends the removal.
    arrived: bool,
}

/// Every name a mount's links need and the room for their records, made before the volume
/// device is published ([`Links::prepare`]), so that [`PreparedLinks::establish`] allocates
/// nothing in this crate: it only asks the namespace and the mount manager (W6).
#[derive(Debug)]
pub struct PreparedLinks {
    links: Links,
    device_link: Vec<u16>,
    letter: Option<LetterPaths>,
}

/// A letter's paths: global (`\GLOBAL??\X:`), the caller's view (`\??\X:`), the mount
/// manager's (`\DosDevices\X:`).
#[derive(Debug)]
struct LetterPaths {
    global: Vec<u16>,
    caller: Vec<u16>,
    dos: Vec<u16>,
}

impl Links {
    /// Makes every name [`PreparedLinks::establish`] uses (the device's, `VcVolume<id>`'s, the
    /// letter's three) and the room for both records, all fallibly (W6:
    /// STATUS_INSUFFICIENT_RESOURCES, nothing made, nothing asked of the namespace).
    pub fn prepare(dirs: &Directories, names: &VolumeNames) -> Result<PreparedLinks, Status> {
        let mut device = crate::io::try_vec(names.device_name().len())?;
        device.extend_from_slice(names.device_name());
        let created = crate::io::try_vec(2)?;
        let device_link = names.device_link(dirs)?;
        let letter = match names.letter() {
            None => None,
            Some(letter) => {
                let l = letter_name(letter);
                Some(LetterPaths {
                    global: dirs.global(letter_str(&l))?,
                    caller: dirs.caller(letter_str(&l))?,
                    dos: dos_letter(letter)?,
                })
            }
        };
        Ok(PreparedLinks {
            links: Links {
                device,
                created,
                kind: LinkKind::None,
                arrived: false,
            },
            device_link,
            letter,
        })
    }

    /// [`Links::prepare`], then [`PreparedLinks::establish`] (one call, for the tests).
    pub fn establish<N: Namespace + ?Sized, M: MountManager + ?Sized>(
        ns: &N,
        mount_manager: Option<&M>,
        dirs: &Directories,
        names: &VolumeNames,
    ) -> Result<Links, Status> {
        Links::prepare(dirs, names)?.establish(ns, mount_manager)
    }
}

/// A failed [`PreparedLinks::establish_or_hand_back`].
#[derive(Debug)]
pub struct Failed {
    /// Why the links could not be made.
    pub status: Status,
    /// `Some` when the mount manager had accepted the volume's arrival: the links made so far,
    /// not removed yet, for the caller's undo (`crate::dismount::undo_failed_publish`), which
    /// removes them first (with the mount manager's removal notification), then dismounts
    /// whatever file system mounted meanwhile. Handed back only after the arrival, so their
    /// `announced()` is always true (the glue keeps the mount manager for them by it).
    pub announced: Option<Links>,
}

impl PreparedLinks {
    /// Creates the volume's links: `VcVolume<id>` in the global directory, and its letter if
    /// it has one (through `mount_manager` when given, else, or when the mount manager does
    /// not make it, as an explicit global link). On failure every link made so far is
    /// removed and nothing else is touched. Allocates nothing in this crate (the names and
    /// the records' room were made by [`Links::prepare`]); what the kernel's namespace and
    /// mount manager allocate for their calls is fallible: before the arrival such a failure
    /// fails this call, from the arrival on it is tried again ([`retried_within`]) and a mount
    /// manager that still cannot serve a request is a refusal (a global link).
    pub fn establish<N: Namespace + ?Sized, M: MountManager + ?Sized>(
        self,
        ns: &N,
        mount_manager: Option<&M>,
    ) -> Result<Links, Status> {
        self.establish_or_hand_back(ns, mount_manager)
            .map_err(|failed| {
                if let Some(mut links) = failed.announced {
                    links.remove_all(ns, mount_manager);
                }
                failed.status
            })
    }

    /// [`PreparedLinks::establish`], except that a failure after the mount manager accepted
    /// the arrival hands the links back unremoved ([`Failed::announced`]), for the caller's
    /// undo (`crate::dismount::undo_failed_publish`) to remove as its first step.
    pub fn establish_or_hand_back<N: Namespace + ?Sized, M: MountManager + ?Sized>(
        self,
        ns: &N,
        mount_manager: Option<&M>,
    ) -> Result<Links, Failed> {
        let PreparedLinks {
            mut links,
            device_link,
            letter,
        } = self;
        match links.make(ns, mount_manager, device_link, letter) {
            Ok(()) => Ok(links),
            Err(status) if links.arrived => Err(Failed {
                status,
                announced: Some(links),
            }),
            Err(status) => {
                links.remove_all(ns, mount_manager);
                Err(Failed {
                    status,
                    announced: None,
                })
            }
        }
    }
}

impl Links {
    fn points_here<N: Namespace + ?Sized>(&self, ns: &N, path: &[u16]) -> Result<bool, Status> {
        Ok(ns.query(path)?.as_deref() == Some(&self.device[..]))
    }

    /// Records a link that exists and points here (room for both records reserved by
    /// `prepare`, so it cannot allocate or fail after the link was made).
    fn record(&mut self, path: Vec<u16>, mount_point: Option<Vec<u16>>) {
        self.created.push(Created { path, mount_point });
    }

    fn make<N: Namespace + ?Sized, M: MountManager + ?Sized>(
        &mut self,
        ns: &N,
        mount_manager: Option<&M>,
        device_link: Vec<u16>,
        letter: Option<LetterPaths>,
    ) -> Result<(), Status> {
        ns.create(&device_link, &self.device)?;
        self.record(device_link, None);
        let Some(LetterPaths {
            global,
            caller,
            dos,
        }) = letter
        else {
            return Ok(());
        };
        // Checked again here: nothing of ours holds the letter yet, so any link is another's.
        none_exists(ns, &[&global, &caller])?;
        if let Some(mm) = mount_manager {
            // The mount manager may make the letter on arrival (the suggested name); else the
            // create point does. Either way it is ours only if it points at our device. From
            // the arrival on, a call out of memory is tried again, all of them within one
            // budget (`retried_within`, about 2 s in all): an announced mount that fails has to
            // be undone (`crate::dismount::undo_failed_publish`), so it should not.
            let budget = MemoryBudget::new();
            self.arrived = accepted(retried_within(ns, &budget, || {
                mm.volume_arrival(&self.device)
            }));
            let made = self.arrived
                && (retried_within(ns, &budget, || self.points_here(ns, &global))? || {
                    // Whatever the create point answers (a failure after the mount manager
                    // made the link, a retry of one that did, which answers a collision),
                    // the link is what says whether it made the letter for this device.
                    let _ = retried_within(ns, &budget, || mm.create_point(&dos, &self.device));
                    retried_within(ns, &budget, || self.points_here(ns, &global))?
                });
            if made {
                self.kind = LinkKind::MountManager;
                self.record(global, Some(dos));
                return Ok(());
            }
            if retried_within(ns, &budget, || ns.query(&global))?.is_some() {
                // Someone else's link took the letter meanwhile: theirs stays.
                return Err(OBJECT_NAME_COLLISION);
            }
            if self.arrived {
                retried_within(ns, &budget, || ns.create(&global, &self.device))?;
            } else {
                ns.create(&global, &self.device)?;
            }
        } else {
            ns.create(&global, &self.device)?;
        }
        self.kind = LinkKind::GlobalLink;
        self.record(global, None);
        Ok(())
    }

    /// How the letter was made ([`LinkKind::None`] without one).
    pub fn kind(&self) -> LinkKind {
        self.kind
    }

    /// The mount manager accepted this volume's arrival ([`Links::remove_all`] needs it then,
    /// also when the letter fell back to a global link).
    pub fn announced(&self) -> bool {
        self.arrived
    }

    /// The full paths of the links this mount created, in creation order.
    pub fn paths(&self) -> impl Iterator<Item = &[u16]> {
        self.created.iter().map(|c| &c.path[..])
    }

    /// Generic over the namespace and the mount manager (not `dyn`), so the kernel build calls
    /// them directly: the W13 stack check follows every indirect call into each vtable entry at
    /// that offset, which reached unrelated code from here.
    ///
    /// Removes every link this mount created, newest first, each by its full path and only
    /// while it still points at this volume's device (a letter the mount manager made goes
    /// through its delete-points request first, then the link itself if it is still there,
    /// as VeraCrypt does). Then, when the mount manager accepted the arrival (whichever way
    /// the letter was made), its volume removal notification, so it forgets the device before
    /// the device is deleted. Idempotent: afterwards nothing is recorded. Works from any thread
    /// context: every recorded path is global.
    pub fn remove_all<N: Namespace + ?Sized, M: MountManager + ?Sized>(
        &mut self,
        ns: &N,
        mount_manager: Option<&M>,
    ) {
        // One budget for the whole removal (about 2 s of waits in all, not per call).
        let budget = MemoryBudget::new();
        while let Some(c) = self.created.pop() {
            if let (Some(dos), Some(mm)) = (&c.mount_point, mount_manager) {
                if let Err(status) = retried_within(ns, &budget, || mm.delete_point(dos)) {
                    ns.left_behind(Leftover::DeletePoints, dos, status);
                }
            }
            let removed = match retried_within(ns, &budget, || self.points_here(ns, &c.path)) {
                Ok(false) => Ok(()),
                Ok(true) => retried_within(ns, &budget, || ns.delete(&c.path)),
                Err(status) => Err(status),
            };
            if let Err(status) = removed {
                ns.left_behind(Leftover::Link, &c.path, status);
            }
        }
        if core::mem::take(&mut self.arrived) {
            if let Some(mm) = mount_manager {
                if let Err(status) = retried_within(ns, &budget, || mm.volume_removal(&self.device))
                {
                    ns.left_behind(Leftover::Removal, &self.device, status);
                }
            }
        }
        self.kind = LinkKind::None;
    }
}
