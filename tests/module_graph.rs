//! Arrows point down: no import circle between modules or between files, in the app, the interop
//! crate or the profile crate.
//!
//! Every `crate::a::b…` path in a module's code (its `use` items and its expressions and types)
//! is an arrow from that module to `a` (between top-level modules) and, inside one top-level
//! module, from a child to its sibling `a::b`. Both graphs must be acyclic, and the interop crate
//! must not name the app. Between files, the same paths are arrows from the file that names them
//! to the file that defines the module they reach (the longest prefix that is a file), test
//! modules (`#[cfg(test)]`) left out: that graph must be acyclic too, at any depth. A directory
//! module's (`mod.rs`, `lib.rs`, `main.rs`) arrows to its own children are its declarations and
//! re-exports, not uses, and do not count. No GPU, no Vulkan: this reads the sources with `syn`.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::{self, Visit};

/// A module's path from the crate root, from its file: `src/compute/cuda/mod.rs` → [compute, cuda].
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// Every path rooted at `crate`, `self` or `super` in a token stream (macros included), as its
/// segments from the crate root; `here` is the module the tokens are in.
fn crate_paths(tokens: TokenStream, here: &[String], out: &mut Vec<Vec<String>>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let colon = |t: Option<&TokenTree>| matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == ':');
    let mut i = 0;
    while i < trees.len() {
        let root = match &trees[i] {
            TokenTree::Group(g) => {
                crate_paths(g.stream(), here, out);
                None
            }
            _ if i > 0 && colon(trees.get(i - 1)) => None,
            TokenTree::Ident(id) if id == "crate" => Some(Vec::new()),
            TokenTree::Ident(id) if id == "self" => Some(here.to_vec()),
            TokenTree::Ident(id) if id == "super" => Some(here[..here.len().saturating_sub(1)].to_vec()),
            _ => None,
        };
        let Some(mut path) = root else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        let mut segments = 0;
        while colon(trees.get(j)) && colon(trees.get(j + 1)) {
            match trees.get(j + 2) {
                Some(TokenTree::Ident(id)) if id == "super" => {
                    path.pop();
                }
                Some(TokenTree::Ident(id)) => path.push(id.to_string()),
                // `super::*`: the module itself.
                Some(TokenTree::Punct(p)) if p.as_char() == '*' => {
                    segments += 1;
                    j += 3;
                    break;
                }
                // `crate::{a, b::c}`: each leaf of the group.
                Some(TokenTree::Group(g)) => {
                    use_group(g.stream(), &path, out);
                    segments = 0;
                    j += 3;
                    break;
                }
                _ => break,
            }
            segments += 1;
            j += 3;
        }
        if segments > 0 && !path.is_empty() {
            out.push(path);
        }
        i = j;
    }
}

/// The paths of a `{a, b::c}` use group under `prefix`.
fn use_group(tokens: TokenStream, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut current = prefix.to_vec();
    for t in tokens {
        match t {
            TokenTree::Ident(id) => current.push(id.to_string()),
            TokenTree::Group(g) => use_group(g.stream(), &current, out),
            TokenTree::Punct(p) if p.as_char() == ',' => {
                if current.len() > prefix.len() {
                    out.push(std::mem::replace(&mut current, prefix.to_vec()));
                }
                current = prefix.to_vec();
            }
            _ => {}
        }
    }
    if current.len() > prefix.len() {
        out.push(current);
    }
}

/// The paths a file names, with the module each use sits in (inline modules included; test
/// modules too unless `skip_tests`).
struct Paths {
    here: Vec<String>,
    found: Vec<Vec<String>>,
    skip_tests: bool,
}

