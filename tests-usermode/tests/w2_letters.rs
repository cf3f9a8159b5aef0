//! W2: drive letters in the global namespace, through the real `vcdirect::namespace` code and
//! a model of the object namespace (a global directory, one directory per logon session that
//! the caller's `\??` resolves to first, links owned by others) and of the mount manager (a
//! database of letters remembered by unique id, the suggested link on arrival, create and
//! delete points). The model answers as Windows does; the kernel calls behind the same traits
//! are the glue's (only Windows can prove they behave like the model).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use vcdirect::namespace::{
    dos_letter, first_volume_id, letter_free, utf16, Directories, Leftover, LinkKind, Links,
    MountManager, Namespace, UniqueId, VolumeNames, OBJECT_NAME_COLLISION, OBJECT_NAME_NOT_FOUND,
    VOLUME_ID_SPAN,
};
use vcdirect::Status;

const DIRS: Directories = Directories::WINDOWS;

fn s(v: &[u16]) -> String {
    String::from_utf16_lossy(v)
}

/// The object namespace: `\GLOBAL??` and `\Sessions\<n>\DosDevices` directories; the calling
/// thread's `\??` is its session's directory, then the global one.
#[derive(Default)]
struct Objects {
    global: RefCell<BTreeMap<String, String>>,
    sessions: RefCell<BTreeMap<u32, BTreeMap<String, String>>>,
    /// The session of the calling thread.
    session: Cell<u32>,
    /// Creations to refuse (full path -> status), to fail a mount at that step.
    refuse: RefCell<BTreeMap<String, Status>>,
}

enum Dir {
    Global(String),
    Caller(String),
}

fn dir(path: &str) -> Dir {
    if let Some(n) = path.strip_prefix("\\GLOBAL??\\") {
        Dir::Global(n.to_ascii_uppercase())
    } else if let Some(n) = path.strip_prefix("\\??\\") {
        Dir::Caller(n.to_ascii_uppercase())
    } else if let Some(n) = path.strip_prefix("\\DosDevices\\") {
        Dir::Caller(n.to_ascii_uppercase())
    } else {
        panic!("path outside the model: {path}")
    }
}

impl Objects {
    fn in_session(&self, session: u32) -> &Self {
        self.session.set(session);
        self
    }
    fn add_global(&self, name: &str, target: &str) {
        self.global
            .borrow_mut()
            .insert(name.to_ascii_uppercase(), target.into());
    }
    fn add_session(&self, session: u32, name: &str, target: &str) {
        self.sessions
            .borrow_mut()
            .entry(session)
            .or_default()
            .insert(name.to_ascii_uppercase(), target.into());
    }
    fn global_target(&self, name: &str) -> Option<String> {
        self.global
            .borrow()
            .get(&name.to_ascii_uppercase())
            .cloned()
    }
    fn session_target(&self, session: u32, name: &str) -> Option<String> {
        self.sessions
            .borrow()
            .get(&session)
            .and_then(|d| d.get(&name.to_ascii_uppercase()).cloned())
    }
    /// What `\??\name` resolves to for a thread of `session`.
    fn resolve(&self, session: u32, name: &str) -> Option<String> {
        self.session_target(session, name)
            .or_else(|| self.global_target(name))
    }
    fn snapshot(
        &self,
    ) -> (
        BTreeMap<String, String>,
        BTreeMap<u32, BTreeMap<String, String>>,
    ) {
        (self.global.borrow().clone(), self.sessions.borrow().clone())
    }
}

impl Namespace for Objects {
    fn query(&self, path: &[u16]) -> Result<Option<Vec<u16>>, Status> {
        Ok(match dir(&s(path)) {
            Dir::Global(n) => self.global_target(&n),
            Dir::Caller(n) => self.resolve(self.session.get(), &n),
        }
        .map(|t| utf16(&t)))
    }
    fn create(&self, path: &[u16], target: &[u16]) -> Result<(), Status> {
        if let Some(status) = self.refuse.borrow().get(&s(path)) {
            return Err(*status);
        }
        let (map, name) = match dir(&s(path)) {
            Dir::Global(n) => (self.global.borrow_mut(), n),
            Dir::Caller(_) => panic!("a mount creates only global links: {}", s(path)),
        };
        let mut map = map;
        if map.contains_key(&name) {
            return Err(OBJECT_NAME_COLLISION);
        }
        map.insert(name, s(target));
        Ok(())
    }
    fn delete(&self, path: &[u16]) -> Result<(), Status> {
        match dir(&s(path)) {
            Dir::Global(n) => self.global.borrow_mut().remove(&n),
            Dir::Caller(n) => {
                let session = self.session.get();
                // Deleting `\??\X:` removes the caller's session link if any, else the
                // global one: the W2 bug this model must be able to show.
                let mut sessions = self.sessions.borrow_mut();
                match sessions.get_mut(&session).and_then(|d| d.remove(&n)) {
                    Some(t) => Some(t),
                    None => self.global.borrow_mut().remove(&n),
                }
            }
        }
        .map(|_| ())
        .ok_or(OBJECT_NAME_NOT_FOUND)
    }
}

/// The mount manager: remembers letters by unique id, asks a device its MOUNTDEV answers on
/// arrival, creates and deletes `\DosDevices\X:` in the system context (the global
/// directory), as Windows' does.
struct MountMgr<'a> {
    objects: &'a Objects,
    /// The devices' MOUNTDEV answers, as the mount manager would query them.
    devices: RefCell<BTreeMap<String, VolumeNames>>,
    /// unique id -> remembered letter (`\DosDevices\X:`).
    database: RefCell<BTreeMap<Vec<u8>, String>>,
    /// unique id -> its `\??\Volume{GUID}` entry (HKLM\SYSTEM\MountedDevices): made at the
    /// first arrival of an id, kept across reboots, removed by neither a delete-points request
    /// that names only the letter nor a volume removal, as Windows' mount manager does.
    volume_entries: RefCell<BTreeMap<Vec<u8>, String>>,
    /// unique id -> its `#{GUID}` "no drive letter" entry: written when a delete-points
    /// request removes the id's letter, removed by the next create point for it; while it is
    /// there, an arrival of the id gets no letter (the suggested link is ignored).
    no_letter: RefCell<BTreeMap<Vec<u8>, String>>,
    /// Every request, in order.
    log: RefCell<Vec<String>>,
    fail_arrival: Cell<bool>,
    fail_create_point: Cell<bool>,
    /// The volumes it holds in memory: device name -> the unique id it queried at arrival. An
    /// arrival of a device it holds is answered without asking the device again (as Windows'
    /// does); only a volume removal notification (or a reboot) makes it forget.
    held: RefCell<BTreeMap<String, Vec<u8>>>,
}

