//! W14: the ARM64 layout figures committed beside the glue (`src/wdm/arm64-layouts.tsv`, which
//! `wdm/layout_arm64.rs` asserts at compile time in the kernel builds) checked on Linux, where
//! the kernel glue is never compiled.
//!
//! The figures were measured once with Microsoft's WDK 10.0.22621 kernel headers compiled for
//! `aarch64-pc-windows-msvc` (sizes, alignments and field offsets; docs/arm64.md, "Layout
//! figures"); nothing in the repository can measure them again. So these tests pin them: the
//! file must be in the exact form `layout_arm64.rs`'s `const fn` reads, consistent in itself,
//! equal to the measured rows (a digest and a few figures spelled out below), and hold every
//! figure `layout_arm64.rs` asks for. A changed, dropped or added figure fails here.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The committed figures file.
const FIGURES: &str = include_str!("../src/wdm/arm64-layouts.tsv");
/// The module that asserts them.
const LAYOUT_ARM64: &str = include_str!("../src/wdm/layout_arm64.rs");

/// How many figures the measurement has.
const MEASURED_COUNT: usize = 225;
/// FNV-1a (64-bit) of every `name<TAB>bytes\n` row in name order: the measurement as committed.
/// Change it only together with the rows, after a new measurement (docs/arm64.md).
const MEASURED_DIGEST: u64 = 0x36c5_c117_f33c_7eb8;

/// Figures spelled out, independently of the digest: the examples docs/arm64.md gives and the
/// ones where ARM64 differs from x64.
const SPOT_FIGURES: &[(&str, usize)] = &[
    ("size_IRP", 208),
    ("off_IRP__CancelRoutine", 104),
    ("off_IRP__Tail_Overlay_CurrentStackLocation", 184),
    ("size_IO_STACK_LOCATION", 72),
    ("off_IO_STACK_LOCATION__FileObject", 48),
    ("off_IO_STACK_LOCATION__CompletionRoutine", 56),
    ("off_IO_STACK_LOCATION__Context", 64),
    ("off_DEVICE_OBJECT__DeviceExtension", 64),
    ("off_DRIVER_OBJECT__MajorFunction", 112),
    ("off_MDL__MappedSystemVa", 24),
    ("align_GENERAL_LOOKASIDE", 128),
    ("align_NPAGED_LOOKASIDE_LIST", 128),
    ("size_XSTATE_SAVE", 4),
];

/// The figures of `text`, refused unless every line is either a `#` comment or exactly
/// `name<TAB>digits` (the form `layout_arm64.rs`'s `figure` reads: a name at the start of a
/// line, one tab, ASCII digits and nothing after them), the names are `size_<T>`, `align_<T>`
/// or `off_<T>__<field>` without repeats, and the figures agree with each other.
fn parse(text: &str) -> Result<BTreeMap<String, usize>, String> {
    let mut figures = BTreeMap::new();
    if !text.ends_with('\n') {
        return Err("the last line has no newline".into());
    }
    if text.contains('\r') {
        return Err("a carriage return: lines end with \\n only".into());
    }
    for (n, line) in text.lines().enumerate() {
        let at = |what: String| format!("line {}: {what}", n + 1);
        if line.starts_with('#') {
            continue;
        }
        let (name, value) = line.split_once('\t').ok_or(at("no tab".into()))?;
        let kind_ok = name.starts_with("size_")
            || name.starts_with("align_")
            || (name.starts_with("off_") && name.contains("__"));
        if !kind_ok || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(at(format!(
                "{name:?} is not size_<T>, align_<T> or off_<T>__<field>"
            )));
        }
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(at(format!("{value:?} is not a byte count")));
        }
        let value: usize = value
            .parse()
            .map_err(|_| at(format!("{value:?} too large")))?;
        if figures.insert(name.to_string(), value).is_some() {
            return Err(at(format!("{name} twice")));
        }
    }
    consistent(&figures)?;
    Ok(figures)
}

/// Sizes and alignments come in pairs, an alignment is a power of two, a size is a multiple of
/// its alignment, and a field lies inside its structure when the structure's size is known.
fn consistent(figures: &BTreeMap<String, usize>) -> Result<(), String> {
    for (name, &value) in figures {
        if let Some(t) = name.strip_prefix("size_") {
            let align = figures
                .get(&format!("align_{t}"))
                .ok_or(format!("{name} without align_{t}"))?;
            if value == 0 || value % align != 0 {
                return Err(format!(
                    "{name} = {value} is not a multiple of its alignment {align}"
                ));
            }
        } else if let Some(t) = name.strip_prefix("align_") {
            if !figures.contains_key(&format!("size_{t}")) {
                return Err(format!("{name} without size_{t}"));
            }
            if !value.is_power_of_two() {
                return Err(format!("{name} = {value} is not a power of two"));
            }
        } else if let Some((t, field)) = name.strip_prefix("off_").and_then(|r| r.split_once("__"))
        {
            if t.is_empty() || field.is_empty() {
                return Err(format!("{name}: no structure or no field"));
            }
            if let Some(&size) = figures.get(&format!("size_{t}")) {
                if value >= size {
                    return Err(format!("{name} = {value} lies outside size_{t} = {size}"));
                }
            }
        }
    }
    Ok(())
}