/// `#[cfg(test)]` (or `#[cfg(all(test, …))]`) among `attrs`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && quote::ToTokens::to_token_stream(&a.meta)
                .to_string()
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == "test")
    })
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if self.skip_tests && is_test_only(&item.attrs) {
            return;
        }
        self.here.push(item.ident.to_string());
        visit::visit_item_mod(self, item);
        self.here.pop();
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        crate_paths(quote::ToTokens::to_token_stream(&item.tree), &self.here, &mut self.found);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        crate_paths(quote::ToTokens::to_token_stream(path), &self.here, &mut self.found);
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        crate_paths(mac.tokens.clone(), &self.here, &mut self.found);
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Arrows between modules at one level: `level` 1 = top-level modules, 2 = children of one
/// top-level module (siblings), each arrow labelled with a file that makes it.
fn arrows(root: &Path, level: usize) -> BTreeMap<(String, String), String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let module = module_of(root, &file);
        if module.len() < level {
            continue;
        }
        let source = std::fs::read_to_string(&file).unwrap();
        let parsed = syn::parse_file(&source).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut paths = Paths { here: module.clone(), found: Vec::new(), skip_tests: false };
        paths.visit_file(&parsed);
        for path in paths.found {
            if path.len() < level || path[..level - 1] != module[..level - 1] {
                continue;
            }
            let (from, to) = (module[..level].join("::"), path[..level].join("::"));
            if from != to {
                out.entry((from, to)).or_insert_with(|| file.display().to_string());
            }
        }
    }
    out
}

/// A cycle in the graph, if any, as the modules around it.
fn find_cycle(edges: &BTreeMap<(String, String), String>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    fn dfs<'a>(
        n: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|&s| s == n) {
            let mut cycle: Vec<String> = stack[at..].iter().map(|s| s.to_string()).collect();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if !done.insert(n) {
            return None;
        }
        stack.push(n);
        for &m in next.get(n).into_iter().flatten() {
            if let Some(c) = dfs(m, next, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    next.keys().find_map(|&n| dfs(n, &next, &mut Vec::new(), &mut done))
}

/// Arrows between the files under `root` (one crate's sources): from each file to the file of
/// every module it names (the longest prefix of the path that is a file), its test modules left
/// out; a directory module's arrows to its own children (declarations, re-exports) left out.
/// Each arrow is labelled with the first path that makes it.
fn file_arrows(root: &Path) -> BTreeMap<(String, String), String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> =
        files.iter().map(|f| (module_of(root, f), f.clone())).collect();
    let name = |m: &[String]| modules[m].strip_prefix(root).unwrap().display().to_string();
    let mut out = BTreeMap::new();
    for (module, file) in &modules {
        let source = std::fs::read_to_string(file).unwrap();
        let parsed = syn::parse_file(&source).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut paths = Paths { here: module.clone(), found: Vec::new(), skip_tests: true };
        paths.visit_file(&parsed);
        let directory = matches!(file.file_stem().and_then(|s| s.to_str()), Some("mod" | "lib" | "main"));
        for path in paths.found {
            let Some(target) = (0..=path.len()).rev().map(|n| &path[..n]).find(|p| modules.contains_key(*p))
            else {
                continue;
            };
            let own_child =
                directory && target.len() == module.len() + 1 && target[..module.len()] == module[..];
            if target != &module[..] && !own_child {
                out.entry((name(module), name(target))).or_insert_with(|| path.join("::"));
            }
        }
    }
    out
}

fn assert_acyclic(root: &Path, level: usize) {
    report_cycle(root, &arrows(root, level));
}

/// Fail with the circle, each arrow with what makes it, if `edges` have one.
fn report_cycle(root: &Path, edges: &BTreeMap<(String, String), String>) {
    if let Some(cycle) = find_cycle(edges) {
        let why: Vec<String> = cycle
            .windows(2)
            .map(|w| format!("{} → {} ({})", w[0], w[1], edges[&(w[0].clone(), w[1].clone())]))
            .collect();
        panic!("import circle under {}:\n  {}", root.display(), why.join("\n  "));
    }
}

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_import_circle_between_the_apps_modules() {
    assert_acyclic(&manifest().join("src"), 1);
    assert_acyclic(&manifest().join("src"), 2);
}

/// Before: src/app/matrix/layout.rs and plot.rs imported each other, which the module levels
/// above (top-level modules, and siblings under one top-level module) did not see; and
/// python/src's buffer.rs, device.rs and profile.rs named each other in a circle, which no root
/// here covered (the doors are crates of the workspace too).
#[test]
fn no_import_circle_between_any_files_of_any_crate() {
    let roots = ["src", "crates/vkhip-interop/src", "crates/vkhip-profile/src", "python/src", "capi/src"];
    for root in roots {
        assert!(manifest().join(root).is_dir(), "{root}: not a folder (moved? name it here)");
    }
    for root in roots.iter().map(|r| manifest().join(r)) {
        report_cycle(&root, &file_arrows(&root));
    }
}

#[test]
fn no_import_circle_in_the_interop_crate_and_no_arrow_up_to_the_app() {
    let root = manifest().join("crates/vkhip-interop/src");
    assert_acyclic(&root, 1);
    assert_acyclic(&root, 2);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        assert!(!source.contains("vkhip::"), "{} names the app crate", file.display());
    }
}