impl<'a> MountMgr<'a> {
    fn new(objects: &'a Objects) -> Self {
        MountMgr {
            objects,
            devices: RefCell::default(),
            database: RefCell::default(),
            volume_entries: RefCell::default(),
            no_letter: RefCell::default(),
            log: RefCell::default(),
            fail_arrival: Cell::new(false),
            fail_create_point: Cell::new(false),
            held: RefCell::default(),
        }
    }
    /// The unique id it holds for `device`.
    fn held_id(&self, device: &str) -> Option<Vec<u8>> {
        self.held.borrow().get(device).cloned()
    }
    /// A reboot: the in-memory records are gone, the database (the registry) stays.
    fn reboot(&self) {
        self.held.borrow_mut().clear();
    }
    fn attach(&self, names: &VolumeNames) {
        self.devices
            .borrow_mut()
            .insert(s(names.device_name()), names.clone());
    }
    fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.borrow_mut())
    }
    fn letter_of(dos: &str) -> String {
        dos.strip_prefix("\\DosDevices\\")
            .expect("a \\DosDevices\\X: name")
            .to_string()
    }
}

impl MountManager for MountMgr<'_> {
    fn volume_arrival(&self, device: &[u16]) -> Result<(), Status> {
        let device = s(device);
        self.log.borrow_mut().push(format!("arrival {device}"));
        if self.fail_arrival.get() {
            return Err(Status::IoDeviceError);
        }
        if self.held.borrow().contains_key(&device) {
            // Known already: success, nothing asked, nothing changed.
            return Ok(());
        }
        let names = self
            .devices
            .borrow()
            .get(&device)
            .cloned()
            .expect("a device");
        // The answers must agree: the device names itself as the notification did.
        assert_eq!(s(names.device_name()), device);
        self.held
            .borrow_mut()
            .insert(device.clone(), names.unique_id().to_vec());
        let mut entries = self.volume_entries.borrow_mut();
        let next = entries.len();
        entries
            .entry(names.unique_id().to_vec())
            .or_insert_with(|| format!("\\??\\Volume{{{next:08x}-guid}}"));
        drop(entries);
        let remembered = self.database.borrow().get(names.unique_id()).cloned();
        let no_letter = self.no_letter.borrow().contains_key(names.unique_id());
        let wanted = remembered.or_else(|| {
            if no_letter {
                None
            } else {
                names.suggested_link_name().map(s)
            }
        });
        if let Some(dos) = wanted {
            let letter = Self::letter_of(&dos);
            if self.objects.global_target(&letter).is_none() {
                self.objects.add_global(&letter, &device);
                self.database
                    .borrow_mut()
                    .insert(names.unique_id().to_vec(), dos);
            }
        }
        Ok(())
    }
    fn create_point(&self, link: &[u16], device: &[u16]) -> Result<(), Status> {
        let (link, device) = (s(link), s(device));
        self.log
            .borrow_mut()
            .push(format!("create-point {link} {device}"));
        if self.fail_create_point.get() {
            return Err(Status::IoDeviceError);
        }
        let letter = Self::letter_of(&link);
        match self.objects.global_target(&letter) {
            Some(t) if t == device => Ok(()),
            Some(_) => Err(OBJECT_NAME_COLLISION),
            None => {
                self.objects.add_global(&letter, &device);
                let names = self
                    .devices
                    .borrow()
                    .get(&device)
                    .cloned()
                    .expect("a device");
                self.no_letter.borrow_mut().remove(names.unique_id());
                self.database
                    .borrow_mut()
                    .insert(names.unique_id().to_vec(), link);
                Ok(())
            }
        }
    }
    fn delete_point(&self, link: &[u16]) -> Result<(), Status> {
        let link = s(link);
        self.log.borrow_mut().push(format!("delete-points {link}"));
        let mut db = self.database.borrow_mut();
        let Some(id) = db
            .iter()
            .find(|(_, l)| **l == link)
            .map(|(id, _)| id.clone())
        else {
            return Err(OBJECT_NAME_NOT_FOUND);
        };
        db.remove(&id);
        let mut no_letter = self.no_letter.borrow_mut();
        let n = no_letter.len();
        no_letter.insert(id, format!("#{{{n:08x}-guid}}"));
        drop(no_letter);
        self.objects
            .global
            .borrow_mut()
            .remove(&Self::letter_of(&link));
        Ok(())
    }
    fn volume_removal(&self, device: &[u16]) -> Result<(), Status> {
        let device = s(device);
        self.log.borrow_mut().push(format!("removal {device}"));
        self.held
            .borrow_mut()
            .remove(&device)
            .map(|_| ())
            .ok_or(OBJECT_NAME_NOT_FOUND)
    }
}

fn names(id: u32, letter: Option<char>, nonce: u8) -> VolumeNames {
    VolumeNames::new(id, letter, UniqueId::new([nonce; 16])).unwrap()
}

/// A mount as the driver's control IOCTL does it: the letter checked in the caller's context
/// before anything is created, then the links.
fn mount(
    objects: &Objects,
    mm: Option<&MountMgr<'_>>,
    names: &VolumeNames,
) -> Result<Links, Status> {
    if let Some(m) = mm {
        m.attach(names);
    }
    if let Some(c) = names.letter() {
        letter_free(objects, &DIRS, c)?;
    }
    Links::establish(objects, mm.map(|m| m as &dyn MountManager), &DIRS, names)
}

#[test]
fn w2_letter_is_visible_from_every_session() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    let v = names(1, Some('v'), 1);
    // An elevated vcctl in session 1 mounts.
    let links = mount(objects.in_session(1), Some(&mm), &v).expect("mounted");
    assert_eq!(links.kind(), LinkKind::MountManager);
    for session in [0, 1, 2, 7] {
        assert_eq!(
            objects.resolve(session, "V:").as_deref(),
            Some("\\Device\\VcVolume1"),
            "session {session} sees V:"
        );
        assert_eq!(
            objects.resolve(session, "VcVolume1").as_deref(),
            Some("\\Device\\VcVolume1")
        );
    }
    let recorded: Vec<String> = links.paths().map(s).collect();
    assert_eq!(recorded, ["\\GLOBAL??\\VcVolume1", "\\GLOBAL??\\V:"]);
}