/// FNV-1a (64-bit) over the rows in name order.
fn digest(figures: &BTreeMap<String, usize>) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, value) in figures {
        for byte in format!("{name}\t{value}\n").bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// `Ok` when `text` holds exactly the measured figures.
fn check_measurement(text: &str) -> Result<(), String> {
    let figures = parse(text)?;
    for &(name, value) in SPOT_FIGURES {
        match figures.get(name) {
            Some(&v) if v == value => {}
            other => return Err(format!("{name} is {other:?}, measured {value}")),
        }
    }
    if figures.len() != MEASURED_COUNT {
        return Err(format!(
            "{} figures, measured {MEASURED_COUNT}",
            figures.len()
        ));
    }
    let got = digest(&figures);
    if got != MEASURED_DIGEST {
        return Err(format!(
            "digest {got:#018x}, measured {MEASURED_DIGEST:#018x}: a figure changed; change one \
             only with a new measurement (docs/arm64.md, \"Layout figures\")"
        ));
    }
    Ok(())
}

/// Every figure name `layout_arm64.rs` looks up: `offset!("name": ..)`, `figure("name")`, and
/// `size_<T>`/`align_<T>` for each type listed in a `size_align!(..)` call.
fn names_the_glue_asserts(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    for marker in ["offset!(\"", "figure(\""] {
        for (at, _) in source.match_indices(marker) {
            let rest = &source[at + marker.len()..];
            names.push(rest[..rest.find('"').unwrap()].to_string());
        }
    }
    for (at, _) in source.match_indices("size_align!(") {
        let rest = &source[at + "size_align!(".len()..];
        let list = &rest[..rest.find(')').unwrap()];
        for t in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            names.push(format!("size_{t}"));
            names.push(format!("align_{t}"));
        }
    }
    names
}

#[test]
fn w14_committed_arm64_figures_are_well_formed() {
    let figures = parse(FIGURES).unwrap_or_else(|e| panic!("src/wdm/arm64-layouts.tsv: {e}"));
    assert!(figures.len() >= 200, "{} figures", figures.len());
    // The header comes first and says where the figures come from.
    let header: Vec<&str> = FIGURES.lines().take_while(|l| l.starts_with('#')).collect();
    assert!(!header.is_empty(), "no header");
    let header = header.join("\n");
    for needed in ["10.0.22621", "aarch64-pc-windows-msvc", "docs/arm64.md"] {
        assert!(header.contains(needed), "the header does not name {needed}");
    }
    let doc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/arm64.md");
    let doc = std::fs::read_to_string(&doc).unwrap();
    assert!(
        doc.contains("\n## Layout figures\n"),
        "docs/arm64.md has no \"Layout figures\""
    );
}

#[test]
fn w14_committed_arm64_figures_equal_the_measurement() {
    check_measurement(FIGURES).unwrap_or_else(|e| panic!("src/wdm/arm64-layouts.tsv: {e}"));
}

#[test]
fn w14_every_figure_the_glue_asserts_is_in_the_table() {
    let figures = parse(FIGURES).unwrap();
    let names = names_the_glue_asserts(LAYOUT_ARM64);
    // The parse above must have found the assertions, not silently nothing.
    assert!(
        names.len() >= 150,
        "only {} names found in layout_arm64.rs",
        names.len()
    );
    let missing: Vec<&String> = names.iter().filter(|n| !figures.contains_key(*n)).collect();
    assert!(
        missing.is_empty(),
        "layout_arm64.rs asserts figures the table lacks: {missing:?}"
    );
}

#[test]
fn w14_a_changed_figure_is_detected() {
    check_measurement(FIGURES).unwrap();
    let edits: [(&str, String); 6] = [
        (
            "one figure changed",
            FIGURES.replace(
                "size_IO_STACK_LOCATION\t72\n",
                "size_IO_STACK_LOCATION\t80\n",
            ),
        ),
        (
            "a figure outside the spot list changed",
            FIGURES.replace("off_MDL__ByteCount\t40\n", "off_MDL__ByteCount\t36\n"),
        ),
        (
            "a row dropped",
            FIGURES.replace("off_KSEMAPHORE__Limit\t24\n", ""),
        ),
        ("a row added", format!("{FIGURES}off_KEVENT__Other\t8\n")),
        (
            "a name changed",
            FIGURES.replace("off_FILE_OBJECT__Busy\t", "off_FILE_OBJECT__Waiters\t"),
        ),
        (
            "two figures swapped",
            FIGURES
                .replace("off_MDL__Size\t8\n", "off_MDL__Size\t10\n")
                .replace("off_MDL__MdlFlags\t10\n", "off_MDL__MdlFlags\t8\n"),
        ),
    ];
    for (what, text) in &edits {
        assert_ne!(text, FIGURES, "{what}: the edit did not apply");
        assert!(check_measurement(text).is_err(), "{what}: not detected");
    }
}

#[test]
fn w14_malformed_figures_are_refused() {
    let good = "size_X\t8\nalign_X\t8\noff_X__A\t0\n";
    assert!(parse(good).is_ok());
    let bad = [
        "size_X\tlots\nalign_X\t8\n",
        "size_X\t8 \nalign_X\t8\n",
        "size_X\t8\r\nalign_X\t8\r\n",
        "size_X 8\nalign_X\t8\n",
        " # comment\nsize_X\t8\nalign_X\t8\n",
        "size_X\t8\nalign_X\t8\n\n",
        "size_X\t8\nalign_X\t8",
        "size_X\t8\nalign_X\t8\nsize_X\t8\n",
        "size_X\t8\n",
        "align_X\t8\n",
        "size_X\t12\nalign_X\t8\n",
        "size_X\t12\nalign_X\t3\n",
        "size_X\t8\nalign_X\t8\noff_X__A\t8\n",
        "size_X\t8\nalign_X\t8\noff_X_A\t0\n",
        "size_X\t8\nalign_X\t8\nsize-Y\t8\n",
    ];
    for text in bad {
        assert!(parse(text).is_err(), "accepted {text:?}");
    }
}
