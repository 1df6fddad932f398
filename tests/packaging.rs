//! Every package of the workspace declares `MIT OR Apache-2.0` and ships both licence texts: the
//! list of files `cargo package` would publish holds LICENSE-MIT and LICENSE-APACHE, and they are
//! the repository root's. Before (issue 33), no package shipped either. No GPU; cargo only lists
//! the files (no build, no network).

use std::path::Path;
use std::process::Command;

#[test]
fn every_package_ships_both_licence_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // vkhip-profile cannot be packaged yet (its manifest names a README it does not have): its
    // directory holds both files, which cargo packages with everything else there.
    for licence in ["LICENSE-MIT", "LICENSE-APACHE"] {
        let text = std::fs::read_to_string(root.join("crates/vkhip-profile").join(licence)).unwrap();
        assert_eq!(text, std::fs::read_to_string(root.join(licence)).unwrap(), "vkhip-profile's {licence}");
    }
    for (package, dir) in [("vkhip", "."), ("vkhip-interop", "crates/vkhip-interop")] {
        let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("license = \"MIT OR Apache-2.0\"")
                || manifest.contains("license.workspace = true"),
            "{package} declares another licence"
        );
        let out = Command::new(env!("CARGO"))
            .current_dir(root)
            .args(["package", "--list", "--allow-dirty", "--offline", "-p", package])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{package}: {}", String::from_utf8_lossy(&out.stderr));
        for licence in ["LICENSE-MIT", "LICENSE-APACHE"] {
            assert!(stdout.lines().any(|l| l == licence), "{package} does not package {licence}:\n{stdout}");
            let text = std::fs::read_to_string(root.join(dir).join(licence)).unwrap();
            assert_eq!(text, std::fs::read_to_string(root.join(licence)).unwrap(), "{dir}/{licence}");
        }
    }
    let mit = std::fs::read_to_string(root.join("LICENSE-MIT")).unwrap();
    assert!(mit.starts_with("MIT License") && mit.contains("Copyright (c) the vkhip developers"), "{mit}");
    let apache = std::fs::read_to_string(root.join("LICENSE-APACHE")).unwrap();
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
}
