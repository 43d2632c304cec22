//! The layer order of `src/` (see `src/lib.rs`): each top-level module imports only from the
//! layers below it, so no two modules import each other, and no file grows past its budget.
//!
//! A module's imports are the `crate::X` paths in its files; a name re-exported at the crate root
//! (`crate::ClusterTable`) counts as an import of the module that `lib.rs` takes it from.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom up; a module may import from any layer before its own.
const LAYERS: &[&[&str]] = &[
    &["core"],
    &["measure"],
    &["cpu", "cuda", "cuda_off"],
    &["device"],
    &["labeler", "analysis", "regions"],
    &["io", "generate"],
    &["mc", "percolation"],
    &["farm"],
    &["plot"],
];

/// Lines a file in `src/` may have; kernels (`kernels/`) are not counted.
const MAX_LINES: usize = 600;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for the crate root and binaries).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (!matches!(name.as_str(), "lib" | "main" | "bin")).then_some(name)
}

/// Identifiers after `crate::` (the first path segment, or each name of a `crate::{...}` group).
fn crate_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            // Skip `$crate::` and `::crate::`-like tails of longer paths.
            let before = &rest[..i];
            rest = &rest[i + "crate::".len()..];
            if before.ends_with('$') || before.ends_with(|c: char| c.is_alphanumeric() || c == '_')
            {
                continue;
            }
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let item = item.trim().split("::").next().unwrap_or("").trim();
                    if !item.is_empty() {
                        out.push(item.to_string());
                    }
                }
            } else {
                let id: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push(id);
            }
        }
    }
    out
}

/// Root re-exports: `pub use module::...::{A, B}` in lib.rs, name → module.
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let mut stmt = String::new();
    for line in lib.lines() {
        let line = line.trim();
        if stmt.is_empty() && !line.starts_with("pub use ") {
            continue;
        }
        stmt.push_str(line);
        stmt.push(' ');
        if !line.ends_with(';') {
            continue;
        }
        let body = stmt
            .trim_start_matches("pub use ")
            .trim_start_matches("crate::");
        let module: String = body
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let names = match (body.find('{'), body.rfind("::")) {
            (Some(i), _) => body[i + 1..body.rfind('}').unwrap_or(body.len())].to_string(),
            (None, Some(i)) => body[i + 2..].trim_end_matches([';', ' ']).to_string(),
            _ => String::new(),
        };
        for name in names.split(',') {
            let name = name.trim().split(" as ").last().unwrap_or("").trim();
            if !name.is_empty() {
                map.insert(name.to_string(), module.clone());
            }
        }
        stmt.clear();
    }
    map
}

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&module))
        .unwrap_or_else(|| panic!("module {module} is in no layer: add it to LAYERS"))
}

#[test]
fn modules_import_only_from_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let exports = root_exports(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(&src, f)).collect();
    let mut wrong = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let text = fs::read_to_string(file).unwrap();
        for name in crate_paths(&text) {
            let target = if modules.contains(&name) {
                Some(name.clone())
            } else {
                exports.get(&name).cloned()
            };
            let Some(target) = target else { continue };
            if target != module && layer_of(&target) >= layer_of(&module) {
                wrong.push(format!(
                    "{}: {module} imports {target} (crate::{name})",
                    file.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports against the layer order:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_source_file_is_over_budget() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let over: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(
        over.is_empty(),
        "split these by concern:\n{}",
        over.join("\n")
    );
}