#[test]
fn w2_mount_manager_requests_arrive_in_order_and_answers_agree() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    let v = names(3, Some('V'), 2);
    assert_eq!(s(v.device_name()), "\\Device\\VcVolume3");
    assert_eq!(
        v.suggested_link_name().map(s),
        Some("\\DosDevices\\V:".into())
    );
    assert!(v.unique_id().starts_with(b"vcdirect"));
    assert_eq!(v.unique_id().len(), 24);
    let mut links = mount(&objects, Some(&mm), &v).expect("mounted");
    assert_eq!(
        mm.take_log(),
        ["arrival \\Device\\VcVolume3"],
        "the suggested name made the letter on arrival: no create point needed"
    );
    links.remove_all(&objects, Some(&mm as &dyn MountManager));
    assert_eq!(
        mm.take_log(),
        [
            "delete-points \\DosDevices\\V:",
            "removal \\Device\\VcVolume3"
        ]
    );
    assert_eq!(objects.global_target("V:"), None);
    assert_eq!(objects.global_target("VcVolume3"), None);

    // A mount manager that leaves the letter to the create point.
    let w = names(4, Some('W'), 3);
    objects.add_global("W:", "\\Device\\Other");
    mm.attach(&w);
    // Arrival while W: is taken makes nothing; then the other link goes away before the
    // create point (the check runs in `mount`, so do the steps by hand here).
    mm.volume_arrival(w.device_name()).unwrap();
    objects.global.borrow_mut().remove("W:");
    mm.create_point(&dos_letter('W').unwrap(), w.device_name())
        .unwrap();
    assert_eq!(
        mm.take_log(),
        [
            "arrival \\Device\\VcVolume4",
            "create-point \\DosDevices\\W: \\Device\\VcVolume4"
        ]
    );
}

#[test]
fn w2_create_point_follows_arrival_when_the_arrival_makes_no_letter() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    let x = names(5, Some('X'), 4);
    // The mount manager makes no link on arrival (as when it ignores suggested names).
    struct NoSuggest<'a>(&'a MountMgr<'a>);
    impl MountManager for NoSuggest<'_> {
        fn volume_arrival(&self, device: &[u16]) -> Result<(), Status> {
            self.0
                .log
                .borrow_mut()
                .push(format!("arrival {}", s(device)));
            Ok(())
        }
        fn create_point(&self, link: &[u16], device: &[u16]) -> Result<(), Status> {
            self.0.create_point(link, device)
        }
        fn delete_point(&self, link: &[u16]) -> Result<(), Status> {
            self.0.delete_point(link)
        }
        fn volume_removal(&self, device: &[u16]) -> Result<(), Status> {
            self.0.volume_removal(device)
        }
    }
    mm.attach(&x);
    let nm = NoSuggest(&mm);
    letter_free(&objects, &DIRS, 'X').unwrap();
    let mut links = Links::establish(&objects, Some(&nm), &DIRS, &x).expect("mounted");
    assert_eq!(links.kind(), LinkKind::MountManager);
    assert_eq!(
        mm.take_log(),
        [
            "arrival \\Device\\VcVolume5",
            "create-point \\DosDevices\\X: \\Device\\VcVolume5"
        ]
    );
    links.remove_all(&objects, Some(&nm as &dyn MountManager));
    assert_eq!(
        mm.take_log(),
        [
            "delete-points \\DosDevices\\X:",
            "removal \\Device\\VcVolume5"
        ]
    );
    assert_eq!(objects.global_target("X:"), None);
}

/// The mount manager makes the letter's link on the create point but answers a failure (out
/// of memory after it made the link), and the retry of that create point answers a
/// collision (the link is there): the link points at this device, so it is this mount's,
/// made by the mount manager, and goes through its delete points on removal, not a
/// collision that forces the mount down and leaves the letter and its record behind.
#[test]
fn w2_a_create_point_that_made_the_link_but_failed_still_gives_the_letter() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    let x = names(7, Some('X'), 5);
    struct MadeButFailed<'a> {
        inner: &'a MountMgr<'a>,
        calls: Cell<u32>,
    }
    impl MountManager for MadeButFailed<'_> {
        fn volume_arrival(&self, device: &[u16]) -> Result<(), Status> {
            // No link on arrival (as when it ignores suggested names).
            self.inner
                .log
                .borrow_mut()
                .push(format!("arrival {}", s(device)));
            Ok(())
        }
        fn create_point(&self, link: &[u16], device: &[u16]) -> Result<(), Status> {
            self.calls.set(self.calls.get() + 1);
            if self.calls.get() == 1 {
                self.inner.create_point(link, device)?;
                return Err(Status::InsufficientResources);
            }
            self.inner
                .log
                .borrow_mut()
                .push("create-point again".into());
            Err(OBJECT_NAME_COLLISION)
        }
        fn delete_point(&self, link: &[u16]) -> Result<(), Status> {
            self.inner.delete_point(link)
        }
        fn volume_removal(&self, device: &[u16]) -> Result<(), Status> {
            self.inner.volume_removal(device)
        }
    }
    mm.attach(&x);
    let made = MadeButFailed {
        inner: &mm,
        calls: Cell::new(0),
    };
    letter_free(&objects, &DIRS, 'X').unwrap();
    let mut links = Links::establish(&objects, Some(&made), &DIRS, &x).expect("mounted");
    assert_eq!(links.kind(), LinkKind::MountManager);
    assert_eq!(
        links.paths().map(s).collect::<Vec<_>>(),
        ["\\GLOBAL??\\VcVolume7", "\\GLOBAL??\\X:"]
    );
    assert_eq!(
        mm.take_log(),
        [
            "arrival \\Device\\VcVolume7",
            "create-point \\DosDevices\\X: \\Device\\VcVolume7",
            "create-point again"
        ]
    );
    assert_eq!(
        objects.global_target("X:").as_deref(),
        Some("\\Device\\VcVolume7")
    );
    links.remove_all(&objects, Some(&made as &dyn MountManager));
    assert_eq!(
        mm.take_log(),
        [
            "delete-points \\DosDevices\\X:",
            "removal \\Device\\VcVolume7"
        ],
        "the letter and its record go through the mount manager"
    );
    assert_eq!(objects.global_target("X:"), None);
    assert!(mm.database.borrow().is_empty(), "no record left");
}

