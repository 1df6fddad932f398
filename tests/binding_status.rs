//! Keeps the CUDA and HIP binding layers sound: no C library ever writes a status into a Rust
//! enum. cudarc's `CUresult` / `nvrtcResult` and hip-runtime-sys's `hipError_t` are Rust enums; a
//! library newer than the bindings can return a code the enum does not list, and an enum holding
//! an unlisted value is undefined behaviour. So the binding layers declare every entry point
//! themselves, returning a `#[repr(transparent)]` integer (`CuStatus`, `NvrtcStatus`,
//! `HipStatus`, ...).
//!
//! This test parses every `.rs` file of `crates/vkhip-interop/src/cuda/`, `crates/vkhip-interop/src/hip/`
//! and the app's `src/compute/hip/` with `syn`
//! (so comments and string literals never count, and a signature spread over many lines is one
//! item) and fails when:
//! - a function signature (free, method, trait or foreign), a fn-pointer type, a closure's
//!   declared parameter or return type, an `Fn(..) -> ..` bound or a type alias mentions one of
//!   [`STATUS_ENUMS`], or a `use` imports one (a renamed import would hide it from the rest);
//! - an expression refers to one of cudarc's `sys` functions (`sys::cuXxx`,
//!   `nvrtc_sys::nvrtcXxx`, `cudarc::driver::sys::cuXxx`, ...), called or not, or a `use`
//!   imports one (or globs a `sys` module), since those return the enums;
//! - a macro's tokens (a `macro_rules!` body, an invocation) mention a status enum, because syn
//!   cannot see what a macro expands to.
//!
//! Reading an enum's discriminant (`sys::CUresult::CUDA_SUCCESS as c_int`, to check a const) is
//! allowed: the value is ours, not the library's.

use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};

/// The C status types that cudarc / hip-runtime-sys bind as Rust enums (and their aliases).
const STATUS_ENUMS: &[&str] =
    &["CUresult", "cudaError_enum", "cudaError_t", "nvrtcResult", "hipError_t", "hiprtcResult"];

/// The directories whose files are checked, relative to the crate root.
const BINDING_DIRS: &[&str] =
    &["crates/vkhip-interop/src/cuda", "crates/vkhip-interop/src/hip", "src/compute/hip"];

/// Whether `name` is a CUDA driver (`cuXxx`) or NVRTC (`nvrtcXxx`) entry point's name.
fn is_entry_point(name: &str) -> bool {
    ["cu", "nvrtc"].iter().any(|prefix| {
        name.strip_prefix(prefix).and_then(|rest| rest.chars().next()).is_some_and(|c| c.is_ascii_uppercase())
    })
}

/// Whether a path segment names a cudarc `sys` module (`sys`, `nvrtc_sys`, ...).
fn is_sys_module(segment: &str) -> bool {
    segment == "sys" || segment.ends_with("_sys")
}

fn mentions_status_enum(tokens: TokenStream) -> Option<String> {
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                if STATUS_ENUMS.contains(&name.as_str()) {
                    return Some(name);
                }
            }
            TokenTree::Group(group) => {
                if let Some(found) = mentions_status_enum(group.stream()) {
                    return Some(found);
                }
            }
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
    None
}

/// One finding: where (the enclosing item) and what.
#[derive(Debug)]
struct Violation {
    context: String,
    what: String,
}

#[derive(Default)]
struct Checker {
    /// The enclosing items' names, outermost first.
    context: Vec<String>,
    found: Vec<Violation>,
}

impl Checker {
    fn report(&mut self, what: String) {
        let context = if self.context.is_empty() { "(file)".to_string() } else { self.context.join("::") };
        self.found.push(Violation { context, what });
    }

    fn check_type_tokens(&mut self, role: &str, tokens: TokenStream) {
        let text = tokens.to_string();
        if let Some(name) = mentions_status_enum(tokens) {
            self.report(format!("{role} mentions `{name}`: {text}"));
        }
    }

    fn check_return(&mut self, role: &str, output: &syn::ReturnType) {
        if let syn::ReturnType::Type(_, ty) = output {
            self.check_type_tokens(role, ty.to_token_stream());
        }
    }

    fn within(&mut self, name: String, f: impl FnOnce(&mut Self)) {
        self.context.push(name);
        f(self);
        self.context.pop();
    }

    /// The imported names of a `use` tree, with the path leading to each (`*` for a glob).
    fn use_leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                Self::use_leaves(&p.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => out.push((prefix.clone(), n.ident.to_string())),
            syn::UseTree::Rename(r) => out.push((prefix.clone(), r.ident.to_string())),
            syn::UseTree::Glob(_) => out.push((prefix.clone(), "*".to_string())),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| Self::use_leaves(t, prefix, out)),
        }
    }
}

