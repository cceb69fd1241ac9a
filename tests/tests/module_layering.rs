//! Dependencies point one way, between the modules of each library crate
//! too: no module imports (through `crate::…` paths, directly or through a
//! name the crate root re-exports) a module that imports it back, however
//! long the cycle. Doc comments and `#[cfg(test)]` sections do not count.
//! A failure prints the cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The crates whose `src/` is checked (folders beside this one).
const CRATES: &[&str] = &[
    "core",
    "gguf",
    "vocab",
    "testkit",
    "toktrie",
    "grammar-xform",
    "jsonschema",
    "earley",
    "future-validity",
    "spec-verify",
    "copy-decode",
    "dllm-draftgraph",
    "gpu-backend",
    "zapspec",
];

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Module name → the modules of the same crate it refers to.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    // top-level modules: `foo.rs` or `foo/mod.rs`
    let mut files: BTreeMap<String, Vec<std::path::PathBuf>> = BTreeMap::new();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let p = e.path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            let mut all = Vec::new();
            let mut stack = vec![p];
            while let Some(d) = stack.pop() {
                for f in std::fs::read_dir(d).unwrap().flatten() {
                    let f = f.path();
                    if f.is_dir() {
                        stack.push(f);
                    } else if f.extension().is_some_and(|x| x == "rs") {
                        all.push(f);
                    }
                }
            }
            files.entry(name).or_default().extend(all);
        } else if p.extension().is_some_and(|x| x == "rs") && name != "lib" && name != "main" {
            files.entry(name).or_default().push(p);
        }
    }
    // names the crate root re-exports: `pub use module::{A, B}` / `pub use module::A`
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let mut reexport: BTreeMap<String, String> = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(i) = stmt.find("pub use ") else {
            continue;
        };
        let rest = &stmt[i + 8..];
        let module = ident_at(rest.trim_start());
        if !files.contains_key(module) {
            continue;
        }
        for name in rest[module.len()..].split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() && name != "self" {
                reexport.insert(name.to_string(), module.to_string());
            }
        }
    }
    let mut g = BTreeMap::new();
    for (m, paths) in &files {
        let mut deps = BTreeSet::new();
        for p in paths {
            let text = std::fs::read_to_string(p).unwrap();
            let text = match text.find("#[cfg(test)]") {
                Some(i) => &text[..i],
                None => &text[..],
            };
            for line in text.lines() {
                let code = line.split("//").next().unwrap_or("");
                let mut rest = code;
                while let Some(i) = rest.find("crate::") {
                    rest = &rest[i + 7..];
                    // `crate::{a, b::c}` groups, or one path
                    let names: Vec<&str> = if let Some(g) = rest.strip_prefix('{') {
                        let g = &g[..g.find('}').unwrap_or(g.len())];
                        g.split(',').map(|s| ident_at(s.trim())).collect()
                    } else {
                        vec![ident_at(rest)]
                    };
                    for n in names {
                        let target = if files.contains_key(n) {
                            Some(n.to_string())
                        } else {
                            reexport.get(n).cloned()
                        };
                        if let Some(t) = target.filter(|t| t != m) {
                            deps.insert(t);
                        }
                    }
                }
            }
        }
        g.insert(m.clone(), deps);
    }
    g
}

fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn dfs(
        u: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(u.to_string(), 1);
        path.push(u.to_string());
        for v in g.get(u).into_iter().flatten() {
            match state.get(v.as_str()) {
                Some(1) => {
                    let start = path.iter().position(|x| x == v).unwrap();
                    let mut c = path[start..].to_vec();
                    c.push(v.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = dfs(v, g, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(u.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in g.keys() {
        if !state.contains_key(m.as_str()) {
            if let Some(c) = dfs(m, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn module_imports_point_one_way_in_every_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut cycles = Vec::new();
    for c in CRATES {
        let g = graph(&root.join(c).join("src"));
        if let Some(cycle) = find_cycle(&g) {
            cycles.push(format!("{c}: {}", cycle.join(" -> ")));
        }
    }
    assert!(
        cycles.is_empty(),
        "module import cycles:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_checker_sees_a_cycle() {
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "c", "a"]);
    g.insert("c".to_string(), BTreeSet::new());
    assert!(find_cycle(&g).is_none());
}