#[test]
fn w2_mount_without_letter_gets_none_and_is_not_announced() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    let n = names(2, None, 5);
    assert_eq!(n.suggested_link_name(), None);
    let mut links = mount(&objects, Some(&mm), &n).expect("mounted");
    assert_eq!(links.kind(), LinkKind::None);
    assert!(mm.take_log().is_empty(), "no arrival notification");
    let (global, _) = objects.snapshot();
    assert_eq!(
        global.keys().cloned().collect::<Vec<_>>(),
        ["VCVOLUME2"],
        "only the device link"
    );
    links.remove_all(&objects, Some(&mm as &dyn MountManager));
    assert!(objects.snapshot().0.is_empty());
}

#[test]
fn w2_letter_used_by_another_device_is_refused_and_its_link_untouched() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    objects.add_global("C:", "\\Device\\HarddiskVolume2");
    objects.add_session(4, "Z:", "\\Device\\LanmanRedirector\\server\\share");
    let before = objects.snapshot();
    // Global letter, from any session.
    for session in [0, 4] {
        let c = names(1, Some('C'), 6);
        assert_eq!(
            mount(objects.in_session(session), Some(&mm), &c).err(),
            Some(OBJECT_NAME_COLLISION)
        );
    }
    // A letter in the caller's own session (a mapped network drive).
    let z = names(1, Some('Z'), 7);
    assert_eq!(
        mount(objects.in_session(4), Some(&mm), &z).err(),
        Some(OBJECT_NAME_COLLISION)
    );
    assert_eq!(
        objects.snapshot(),
        before,
        "nothing created, nothing removed"
    );
    assert!(mm.take_log().is_empty(), "refused before anything was sent");

    // The letter taken between the check and the links (a race): refused, theirs untouched,
    // our device link removed again.
    let y = names(2, Some('Y'), 8);
    mm.attach(&y);
    objects.add_global("Y:", "\\Device\\Other");
    let before = objects.snapshot();
    let r = Links::establish(&objects, Some(&mm as &dyn MountManager), &DIRS, &y);
    assert_eq!(r.err(), Some(OBJECT_NAME_COLLISION));
    assert_eq!(objects.snapshot(), before);
}

#[test]
fn w2_failed_mount_removes_nothing_it_did_not_create() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    objects.add_global("C:", "\\Device\\HarddiskVolume2");
    objects.add_session(1, "P:", "\\Device\\Mup\\share");
    let before = objects.snapshot();
    // The mount manager fails and the explicit link cannot be made either.
    mm.fail_arrival.set(true);
    objects
        .refuse
        .borrow_mut()
        .insert("\\GLOBAL??\\Q:".into(), Status::InsufficientResources);
    let q = names(6, Some('Q'), 9);
    let r = mount(objects.in_session(1), Some(&mm), &q);
    assert_eq!(r.err(), Some(Status::InsufficientResources));
    assert_eq!(
        objects.snapshot(),
        before,
        "its device link removed, others kept"
    );

    // The device link itself fails: nothing was made, nothing is deleted (in particular not
    // an existing link of that name).
    objects.refuse.borrow_mut().clear();
    objects.add_global("VcVolume7", "\\Device\\SomeoneElse");
    let before = objects.snapshot();
    let r = mount(&objects, Some(&mm), &names(7, Some('Q'), 10));
    assert_eq!(r.err(), Some(OBJECT_NAME_COLLISION));
    assert_eq!(objects.snapshot(), before);
}

#[test]
fn w2_falls_back_to_a_global_link_when_the_mount_manager_does_not_make_it() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    mm.fail_arrival.set(true);
    let mut links = mount(objects.in_session(3), Some(&mm), &names(1, Some('R'), 11)).unwrap();
    assert_eq!(links.kind(), LinkKind::GlobalLink);
    assert_eq!(
        objects.resolve(0, "R:").as_deref(),
        Some("\\Device\\VcVolume1")
    );
    mm.take_log();
    links.remove_all(&objects, Some(&mm as &dyn MountManager));
    assert!(
        mm.take_log().is_empty(),
        "no delete points for a link it did not make"
    );
    assert!(objects.snapshot().0.is_empty());
    // No mount manager at all: the same explicit link.
    let mut links = mount(&objects, None, &names(1, Some('R'), 12)).unwrap();
    assert_eq!(links.kind(), LinkKind::GlobalLink);
    links.remove_all(&objects, None::<&dyn MountManager>);
    assert!(objects.snapshot().0.is_empty());
}

#[test]
fn w2_dismount_from_another_context_removes_only_its_own_links() {
    for with_mount_manager in [true, false] {
        let objects = Objects::default();
        let mm = MountMgr::new(&objects);
        let m = with_mount_manager.then_some(&mm as &dyn MountManager);
        let mt = with_mount_manager.then_some(&mm);
        objects.add_global("C:", "\\Device\\HarddiskVolume2");
        let mut links = mount(objects.in_session(1), mt, &names(1, Some('V'), 13)).unwrap();
        let mut other = mount(objects.in_session(1), mt, &names(2, Some('W'), 14)).unwrap();
        // Later, session 2 maps its own V: over the global one (its `\??` shadows it).
        objects.add_session(2, "V:", "\\Device\\Mup\\home");
        objects.add_session(2, "VcVolume1", "\\Device\\Elsewhere");
        // Dismount from session 2 (or a system thread).
        links.remove_all(objects.in_session(2), m);
        assert_eq!(objects.global_target("V:"), None, "our letter is gone");
        assert_eq!(objects.global_target("VcVolume1"), None);
        assert_eq!(
            objects.session_target(2, "V:").as_deref(),
            Some("\\Device\\Mup\\home"),
            "session 2's own V: untouched"
        );
        assert_eq!(
            objects.session_target(2, "VcVolume1").as_deref(),
            Some("\\Device\\Elsewhere")
        );
        assert_eq!(
            objects.global_target("C:").as_deref(),
            Some("\\Device\\HarddiskVolume2")
        );
        assert_eq!(
            objects.global_target("W:").as_deref(),
            Some("\\Device\\VcVolume2"),
            "another volume's letter untouched"
        );
        // A second removal (unload after a dismount) changes nothing.
        links.remove_all(&objects, m);
        assert_eq!(links.paths().count(), 0);
        other.remove_all(&objects, m);
        assert_eq!(objects.global.borrow().len(), 1);
    }
}