impl<'ast> Visit<'ast> for Checker {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.within(item.sig.ident.to_string(), |c| visit::visit_item_fn(c, item));
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.within(item.sig.ident.to_string(), |c| visit::visit_impl_item_fn(c, item));
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        let name = item.self_ty.to_token_stream().to_string();
        self.within(format!("impl {name}"), |c| visit::visit_item_impl(c, item));
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.within(item.ident.to_string(), |c| visit::visit_item_mod(c, item));
    }

    fn visit_item_struct(&mut self, item: &'ast syn::ItemStruct) {
        self.within(item.ident.to_string(), |c| visit::visit_item_struct(c, item));
    }

    /// Free functions, methods, trait methods and foreign (`extern`) declarations.
    fn visit_signature(&mut self, sig: &'ast syn::Signature) {
        for input in &sig.inputs {
            if let syn::FnArg::Typed(pt) = input {
                self.check_type_tokens(&format!("parameter of fn {}", sig.ident), pt.ty.to_token_stream());
            }
        }
        self.check_return(&format!("return type of fn {}", sig.ident), &sig.output);
        visit::visit_signature(self, sig);
    }

    /// `fn(..) -> ..` types anywhere: aliases, struct fields, generics, casts.
    fn visit_type_bare_fn(&mut self, f: &'ast syn::TypeBareFn) {
        for input in &f.inputs {
            self.check_type_tokens("fn-pointer parameter", input.ty.to_token_stream());
        }
        self.check_return("fn-pointer return type", &f.output);
        visit::visit_type_bare_fn(self, f);
    }

    fn visit_expr_closure(&mut self, closure: &'ast syn::ExprClosure) {
        for input in &closure.inputs {
            if let syn::Pat::Type(pt) = input {
                self.check_type_tokens("closure parameter", pt.ty.to_token_stream());
            }
        }
        self.check_return("closure return type", &closure.output);
        visit::visit_expr_closure(self, closure);
    }

    /// `Fn(A) -> B`, `FnMut(..)`, ... bounds.
    fn visit_parenthesized_generic_arguments(&mut self, args: &'ast syn::ParenthesizedGenericArguments) {
        for input in &args.inputs {
            self.check_type_tokens("Fn-trait parameter", input.to_token_stream());
        }
        self.check_return("Fn-trait return type", &args.output);
        visit::visit_parenthesized_generic_arguments(self, args);
    }

    fn visit_item_type(&mut self, item: &'ast syn::ItemType) {
        self.check_type_tokens(&format!("type alias {}", item.ident), item.ty.to_token_stream());
        visit::visit_item_type(self, item);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        Self::use_leaves(&item.tree, &mut Vec::new(), &mut leaves);
        for (path, name) in leaves {
            let from_sys = path.iter().any(|s| is_sys_module(s));
            if STATUS_ENUMS.contains(&name.as_str()) {
                self.report(format!("`use` imports the status enum `{name}`"));
            } else if from_sys && (is_entry_point(&name) || name == "*") {
                self.report(format!("`use` imports `{}::{name}` (a cudarc entry point)", path.join("::")));
            }
        }
        visit::visit_item_use(self, item);
    }

    /// `sys::cuInit`, `nvrtc_sys::nvrtcVersion`, ... in an expression: a call, or a pointer to one.
    fn visit_expr_path(&mut self, expr: &'ast syn::ExprPath) {
        let segments: Vec<String> = expr.path.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some((last, module)) = segments.split_last() {
            if is_entry_point(last) && module.iter().any(|s| is_sys_module(s)) {
                self.report(format!("refers to the cudarc entry point `{}`", segments.join("::")));
            }
        }
        visit::visit_expr_path(self, expr);
    }

    /// A macro whose arguments are expressions (`assert_eq!`, `format!`, ...) is checked like
    /// any other code; any other macro (`macro_rules!` bodies, custom syntax) by its tokens.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let name = mac.path.to_token_stream().to_string();
        let exprs = mac.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated);
        match exprs {
            Ok(exprs) => exprs.iter().for_each(|e| self.visit_expr(e)),
            Err(_) => {
                if let Some(found) = mentions_status_enum(mac.tokens.clone()) {
                    self.report(format!("macro `{name}!` mentions `{found}` (syn cannot see its expansion)"));
                }
            }
        }
        visit::visit_macro(self, mac);
    }
}

