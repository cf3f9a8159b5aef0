//! W14: the ARM64 layout figures committed beside the glue (`src/wdm/arm64-layouts.tsv`, which
//! `wdm/layout_arm64.rs` asserts at compile time) are well formed and still equal the shared
//! measurement (`../shared/docs/arm64-layouts.tsv` next to the repository, or the file named by
//! `VCDIRECT_ARM64_LAYOUTS`) when that file is present.

use std::collections::BTreeMap;
use std::path::PathBuf;

fn parse(text: &str) -> Result<BTreeMap<String, usize>, String> {
    let mut figures = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (name, value) = line
            .split_once('\t')
            .ok_or(format!("line {}: no tab", n + 1))?;
        let value: usize = value
            .trim()
            .parse()
            .map_err(|_| format!("line {}: {value:?} is not a byte count", n + 1))?;
        if figures.insert(name.to_string(), value).is_some() {
            return Err(format!("line {}: {name} twice", n + 1));
        }
    }
    Ok(figures)
}

fn committed() -> BTreeMap<String, usize> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/wdm/arm64-layouts.tsv");
    parse(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn w14_committed_arm64_figures_are_well_formed() {
    let figures = committed();
    assert!(figures.len() >= 200, "{} figures", figures.len());
    for (name, value) in &figures {
        assert!(
            name.starts_with("size_") || name.starts_with("align_") || name.starts_with("off_"),
            "{name}"
        );
        if name.starts_with("align_") {
            assert!(value.is_power_of_two(), "{name} = {value}");
        }
    }
    assert_eq!(figures["off_IRP__Tail_Overlay_CurrentStackLocation"], 184);
    assert_eq!(figures["size_IO_STACK_LOCATION"], 72);
}

#[test]
fn w14_committed_arm64_figures_match_the_shared_measurement() {
    let shared = std::env::var_os("VCDIRECT_ARM64_LAYOUTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/docs/arm64-layouts.tsv")
        });
    let Ok(text) = std::fs::read_to_string(&shared) else {
        eprintln!("shared arm64-layouts.tsv not present: only the committed copy is checked");
        return;
    };
    assert_eq!(
        committed(),
        parse(&text).unwrap(),
        "src/wdm/arm64-layouts.tsv differs from the shared measurement"
    );
}

#[test]
fn w14_a_changed_figure_is_detected() {
    let mut text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/wdm/arm64-layouts.tsv"),
    )
    .unwrap();
    text = text.replace("size_IO_STACK_LOCATION\t72", "size_IO_STACK_LOCATION\t80");
    assert_ne!(parse(&text).unwrap(), committed());
    assert!(parse("size_X\tlots\n").is_err());
}