#[test]
fn no_module_below_the_cli_knows_clap() {
    let mut files = Vec::new();
    for dir in ["compute", "sync", "profile", "vk"] {
        rust_files(&manifest().join("src").join(dir), &mut files);
    }
    rust_files(&manifest().join("crates/vkhip-interop/src"), &mut files);
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        assert!(!source.contains("clap"), "{} knows clap", file.display());
    }
}

/// The file graph on a small crate written here: a circle of two files deep in a module is found,
/// a directory module re-exporting its children and the children naming their parent is not
/// one, and neither are test modules.
#[test]
fn the_file_checker_finds_a_circle_between_two_files_at_any_depth() {
    let root = std::env::temp_dir().join(format!("vkhip-module-graph-{}", std::process::id()));
    let write = |file: &str, text: &str| {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod app; pub use app::Top;");
    write("app/mod.rs", "pub mod deep; pub struct Top; pub use deep::a::A;");
    write("app/deep/mod.rs", "pub mod a; pub mod b; use super::Top;");
    write("app/deep/a.rs", "use super::b::B; pub struct A(B, crate::Top);");
    write("app/deep/b.rs", "pub struct B; #[cfg(test)] mod tests { use super::super::a::A; fn f(_: A) {} }");
    let edges = file_arrows(&root);
    assert_eq!(find_cycle(&edges), None, "{edges:?}");
    assert!(edges.contains_key(&("app/deep/a.rs".into(), "app/deep/b.rs".into())), "{edges:?}");
    assert!(edges.contains_key(&("app/deep/a.rs".into(), "lib.rs".into())), "{edges:?}");
    assert!(!edges.contains_key(&("app/mod.rs".into(), "app/deep/mod.rs".into())), "{edges:?}");
    // b names a through a glob of its parent's child: the circle is found.
    write("app/deep/b.rs", "pub struct B; use super::a::*; fn f(_: A) {}");
    let cycle = find_cycle(&file_arrows(&root)).expect("a circle between a.rs and b.rs");
    assert_eq!(cycle.len(), 3, "{cycle:?}");
    assert!(cycle.contains(&"app/deep/a.rs".to_string()) && cycle.contains(&"app/deep/b.rs".to_string()));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn the_checker_finds_a_circle_and_passes_a_tree() {
    let edge = |a: &str, b: &str| ((a.to_string(), b.to_string()), "x.rs".to_string());
    let tree: BTreeMap<_, _> = [edge("app", "sync"), edge("sync", "compute"), edge("app", "compute")].into();
    assert_eq!(find_cycle(&tree), None);
    let circle: BTreeMap<_, _> =
        [edge("app", "sync"), edge("sync", "compute"), edge("compute", "app")].into();
    let cycle = find_cycle(&circle).expect("a circle");
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4, "{cycle:?}");
    let mut paths = Vec::new();
    let tokens: TokenStream =
        "use crate::{sync::plan::{A, B}, compute}; fn f() { crate::vk::x(); super::cuda::y(); self.z(); }"
            .parse()
            .unwrap();
    crate_paths(tokens, &["compute".to_string(), "vulkan".to_string()], &mut paths);
    let found: BTreeSet<String> = paths.iter().map(|p| p[..2.min(p.len())].join("::")).collect();
    let want: BTreeSet<String> =
        ["compute", "sync::plan", "vk::x", "compute::cuda"].iter().map(|s| s.to_string()).collect();
    assert_eq!(found, want);
}