#[test]
fn w2_a_link_replaced_by_another_device_is_not_deleted() {
    let objects = Objects::default();
    let mut links = mount(&objects, None, &names(1, Some('V'), 15)).unwrap();
    // Someone deleted our V: and made theirs (possible only from outside the driver).
    objects.global.borrow_mut().remove("V:");
    objects.add_global("V:", "\\Device\\Theirs");
    links.remove_all(&objects, None::<&dyn MountManager>);
    assert_eq!(
        objects.global_target("V:").as_deref(),
        Some("\\Device\\Theirs")
    );
}

#[test]
fn w2_reused_slot_does_not_inherit_a_remembered_letter() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    // Volume A in slot 1 with V:, then the machine crashes: links are gone after the reboot,
    // the mount manager's database (the registry) still remembers V: for A's unique id.
    let a = names(1, Some('V'), 16);
    let _crashed = mount(&objects, Some(&mm), &a).unwrap();
    objects.global.borrow_mut().clear();
    mm.reboot();
    assert_eq!(mm.database.borrow().len(), 1);

    // After the reboot another volume B mounts in slot 1 (same device name), with no letter.
    let b = VolumeNames::new(1, None, UniqueId::new([17; 16])).unwrap();
    assert_eq!(b.device_name(), a.device_name());
    assert_ne!(b.unique_id(), a.unique_id());
    let _b = mount(&objects, Some(&mm), &b).unwrap();
    assert_eq!(objects.global_target("V:"), None, "B got no letter");
    objects.global.borrow_mut().clear();

    // With a letter, B gets exactly the one it asked for.
    let b = VolumeNames::new(1, Some('W'), UniqueId::new([18; 16])).unwrap();
    mm.attach(&b);
    let links = mount(&objects, Some(&mm), &b).unwrap();
    assert_eq!(objects.global_target("V:"), None);
    assert_eq!(
        objects.global_target("W:").as_deref(),
        Some("\\Device\\VcVolume1")
    );
    drop(links);

    // The model bites (after another reboot: nothing of B held): a unique id derived from the slot (the same id for A and B) makes the
    // mount manager hand B the letter it remembers for A. (An id-less, letter-less mount is
    // never announced, so this needs B to be announced: give it a letter that differs.)
    objects.global.borrow_mut().clear();
    mm.reboot();
    let slot_id = VolumeNames::new(1, Some('W'), UniqueId::new([16; 16])).unwrap();
    mm.attach(&slot_id);
    mm.volume_arrival(slot_id.device_name()).unwrap();
    assert_eq!(
        objects.global_target("V:").as_deref(),
        Some("\\Device\\VcVolume1"),
        "a slot-derived id inherits V:"
    );
}

#[test]
fn w2_deleting_through_the_callers_view_would_hit_another_link() {
    // The bug W2 describes, shown by the model (so the tests above could catch it): a
    // delete of `\??\V:` from a context without its own V: removes the global one,
    // whoever made it.
    let objects = Objects::default();
    objects.add_global("V:", "\\Device\\Theirs");
    objects
        .in_session(5)
        .delete(&utf16("\\??\\V:"))
        .expect("deleted");
    assert_eq!(objects.global_target("V:"), None);
}

#[test]
fn w2_removal_notification_lets_a_reused_device_name_get_its_new_unique_id() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    // Volume A as VcVolume1 with V:, dismounted: delete points, then the removal.
    let a = names(1, Some('V'), 20);
    let mut links = mount(&objects, Some(&mm), &a).unwrap();
    assert_eq!(
        mm.held_id("\\Device\\VcVolume1").as_deref(),
        Some(a.unique_id())
    );
    mm.take_log();
    links.remove_all(&objects, Some(&mm as &dyn MountManager));
    assert_eq!(
        mm.take_log(),
        [
            "delete-points \\DosDevices\\V:",
            "removal \\Device\\VcVolume1"
        ]
    );
    assert_eq!(mm.held_id("\\Device\\VcVolume1"), None, "forgotten");
    // Another volume B with the same device name (ids restarting at a driver reload) gets its
    // own unique id queried.
    let b = names(1, Some('W'), 21);
    let mut links = mount(&objects, Some(&mm), &b).unwrap();
    assert_eq!(
        mm.held_id("\\Device\\VcVolume1").as_deref(),
        Some(b.unique_id())
    );
    links.remove_all(&objects, Some(&mm as &dyn MountManager));

    // The model bites: without the removal, the name keeps A's unique id.
    let c = names(2, Some('X'), 22);
    let _kept = mount(&objects, Some(&mm), &c).unwrap();
    let d = names(2, Some('Y'), 23);
    mm.attach(&d);
    mm.volume_arrival(d.device_name()).unwrap();
    assert_eq!(
        mm.held_id("\\Device\\VcVolume2").as_deref(),
        Some(c.unique_id())
    );
}

#[test]
fn w2_removal_follows_every_accepted_arrival_and_only_those() {
    // The arrival succeeded but the mount manager made no letter and refused the create
    // point: the letter fell back to a global link, and the removal is sent all the same.
    struct ArrivalOnly<'a>(&'a MountMgr<'a>);
    impl MountManager for ArrivalOnly<'_> {
        fn volume_arrival(&self, device: &[u16]) -> Result<(), Status> {
            self.0
                .log
                .borrow_mut()
                .push(format!("arrival {}", s(device)));
            Ok(())
        }
        fn create_point(&self, _link: &[u16], _device: &[u16]) -> Result<(), Status> {
            Err(Status::IoDeviceError)
        }
        fn delete_point(&self, link: &[u16]) -> Result<(), Status> {
            self.0.delete_point(link)
        }
        fn volume_removal(&self, device: &[u16]) -> Result<(), Status> {
            self.0
                .log
                .borrow_mut()
                .push(format!("removal {}", s(device)));
            Ok(())
        }
    }
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    let am = ArrivalOnly(&mm);
    letter_free(&objects, &DIRS, 'S').unwrap();
    let mut links = Links::establish(&objects, Some(&am), &DIRS, &names(3, Some('S'), 24)).unwrap();
    assert_eq!(links.kind(), LinkKind::GlobalLink);
    assert!(links.announced());
    mm.take_log();
    links.remove_all(&objects, Some(&am as &dyn MountManager));
    assert_eq!(mm.take_log(), ["removal \\Device\\VcVolume3"]);
    assert!(objects.snapshot().0.is_empty());
    // A second removal sends nothing more.
    links.remove_all(&objects, Some(&am as &dyn MountManager));
    assert!(mm.take_log().is_empty());
    // A refused arrival: no removal.
    mm.fail_arrival.set(true);
    let mut links = mount(&objects, Some(&mm), &names(4, Some('T'), 25)).unwrap();
    assert!(!links.announced());
    mm.take_log();
    links.remove_all(&objects, Some(&mm as &dyn MountManager));
    assert!(mm.take_log().is_empty(), "nothing to remove");
}

