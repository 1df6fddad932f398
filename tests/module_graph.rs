//! Arrows point down: no import circle between modules, in the app or the interop crate.
//!
//! Every `crate::a::b…` path in a module's code (its `use` items and its expressions and types)
//! is an arrow from that module to `a` (between top-level modules) and, inside one top-level
//! module, from a child to its sibling `a::b`. Both graphs must be acyclic, and the interop crate
//! must not name the app. No GPU, no Vulkan: this reads the sources with `syn`.

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

/// The paths a file names, with the module each use sits in (inline modules included).
struct Paths {
    here: Vec<String>,
    found: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
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
        let mut paths = Paths { here: module.clone(), found: Vec::new() };
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

fn assert_acyclic(root: &Path, level: usize) {
    let edges = arrows(root, level);
    if let Some(cycle) = find_cycle(&edges) {
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
