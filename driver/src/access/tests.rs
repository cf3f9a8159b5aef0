//! W4: the policy table, every control operation x {owner, other user, administrator, system}.

use super::*;

/// The user who mounted the volume (S-1-5-21-1-2-3-1001).
fn owner() -> Caller {
    Caller::new(Sid::new(5, &[21, 1, 2, 3, 1001]), false)
}

/// Another standard user (S-1-5-21-1-2-3-1002).
fn other() -> Caller {
    Caller::new(Sid::new(5, &[21, 1, 2, 3, 1002]), false)
}

/// An elevated administrator (S-1-5-21-1-2-3-500).
fn admin() -> Caller {
    Caller::new(Sid::new(5, &[21, 1, 2, 3, 500]), true)
}

/// LocalSystem, whose token the glue may or may not report as administrator.
fn system() -> Caller {
    Caller::new(Sid::local_system(), false)
}

const OK: Result<(), Status> = Ok(());
const DENIED: Result<(), Status> = Err(ACCESS_DENIED);

#[test]
fn w4_policy_table() {
    let vol_owner = owner().sid;
    // (operation, owner, other user, administrator, system)
    let table: [(Operation<'_>, [Result<(), Status>; 4]); 9] = [
        (Operation::Mount, [OK, OK, OK, OK]),
        (Operation::Dismount(&vol_owner), [OK, DENIED, OK, OK]),
        (Operation::DismountAll, [OK, OK, OK, OK]),
        (Operation::Status(&vol_owner), [OK, DENIED, OK, OK]),
        (Operation::List, [OK, OK, OK, OK]),
        (Operation::GatesGet, [OK, OK, OK, OK]),
        (Operation::GatesSet, [DENIED, DENIED, OK, OK]),
        (Operation::GatesReload, [DENIED, DENIED, OK, OK]),
        (Operation::EraseKeys, [DENIED, DENIED, OK, OK]),
    ];
    let callers = [owner(), other(), admin(), system()];
    for (op, expected) in table {
        for (caller, want) in callers.iter().zip(expected) {
            assert_eq!(check(caller, op), want, "{op:?} by {caller:?}");
        }
    }
}

#[test]
fn w4_access_denied_is_the_ntstatus() {
    assert_eq!(ACCESS_DENIED.ntstatus(), 0xC000_0022);
}

#[test]
fn w4_list_and_dismount_all_see_only_own_volumes_unless_privileged() {
    let mine = owner().sid;
    let theirs = other().sid;
    assert!(owner().sees(&mine));
    assert!(!owner().sees(&theirs));
    assert!(!other().sees(&mine));
    assert!(admin().sees(&mine) && admin().sees(&theirs));
    assert!(system().sees(&mine) && system().sees(&theirs));
}

#[test]
fn w4_system_follows_from_the_sid() {
    assert!(system().system && !system().administrator);
    assert!(!admin().system && !owner().system);
    // A non-administrator whose SID merely resembles system's is not system.
    assert!(!Caller::new(Sid::new(5, &[18, 0]), false).privileged());
}

#[test]
fn w4_sid_binary_form() {
    let s = Sid::local_system();
    assert_eq!(s.as_bytes(), &[1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0]);
    assert_eq!(Sid::from_bytes(s.as_bytes()), Ok(s));
    assert_eq!(
        Sid::administrators().as_bytes(),
        &[1, 2, 0, 0, 0, 0, 0, 5, 32, 0, 0, 0, 0x20, 2, 0, 0]
    );
    let max = Sid::new(5, &[7; 15]);
    assert_eq!(max.as_bytes().len(), MAX_SID_LENGTH);
    assert!(Sid::from_bytes(max.as_bytes()).is_ok());
    // Wrong revision, a count over 15, a length that disagrees with the count, empty.
    for bad in [
        &[2, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0][..],
        &[1, 16, 0, 0, 0, 0, 0, 5][..],
        &[1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0][..],
        &[1, 0, 0, 0, 0, 0, 0, 5, 0][..],
        &[][..],
    ] {
        assert_eq!(Sid::from_bytes(bad), Err(INVALID_SID), "{bad:?}");
    }
}

#[test]
fn w4_identification_level_caller_is_refused() {
    use ImpersonationLevel::*;
    // An identification (or anonymous) token of an administrator must not pass as one.
    for level in [Anonymous, Identification] {
        assert_eq!(
            Token::Impersonation(level).usable(),
            Err(BAD_IMPERSONATION_LEVEL),
            "{level:?}"
        );
    }
    for level in [Impersonation, Delegation] {
        assert_eq!(Token::Impersonation(level).usable(), Ok(()), "{level:?}");
    }
    assert_eq!(Token::Primary.usable(), Ok(()));
    assert_eq!(BAD_IMPERSONATION_LEVEL.ntstatus(), 0xC000_00A5);
    // The SECURITY_IMPERSONATION_LEVEL values; anything else is the lowest level.
    let raw = [
        (0, Anonymous),
        (1, Identification),
        (2, Impersonation),
        (3, Delegation),
    ];
    for (value, level) in raw {
        assert_eq!(ImpersonationLevel::from_raw(value), level);
    }
    for value in [-1, 4, i64::from(u32::MAX)] {
        assert_eq!(
            Token::Impersonation(ImpersonationLevel::from_raw(value)).usable(),
            Err(BAD_IMPERSONATION_LEVEL),
            "{value}"
        );
    }
}
