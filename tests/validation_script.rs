//! scripts/validation-layer.sh (what the GPU scripts and CI count the layer's messages with) on a
//! headless run whose layer meets a fresh cache directory, as on a machine just set up: the
//! layer's message about its own shader validation cache ("Cannot open shader validation cache …
//! for reading (it may not exist yet)", UNASSIGNED-cache-file-error) is no message of the
//! program. Before (issue 33), it was counted as one and failed scripts/wgpu-cost.sh's validation
//! row on the H200.

mod common;
use common::*;

/// Source the script, make a settings file for `base` (`cache_on`: the layer's cache left on, as
/// before), run the app with `args` under it with XDG_CACHE_HOME a fresh directory, then
/// `vl_check`. Returns (vl_check's status, VL_SUMMARY).
fn checked_run(base: &std::path::Path, cache_on: bool, extra_setting: &str, args: &str) -> (i32, String) {
    let cache = base.with_extension("cache");
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache).unwrap();
    let script = format!(
        r#"set -u
. "$ROOT/scripts/validation-layer.sh"
vl_env "$BASE"
[ "$CACHE_ON" = 1 ] && sed -i '/VALIDATION_CACHE/d' "$BASE.vk_layer_settings.txt"
[ -n "$EXTRA" ] && echo "$EXTRA" >>"$BASE.vk_layer_settings.txt"
env "${{VL_ENV[@]}}" XDG_CACHE_HOME="$CACHE" "$BIN" {args} >/dev/null 2>"$BASE.stderr" || {{ cat "$BASE.stderr"; exit 3; }}
vl_check "$BASE"
rc=$?
echo "$VL_SUMMARY"
exit $rc"#
    );
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("ROOT", env!("CARGO_MANIFEST_DIR"))
        .env("BASE", base)
        .env("CACHE", &cache)
        .env("CACHE_ON", if cache_on { "1" } else { "0" })
        .env("EXTRA", extra_setting)
        .env("BIN", env!("CARGO_BIN_EXE_vkhip"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&cache);
    (o.status.code().unwrap_or(-1), format!("{}{}", stdout(&o), stderr(&o)).trim().to_string())
}

#[test]
fn the_layers_own_cache_messages_are_told_apart_from_the_programs() {
    let test = "the_layers_own_cache_messages_are_told_apart_from_the_programs";
    if !require(test, Component::ValidationLayer) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("vkhip-validation-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let args = "--headless --backend vulkan --frames 3 --size 64x64 --grid 32x32";

    // The settings vl_env writes: the layer keeps no cache file, so a fresh machine draws nothing.
    let (rc, summary) = checked_run(&dir.join("plain"), false, "", args);
    assert_eq!((rc, summary.as_str()), (0, "layer loaded, 0 validation messages"));

    // With the cache on (the settings before), the layer reports its missing cache file: listed
    // apart, not counted as the program's.
    let (rc, summary) = checked_run(&dir.join("cache"), true, "", args);
    assert_eq!(rc, 0, "{summary}");
    assert!(
        summary.starts_with("layer loaded, 0 validation messages (and 1 about the layer's own environment, not the program: UNASSIGNED-cache-file-error x1)"),
        "{summary}"
    );

    // A message the program causes still fails the check beside it (best practices on: the app's
    // headless run draws some, as CI's count check relies on).
    let best_practices = "khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT";
    let (rc, summary) = checked_run(&dir.join("both"), true, best_practices, args);
    assert_eq!(rc, 1, "{summary}");
    assert!(
        summary.contains("validation messages:") && summary.contains("UNASSIGNED-BestPractices"),
        "{summary}"
    );
    assert!(summary.contains("not the program: UNASSIGNED-cache-file-error x1"), "{summary}");
    std::fs::remove_dir_all(&dir).unwrap();
}