#[test]
fn w2_volume_ids_do_not_restart_at_one_on_every_load() {
    // Time-based UUIDs as ExUuidCreate makes them: the low time word moves, the node stays.
    let node = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x80, 0x01];
    let mut firsts = std::collections::BTreeSet::new();
    for load in 0u32..2000 {
        let mut seed = [0u8; 16];
        seed[..4].copy_from_slice(
            &0x1234_0000u32
                .wrapping_add(load.wrapping_mul(10_000_019))
                .to_le_bytes(),
        );
        seed[4..8].copy_from_slice(&0x11f1_0abcu32.to_le_bytes());
        seed[8..].copy_from_slice(&node);
        let first = first_volume_id(seed);
        assert!(
            (1..=VOLUME_ID_SPAN).contains(&first),
            "load {load}: {first}"
        );
        firsts.insert(first);
    }
    assert_eq!(firsts.len(), 2000, "every load starts somewhere else");
    // The device name follows the id.
    let n = VolumeNames::new(first_volume_id([7; 16]), None, UniqueId::new([1; 16])).unwrap();
    assert_ne!(s(n.device_name()), "\\Device\\VcVolume1");
}

/// W6: every name and record a mount's links need is made before the volume device is
/// published (`Links::prepare`), fallibly: each of those allocations failing in turn is
/// STATUS_INSUFFICIENT_RESOURCES with no link made and nothing sent to the mount manager; the
/// names themselves (`VolumeNames::new`) likewise; and making the links from prepared names
/// (`PreparedLinks::establish`, the only step after publish) asks no allocation at all.
#[test]
fn w6_a_failed_allocation_while_preparing_links_makes_no_link() {
    use vcdirect::faults::{allocations_seen, fail_allocation_at};
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    for letter in [None, Some('Q')] {
        fail_allocation_at(0);
        let n = names(9, letter, 3);
        let name_sites = allocations_seen();
        assert_eq!(name_sites, if letter.is_some() { 2 } else { 1 });
        for k in 1..=name_sites {
            fail_allocation_at(k);
            assert_eq!(
                VolumeNames::new(9, letter, UniqueId::new([3; 16])).err(),
                Some(Status::InsufficientResources),
                "names, site {k}"
            );
        }
        mm.attach(&n);
        fail_allocation_at(0);
        let prepared = Links::prepare(&DIRS, &n).expect("prepared");
        let sites = allocations_seen();
        // The device's name copy and the records' room; `VcVolume<id>`; the letter's three.
        assert_eq!(sites, if letter.is_some() { 6 } else { 3 }, "{letter:?}");
        fail_allocation_at(0);
        let mut links = prepared
            .establish(&objects, Some(&mm as &dyn MountManager))
            .expect("mounted");
        assert_eq!(allocations_seen(), 0, "establish allocates nothing");
        links.remove_all(&objects, Some(&mm as &dyn MountManager));
        mm.take_log();
        let before = objects.snapshot();
        for k in 1..=sites {
            fail_allocation_at(k);
            let r = Links::establish(&objects, Some(&mm as &dyn MountManager), &DIRS, &n);
            fail_allocation_at(0);
            assert_eq!(
                r.err(),
                Some(Status::InsufficientResources),
                "{letter:?}: site {k}"
            );
            assert_eq!(objects.snapshot(), before, "{letter:?}: site {k}: no link");
            assert!(
                mm.take_log().is_empty(),
                "{letter:?}: site {k}: nothing sent"
            );
        }
    }
}

/// One policy for the mount manager's failures (W2, W6): a request it cannot serve for want
/// of memory, even after the retries, is treated as a refusal: the letter becomes an explicit
/// global link, as when the mount manager cannot be opened, and an announced mount is never
/// undone for it. An accepted arrival is still taken back when the links are removed.
#[test]
fn w2_a_mount_manager_request_without_memory_falls_back_to_a_global_link() {
    struct OutOfMemoryAt<'a> {
        inner: &'a MountMgr<'a>,
        arrival: bool,
    }
    impl MountManager for OutOfMemoryAt<'_> {
        fn volume_arrival(&self, device: &[u16]) -> Result<(), Status> {
            if self.arrival {
                return Err(Status::InsufficientResources);
            }
            self.inner.volume_arrival(device)
        }
        fn create_point(&self, _: &[u16], _: &[u16]) -> Result<(), Status> {
            Err(Status::InsufficientResources)
        }
        fn delete_point(&self, link: &[u16]) -> Result<(), Status> {
            self.inner.delete_point(link)
        }
        fn volume_removal(&self, device: &[u16]) -> Result<(), Status> {
            self.inner.volume_removal(device)
        }
    }
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    let n = names(4, Some('R'), 9);
    // Attached without a letter: no suggested name is made on arrival, so the create point
    // is asked.
    mm.attach(&names(4, None, 9));
    for arrival in [true, false] {
        let before = objects.snapshot();
        let oom = OutOfMemoryAt {
            inner: &mm,
            arrival,
        };
        let mut links = Links::establish(&objects, Some(&oom as &dyn MountManager), &DIRS, &n)
            .unwrap_or_else(|e| panic!("arrival {arrival}: {e:?}"));
        assert_eq!(links.kind(), LinkKind::GlobalLink, "arrival {arrival}");
        assert_eq!(links.announced(), !arrival, "arrival {arrival}");
        assert_eq!(
            objects.global_target("R:").as_deref(),
            Some("\\Device\\VcVolume4")
        );
        links.remove_all(&objects, Some(&oom as &dyn MountManager));
        assert_eq!(
            objects.snapshot(),
            before,
            "arrival {arrival}: no link left"
        );
        let log = mm.take_log();
        if !arrival {
            assert_eq!(
                log,
                ["arrival \\Device\\VcVolume4", "removal \\Device\\VcVolume4"],
                "the accepted arrival is taken back"
            );
        }
    }
}