/// The findings for one file's source.
fn check_source(source: &str) -> Result<Vec<Violation>, syn::Error> {
    let file = syn::parse_file(source)?;
    let mut checker = Checker::default();
    checker.visit_file(&file);
    Ok(checker.found)
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn no_status_enum_crosses_the_binding_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    let mut scanned = Vec::new();
    for dir in BINDING_DIRS {
        for path in rust_files(&root.join(dir)) {
            let source = std::fs::read_to_string(&path).expect("readable source");
            let rel = path.strip_prefix(root).unwrap_or(&path).display().to_string();
            let found = check_source(&source).unwrap_or_else(|e| panic!("{rel} does not parse: {e}"));
            report.extend(found.into_iter().map(|v| format!("{rel}: in {}: {}", v.context, v.what)));
            scanned.push(rel);
        }
    }
    // Guard against scanning nothing (a moved directory would make this test pass vacuously).
    for must in [
        "crates/vkhip-interop/src/cuda/sys.rs",
        "crates/vkhip-interop/src/hip/ffi.rs",
        "crates/vkhip-interop/src/hip/rtc.rs",
    ] {
        assert!(scanned.iter().any(|s| s == must), "{must} was not scanned: {scanned:?}");
    }
    assert!(
        report.is_empty(),
        "status enums or cudarc entry points in the binding layers:\n{}",
        report.join("\n")
    );
}

/// The checker catches each kind of violation, and ignores comments, strings and discriminant reads.
#[test]
fn checker_flags_bad_snippets_and_passes_good_ones() {
    let bad: &[(&str, &str)] = &[
        (
            "extern \"C\" {\n    fn cuInit(\n        flags: u32,\n    ) -> sys::CUresult;\n}",
            "return type of fn cuInit",
        ),
        ("fn f(\n    a: i32,\n    // a comment\n    status: *mut CUresult,\n) {}", "parameter of fn f"),
        ("impl A { fn check(&self, code: nvrtc_sys::nvrtcResult) -> u32 { 0 } }", "parameter of fn check"),
        (
            "type F = unsafe extern \"C\" fn(*mut i32) -> cudarc::driver::sys::CUresult;",
            "fn-pointer return type",
        ),
        ("struct T { f: Option<unsafe extern \"C\" fn(hipError_t)> }", "fn-pointer parameter"),
        ("fn g() { let c = |x: nvrtcResult| 0; }", "closure parameter"),
        ("fn g() { let c = |x: i32| -> hiprtcResult { todo!() }; }", "closure return type"),
        ("fn h(f: impl Fn(i32) -> cudaError_t) {}", "Fn-trait return type"),
        ("type Status = sys::CUresult;", "type alias Status"),
        ("use cudarc::driver::sys::CUresult as Status;", "imports the status enum"),
        ("use hip_runtime_sys::{hipError_t, hipStream_t};", "imports the status enum"),
        ("fn k() { unsafe { sys::cuInit(0) }; }", "cudarc entry point `sys::cuInit`"),
        ("fn k() { let _ = unsafe { cudarc::nvrtc::sys::nvrtcVersion(a, b) }; }", "nvrtcVersion"),
        ("fn k() { let f = nvrtc_sys::nvrtcGetErrorString; }", "nvrtcGetErrorString"),
        ("use cudarc::driver::sys::cuMemAlloc_v2;", "a cudarc entry point"),
        ("use cudarc::driver::sys::*;", "sys::*"),
        ("macro_rules! m { () => { fn x() -> CUresult { loop {} } }; }", "macro `macro_rules!`"),
        ("fn m() { table!(cuInit: fn(u32) -> CUresult); }", "macro `table!`"),
        ("fn m() { assert!(unsafe { sys::cuInit(0) } == x, \"{}\", 1); }", "`sys::cuInit`"),
        ("fn m() { assert_eq!(0, { let c = |s: CUresult| 0; 0 }); }", "closure parameter"),
    ];
    for (snippet, expect) in bad {
        let found = check_source(snippet).unwrap_or_else(|e| panic!("{snippet}: {e}"));
        assert!(!found.is_empty(), "not flagged:\n{snippet}");
        let text = format!("{found:?}");
        assert!(text.contains(expect), "flagged, but not as {expect:?}: {text}\n{snippet}");
    }
    let good = "
        /// Returns CUresult? No: `fn x() -> CUresult` in a doc comment is only text.
        #[repr(transparent)]
        pub struct CuStatus(pub std::ffi::c_int);
        struct Api {
            // cuInit: fn(u32) -> CUresult   (a comment)
            cuInit: unsafe extern \"C\" fn(
                std::ffi::c_uint,
            ) -> CuStatus,
        }
        fn f(api: &Api) -> Result<(), String> {
            /* sys::cuInit(0) -> CUresult */
            let message = \"sys::cuInit(0) returned CUresult\";
            let status = unsafe { (api.cuInit)(0) };
            let ok = status.0 == sys::CUresult::CUDA_SUCCESS as i32;
            let attr = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
            let _ = (message, ok, attr);
            assert_eq!(status.0, sys::CUresult::CUDA_ERROR_NOT_READY as i32, \"{}\", \"CUresult\");
            Ok(())
        }
        use cudarc::driver::sys;
        use cudarc::nvrtc::sys as nvrtc_sys;
        use hip_runtime_sys::hipDeviceProp_t;
    ";
    let found = check_source(good).expect("parses");
    assert!(found.is_empty(), "false positives: {found:?}");
}
