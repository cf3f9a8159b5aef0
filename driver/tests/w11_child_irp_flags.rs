//! W11: what the kernel glue puts in a child IRP's Flags. A child read or write goes to the
//! host handle's device (IoGetRelatedDeviceObject: RAW and any minifilters above the disk),
//! so it carries IRP_NOCACHE and nothing else: the upper request's IRP_PAGING_IO or
//! IRP_SYNCHRONOUS_PAGING_IO would claim paging I/O for a section the DASD file object does
//! not have. The glue is built only for Windows targets, so this reads its source: the one
//! assignment of Flags, no paging flag anywhere in the host module's code, and the priority
//! hint set after Flags (the I/O manager keeps it in Flags' bits), at least normal.

use std::path::PathBuf;

fn code_lines(path: &str) -> Vec<(usize, String)> {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.split("//").next().unwrap_or("").to_string()))
        .filter(|(_, l)| !l.trim().is_empty())
        .collect()
}

/// The findings of the rule over one file's code: paging flags named, and every assignment
/// to an IRP's Flags that is not exactly IRP_NOCACHE.
fn findings(lines: &[(usize, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (n, l) in lines {
        if l.contains("IRP_PAGING_IO") || l.contains("IRP_SYNCHRONOUS_PAGING_IO") {
            out.push(format!("line {n} names a paging flag: {}", l.trim()));
        }
        if l.contains(".Flags")
            && (l.contains("|=") || l.contains(" = "))
            && !l.contains("next.Flags")
        {
            let value = l
                .split('=')
                .nth(1)
                .unwrap_or("")
                .trim()
                .trim_end_matches(';');
            if value != "IRP_NOCACHE" {
                out.push(format!("line {n} sets Flags to {value}"));
            }
        }
    }
    out
}

#[test]
fn w11_child_irps_carry_no_paging_flag_and_keep_their_priority_hint() {
    for path in [
        "src/wdm/host/child_irp.rs",
        "src/wdm/host/mod.rs",
        "src/wdm/host/product.rs",
        "src/wdm/host/wine.rs",
    ] {
        let lines = code_lines(path);
        let found = findings(&lines);
        assert!(found.is_empty(), "{path}: {found:?}");
    }
    let child = code_lines("src/wdm/host/child_irp.rs");
    let sets: Vec<_> = child
        .iter()
        .filter(|(_, l)| l.contains("irp_ref.Flags = IRP_NOCACHE"))
        .collect();
    assert_eq!(
        sets.len(),
        1,
        "the child IRP's Flags are set once, to IRP_NOCACHE"
    );
    // The I/O manager keeps the priority hint in Flags' bits: the hint is set after Flags, or
    // the assignment wipes it; and never below normal (a class driver's idle queue would hold
    // a slot).
    let flags_line = sets[0].0;
    let hint: Vec<_> = child
        .iter()
        .filter(|(_, l)| l.contains("IoSetIoPriorityHint(irp"))
        .collect();
    assert_eq!(hint.len(), 1, "one call sets the child's hint");
    assert!(
        hint[0].0 > flags_line,
        "IoSetIoPriorityHint (line {}) must come after Flags = IRP_NOCACHE (line {flags_line})",
        hint[0].0
    );
    assert!(
        child
            .iter()
            .any(|(_, l)| l.contains(".max(IO_PRIORITY_NORMAL)")),
        "the child's hint is at least IoPriorityNormal"
    );
}

#[test]
fn w11_the_rule_catches_a_paging_flag_copied_into_a_child() {
    let planted = [
        (1, "irp_ref.Flags = IRP_NOCACHE;".to_string()),
        (2, "irp_ref.Flags |= IRP_PAGING_IO;".to_string()),
        (3, "irp_ref.Flags = IRP_NOCACHE | upper_flags;".to_string()),
    ];
    let found = findings(&planted);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].contains("paging flag"));
    assert!(found[2].contains("IRP_NOCACHE | upper_flags"));
}