/// The namespace's and the mount manager's calls fail for want of memory a few times in a
/// row (the kernel's name copies, ZwOpenSymbolicLinkObject, the request's IRP): removal waits
/// and tries again, within one budget for the whole removal (`MEMORY_WAITS` waits), so every
/// link is still removed, the mount manager's delete points and removal sent. With failures
/// that never stop, the whole removal waits exactly the budget, then makes each further call
/// once: every link is still tried, and each one left is reported (`left_behind`: the kernel
/// logs it), never deleted blind.
#[test]
fn w6_links_are_removed_when_calls_run_out_of_memory_a_few_times() {
    /// Fails the next `fail` calls of each kind with STATUS_INSUFFICIENT_RESOURCES (query and
    /// delete each; STATUS_NO_MEMORY for delete, as the kernel may answer).
    struct Flaky<'a> {
        inner: &'a Objects,
        fail: Cell<u32>,
        /// What a failing query answers.
        query_error: Status,
        queries: Cell<u32>,
        deletes: Cell<u32>,
        waits: Cell<u32>,
        left: RefCell<Vec<String>>,
    }
    impl<'a> Flaky<'a> {
        /// Fails each kind of call `fail` times, a failing query with `query_error`.
        fn new(inner: &'a Objects, fail: u32, query_error: Status) -> Self {
            Flaky {
                inner,
                fail: Cell::new(fail),
                query_error,
                queries: Cell::new(0),
                deletes: Cell::new(0),
                waits: Cell::new(0),
                left: RefCell::default(),
            }
        }
        fn take(&self, counter: &Cell<u32>) -> bool {
            let n = counter.get() + 1;
            counter.set(n);
            n <= self.fail.get()
        }
    }
    impl Namespace for Flaky<'_> {
        fn query(&self, path: &[u16]) -> Result<Option<Vec<u16>>, Status> {
            if self.take(&self.queries) {
                return Err(self.query_error);
            }
            self.inner.query(path)
        }
        fn create(&self, path: &[u16], target: &[u16]) -> Result<(), Status> {
            self.inner.create(path, target)
        }
        fn delete(&self, path: &[u16]) -> Result<(), Status> {
            if self.take(&self.deletes) {
                return Err(Status::Host(0xC000_0017));
            }
            self.inner.delete(path)
        }
        fn wait_for_memory(&self) {
            self.waits.set(self.waits.get() + 1);
        }
        fn left_behind(&self, what: Leftover, path: &[u16], status: Status) {
            self.left
                .borrow_mut()
                .push(format!("{what:?} {} {status:?}", s(path)));
        }
    }
    struct FlakyMm<'a> {
        inner: &'a MountMgr<'a>,
        fail: u32,
        calls: RefCell<BTreeMap<&'static str, u32>>,
    }
    impl<'a> FlakyMm<'a> {
        /// Fails each kind of request `fail` times.
        fn new(inner: &'a MountMgr<'a>, fail: u32) -> Self {
            FlakyMm {
                inner,
                fail,
                calls: RefCell::default(),
            }
        }
        fn take(&self, what: &'static str) -> bool {
            let mut calls = self.calls.borrow_mut();
            let n = calls.entry(what).or_default();
            *n += 1;
            *n <= self.fail
        }
    }
    impl MountManager for FlakyMm<'_> {
        fn volume_arrival(&self, device: &[u16]) -> Result<(), Status> {
            self.inner.volume_arrival(device)
        }
        fn create_point(&self, link: &[u16], device: &[u16]) -> Result<(), Status> {
            self.inner.create_point(link, device)
        }
        fn delete_point(&self, link: &[u16]) -> Result<(), Status> {
            if self.take("delete-points") {
                return Err(Status::InsufficientResources);
            }
            self.inner.delete_point(link)
        }
        fn volume_removal(&self, device: &[u16]) -> Result<(), Status> {
            if self.take("removal") {
                return Err(Status::InsufficientResources);
            }
            self.inner.volume_removal(device)
        }
    }
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    let before = objects.snapshot();
    // A few failures: everything removed.
    // Four kinds fail `fail` times each: 4 * fail waits, within the budget.
    for fail in [1, 3, vcdirect::namespace::MEMORY_WAITS / 4] {
        let mut links = mount(&objects, Some(&mm), &names(5, Some('S'), 3)).unwrap();
        assert_eq!(links.kind(), LinkKind::MountManager);
        mm.take_log();
        let ns = Flaky::new(&objects, fail, Status::InsufficientResources);
        let flaky_mm = FlakyMm::new(&mm, fail);
        // Each kind's first `fail` calls fail: the first link's query, delete, delete points
        // and the removal each need `fail` waits; the second link's calls succeed at once.
        links.remove_all(&ns, Some(&flaky_mm as &dyn MountManager));
        assert_eq!(
            objects.snapshot(),
            before,
            "fail {fail}: every link removed"
        );
        assert!(ns.left.borrow().is_empty(), "fail {fail}");
        assert_eq!(
            mm.take_log(),
            [
                "delete-points \\DosDevices\\S:",
                "removal \\Device\\VcVolume5"
            ],
            "fail {fail}"
        );
        assert_eq!(
            ns.waits.get(),
            4 * fail,
            "fail {fail}: waited between tries"
        );
    }
    // Out of memory for good: the whole removal waits the budget once, not per call; the
    // delete points spends it, then every link is still queried once, and both are left and
    // reported; the removal is sent once, with no wait; each request not served is reported.
    let mut links = mount(&objects, Some(&mm), &names(6, Some('T'), 4)).unwrap();
    assert_eq!(links.kind(), LinkKind::MountManager);
    mm.take_log();
    let ns = Flaky::new(&objects, u32::MAX, Status::InsufficientResources);
    let flaky_mm = FlakyMm::new(&mm, u32::MAX);
    links.remove_all(&ns, Some(&flaky_mm as &dyn MountManager));
    let budget = vcdirect::namespace::MEMORY_WAITS;
    assert_eq!(ns.waits.get(), budget, "the whole removal waits the budget");
    assert_eq!(
        ns.queries.get(),
        2,
        "each link queried once after the budget"
    );
    assert_eq!(
        *flaky_mm.calls.borrow(),
        BTreeMap::from([("delete-points", budget + 1), ("removal", 1)])
    );
    assert_eq!(
        *ns.left.borrow(),
        [
            "DeletePoints \\DosDevices\\T: InsufficientResources",
            "Link \\GLOBAL??\\T: InsufficientResources",
            "Link \\GLOBAL??\\VcVolume6 InsufficientResources",
            "Removal \\Device\\VcVolume6 InsufficientResources"
        ],
        "each left thing reported once"
    );
    assert_eq!(
        objects.global_target("VcVolume6").as_deref(),
        Some("\\Device\\VcVolume6"),
        "left, not deleted blind"
    );
    assert_eq!(
        objects.global_target("T:").as_deref(),
        Some("\\Device\\VcVolume6"),
        "left, not deleted blind"
    );
    // A query failing for another reason: not tried again, the link left and reported too.
    let mut links = mount(&objects, None, &names(8, None, 6)).unwrap();
    let ns = Flaky::new(&objects, u32::MAX, Status::IoDeviceError);
    links.remove_all(&ns, None::<&dyn MountManager>);
    assert_eq!((ns.queries.get(), ns.waits.get()), (1, 0));
    assert_eq!(
        *ns.left.borrow(),
        ["Link \\GLOBAL??\\VcVolume8 IoDeviceError"]
    );
}

