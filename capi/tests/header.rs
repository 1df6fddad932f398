//! The committed header (include/vkhip.h) is what cbindgen makes of the crate now. A change to
//! the ABI without the header fails here; regenerate with
//!
//!     VKHIP_BLESS=1 cargo test -p vkhip-capi --test header

use std::path::Path;

#[test]
fn the_committed_header_is_what_cbindgen_generates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = match cbindgen::Config::from_file(dir.join("cbindgen.toml")) {
        Ok(c) => c,
        Err(e) => panic!("capi/cbindgen.toml: {e}"),
    };
    let mut generated = Vec::new();
    match cbindgen::Builder::new().with_crate(dir).with_config(config).generate() {
        Ok(bindings) => bindings.write(&mut generated),
        Err(e) => panic!("cbindgen could not read the crate: {e}"),
    }
    let path = dir.join("include/vkhip.h");
    if std::env::var_os("VKHIP_BLESS").is_some() {
        if let Err(e) = std::fs::write(&path, &generated) {
            panic!("{}: {e}", path.display());
        }
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    if committed != generated {
        let first = committed.iter().zip(&generated).position(|(a, b)| a != b);
        let line = first.map_or(0, |i| committed[..i].iter().filter(|&&c| c == b'\n').count() + 1);
        panic!(
            "{} is stale (it differs from what cbindgen generates from line {line} on); regenerate it with\n    VKHIP_BLESS=1 cargo test -p vkhip-capi --test header\nand commit it",
            path.display()
        );
    }
}
