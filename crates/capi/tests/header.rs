//! `include/accy.h` is what cbindgen generates from `src/` with `cbindgen.toml`: this test
//! generates it afresh and fails, with a diff and the command that regenerates it, when the
//! checked-in file differs. `ACCY_BLESS=1` (which `cargo xtask capi-header` sets) writes the
//! fresh header instead.

use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The header cbindgen generates from the sources now.
fn generate() -> String {
    let dir = crate_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).unwrap();
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen could not read src/");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).unwrap()
}

/// The first lines where `old` and `new` differ, for the failure message.
fn first_difference(old: &str, new: &str) -> String {
    let (old, new): (Vec<_>, Vec<_>) = (old.lines().collect(), new.lines().collect());
    let at = (0..old.len().max(new.len()))
        .find(|&i| old.get(i) != new.get(i))
        .unwrap_or(0);
    let show = |lines: &[&str]| {
        lines
            .iter()
            .skip(at)
            .take(5)
            .copied()
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "first difference at line {}:\n--- checked in\n{}\n--- generated\n{}",
        at + 1,
        show(&old),
        show(&new)
    )
}

#[test]
fn the_checked_in_header_is_what_cbindgen_generates() {
    let fresh = generate();
    let path: &Path = &crate_dir().join("include/accy.h");
    if std::env::var_os("ACCY_BLESS").is_some() {
        std::fs::write(path, &fresh).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "crates/capi/include/accy.h is out of date with crates/capi/src; regenerate it with \
         `cargo xtask capi-header` (or `ACCY_BLESS=1 cargo test -p accy-capi --test header`) \
         and commit it.\n{}",
        first_difference(&checked_in, &fresh)
    );
}

#[test]
fn the_header_leaves_the_test_hook_out_and_declares_every_export() {
    let header = generate();
    assert!(!header.contains("accy_test_panic"));
    let sources = [
        "lib.rs",
        "status.rs",
        "session.rs",
        "program.rs",
        "invoke.rs",
    ];
    let mut exported = 0;
    for file in sources {
        let text = std::fs::read_to_string(crate_dir().join("src").join(file)).unwrap();
        for line in text.lines() {
            let Some(rest) = line.split("extern \"C\" fn ").nth(1) else {
                continue;
            };
            let name = rest.split('(').next().unwrap();
            if name == "accy_test_panic" {
                continue;
            }
            exported += 1;
            assert!(
                header.contains(&format!("{name}(")),
                "{name} is not in accy.h"
            );
        }
    }
    assert!(exported >= 16, "found only {exported} exported functions");
}