/// After the mount manager accepted the arrival, a failure that still undoes the mount (the
/// global link cannot be made, out of memory past the retries) hands the links back
/// unremoved: the glue's undo (`dismount::undo_failed_publish`) removes them first (and takes
/// the arrival back), then dismounts whatever file system mounted meanwhile. Before any
/// arrival the links are removed at once, as before.
#[test]
fn w2_a_failure_after_the_arrival_hands_the_links_to_the_dismount_sequence() {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    let before = objects.snapshot();
    // Attached without a letter: the arrival makes none; the create point is refused.
    mm.attach(&names(8, None, 5));
    mm.fail_create_point.set(true);
    objects
        .refuse
        .borrow_mut()
        .insert("\\GLOBAL??\\T:".into(), Status::InsufficientResources);
    let failed = Links::prepare(&DIRS, &names(8, Some('T'), 5))
        .unwrap()
        .establish_or_hand_back(&objects, Some(&mm as &dyn MountManager))
        .unwrap_err();
    assert_eq!(failed.status, Status::InsufficientResources);
    let mut links = failed.announced.expect("announced: handed back");
    assert!(links.announced());
    assert_eq!(
        objects.global_target("VcVolume8").as_deref(),
        Some("\\Device\\VcVolume8"),
        "not removed before the dismount sequence"
    );
    mm.take_log();
    links.remove_all(&objects, Some(&mm as &dyn MountManager));
    assert_eq!(objects.snapshot(), before);
    assert_eq!(mm.take_log(), ["removal \\Device\\VcVolume8"]);

    // No mount manager (never announced): removed at once, nothing handed back.
    let failed = Links::prepare(&DIRS, &names(8, Some('T'), 6))
        .unwrap()
        .establish_or_hand_back(&objects, None::<&dyn MountManager>)
        .unwrap_err();
    assert_eq!(failed.status, Status::InsufficientResources);
    assert!(failed.announced.is_none());
    assert_eq!(objects.snapshot(), before);
}

/// 100 mounts and dismounts on one letter, each volume a different one, with the unique id
/// `id_of` gives mount `n`; how many `\??\Volume{GUID}`, `#{GUID}` and letter entries the mount
/// manager's database holds afterwards.
fn database_after_100_mounts_on_v(id_of: impl Fn(u32) -> UniqueId) -> (usize, usize, usize) {
    let objects = Objects::default();
    let mm = MountMgr::new(&objects);
    for n in 0..100u32 {
        let v = VolumeNames::new(1000 + n, Some('V'), id_of(n)).unwrap();
        mm.attach(&v);
        let mut links = mount(&objects, Some(&mm), &v).expect("mounted");
        assert_eq!(
            objects.global_target("V:").as_deref(),
            Some(s(v.device_name()).as_str()),
            "mount {n} has V:"
        );
        links.remove_all(&objects, Some(&mm as &dyn MountManager));
        assert_eq!(objects.global_target("V:"), None, "dismount {n} removed V:");
    }
    let entries = mm.volume_entries.borrow().len();
    let no_letter = mm.no_letter.borrow().len();
    let letters = mm.database.borrow().len();
    (entries, no_letter, letters)
}

#[test]
fn w2_repeated_mounts_on_one_letter_leave_one_database_entry() {
    // The driver's choice (`UniqueId::for_mount`, as the control IOCTL makes it): the letter's
    // id, whatever fresh bytes each mount drew.
    let (entries, no_letter, letters) = database_after_100_mounts_on_v(|n| {
        UniqueId::for_mount(Some('V'), |_| false, || Ok([n as u8; 16])).unwrap()
    });
    assert_eq!(entries, 1, "one Volume{{GUID}} entry for V:'s id");
    assert!(no_letter <= 1, "at most one #{{GUID}} entry ({no_letter})");
    assert!(letters <= 1, "at most V:'s letter entry ({letters})");
    // The id is the letter's, in either case, and another letter's differs.
    assert_eq!(UniqueId::for_letter('v'), UniqueId::for_letter('V'));
    assert_ne!(UniqueId::for_letter('V'), UniqueId::for_letter('W'));
    assert_eq!(UniqueId::for_letter('V').as_bytes().len(), 24);
    assert!(UniqueId::for_letter('V')
        .as_bytes()
        .starts_with(b"vcdirect-volume-V"));
    // Without a letter the id is fresh each time (never announced, so never in the database).
    let a = UniqueId::for_mount(None, |_| false, || Ok([1; 16])).unwrap();
    let b = UniqueId::for_mount(None, |_| false, || Ok([2; 16])).unwrap();
    assert_ne!(a, b);
    assert_eq!(
        UniqueId::for_mount(None, |_| false, || Err(Status::InsufficientResources)),
        Err(Status::InsufficientResources)
    );
    // The letter's id while a live volume already answers it (one moved from V: to another
    // letter with mountvol): fresh bytes, so one id never belongs to two live volumes.
    let moved = UniqueId::for_letter('V');
    let c = UniqueId::for_mount(Some('V'), |id| *id == moved, || Ok([3; 16])).unwrap();
    assert_eq!(c, UniqueId::new([3; 16]));
}

#[test]
fn w2_the_model_bites_fresh_ids_per_mount_grow_the_database() {
    // A fresh id per mount with a letter (what the driver did before): a Volume{GUID} and a
    // #{GUID} entry per mount.
    let (entries, no_letter, _) = database_after_100_mounts_on_v(|n| UniqueId::new([n as u8; 16]));
    assert_eq!((entries, no_letter), (100, 100));
}
