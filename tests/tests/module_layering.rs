//! Dependencies point one way, between the modules of each library crate
//! too, at every level: among the top-level modules of a crate, and among
//! the submodules of each module (`engine/cache.rs` and `engine/index.rs`
//! are two modules of `engine`). No module imports a module that imports
//! it back, however long the cycle, where a module's imports are those of
//! every file beneath it.
//!
//! An import is a path in code: `crate::a::b`, `super::x` (resolved from
//! the file's own module, `super::super::` too), `self::x`, `$crate::x`,
//! with `{a, b::c}` groups; a name a module re-exports (`pub use
//! index::{VocabIndex, …}` in `engine/mod.rs`) stands for the module it
//! comes from. A module's use of its own ancestors or descendants is not
//! an edge (a parent declares its children; a child reads its parent's
//! items). Doc comments and `#[cfg(test)]` sections do not count. A
//! failure prints the cycle.

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

/// A module's path below the crate root (`[]`: the root).
type ModPath = Vec<String>;

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The code of a file: comments and the `#[cfg(test)]` tail left out.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `.rs` file below `src` with its module path (`a.rs` and
/// `a/mod.rs`: `[a]`; `a/b.rs`: `[a, b]`; `lib.rs`, `main.rs`: `[]`).
fn files(src: &Path) -> Vec<(ModPath, String)> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap();
            let mut path: ModPath = rel
                .parent()
                .into_iter()
                .flat_map(|x| x.components())
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let root_file = path.is_empty() && (stem == "lib" || stem == "main");
            if stem != "mod" && !root_file {
                path.push(stem);
            }
            out.push((path, code_of(&std::fs::read_to_string(&p).unwrap())));
        }
    }
    out.sort();
    out
}

/// The crate's modules and what each re-exports: module → (name → the
/// module the name comes from).
struct Crate {
    modules: BTreeSet<ModPath>,
    reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
}

impl Crate {
    fn new(files: &[(ModPath, String)]) -> Crate {
        let modules: BTreeSet<ModPath> = files.iter().map(|(p, _)| p.clone()).collect();
        let mut c = Crate {
            modules,
            reexports: BTreeMap::new(),
        };
        for (m, code) in files {
            let mut names = BTreeMap::new();
            for stmt in code.split(';') {
                let Some(i) = stmt.find("use ") else { continue };
                let head = stmt[..i].trim_end();
                let public = ["pub", "pub(crate)", "pub(super)", "pub(self)"]
                    .iter()
                    .any(|p| head.ends_with(p));
                if !public {
                    continue;
                }
                let path = stmt[i + 4..].trim();
                // a leading plain name is relative to the module itself
                for (target, leaf) in c.resolve_use(m, path) {
                    if let Some(leaf) = leaf {
                        names.insert(leaf, target);
                    }
                }
            }
            c.reexports.insert(m.clone(), names);
        }
        c
    }

    /// The modules a `use` path (after `use `) in module `m` names, each
    /// with the item name it ends in (`None`: the path is a module).
    fn resolve_use(&self, m: &ModPath, path: &str) -> Vec<(ModPath, Option<String>)> {
        let (base, rest) = if let Some(r) = path.strip_prefix("crate::") {
            (Vec::new(), r)
        } else if path.starts_with("super::") || path.starts_with("self::") {
            climb(m, path)
        } else {
            (m.clone(), path)
        };
        let mut out = Vec::new();
        self.walk(base, rest, false, &mut out);
        out
    }

    /// The modules a path `rest` below module `base` reaches (through
    /// groups and re-exports), each with the item it ends in.
    fn walk(
        &self,
        base: ModPath,
        rest: &str,
        via_reexport: bool,
        out: &mut Vec<(ModPath, Option<String>)>,
    ) {
        let rest = rest.trim_start();
        if let Some(g) = rest.strip_prefix('{') {
            for item in split_group(g) {
                let item = item.trim();
                if item == "self" || item.is_empty() {
                    out.push((base.clone(), None));
                } else {
                    self.walk(base.clone(), item, via_reexport, out);
                }
            }
            return;
        }
        let name = ident_at(rest);
        if name.is_empty() {
            out.push((base, None));
            return;
        }
        let mut next = base.clone();
        next.push(name.to_string());
        if self.modules.contains(&next) {
            match rest[name.len()..].strip_prefix("::") {
                Some(r) => self.walk(next, r, via_reexport, out),
                None => out.push((next, None)),
            }
            return;
        }
        // an item of `base`, or a name `base` re-exports
        let target = if via_reexport {
            None
        } else {
            self.reexports.get(&base).and_then(|r| r.get(name)).cloned()
        };
        out.push((target.unwrap_or(base), Some(name.to_string())));
    }

    /// The modules module `m`'s code refers to.
    fn imports(&self, m: &ModPath, code: &str) -> BTreeSet<ModPath> {
        let mut out = BTreeSet::new();
        for prefix in ["crate::", "super::", "self::"] {
            let mut from = 0;
            while let Some(i) = code[from..].find(prefix) {
                let at = from + i;
                from = at + prefix.len();
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let (base, rest) = if prefix == "crate::" {
                    (Vec::new(), &code[at + prefix.len()..])
                } else {
                    climb(m, &code[at..])
                };
                let mut found = Vec::new();
                self.walk(base, rest, false, &mut found);
                out.extend(found.into_iter().map(|(p, _)| p));
            }
        }
        out
    }
}

/// `super::`/`self::` prefixes of `path` applied to module `m`: the module
/// reached and the rest of the path.
fn climb<'p>(m: &ModPath, mut path: &'p str) -> (ModPath, &'p str) {
    let mut base = m.clone();
    loop {
        if let Some(r) = path.strip_prefix("super::") {
            base.pop();
            path = r;
        } else if let Some(r) = path.strip_prefix("self::") {
            path = r;
        } else {
            return (base, path);
        }
    }
}

/// The items of a `{…}` group (after its `{`), split at top-level commas.
fn split_group(g: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in g.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&g[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&g[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&g[start..]);
    items
}

/// Per module with submodules, the import graph among its children: an
/// edge `a → b` when some file beneath child `a` imports something
/// beneath child `b`.
fn graphs(src: &Path) -> BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> {
    let files = files(src);
    let c = Crate::new(&files);
    let mut g: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (m, code) in &files {
        for t in c.imports(m, code) {
            let common = m.iter().zip(&t).take_while(|(a, b)| a == b).count();
            if common == m.len() || common == t.len() {
                continue; // an ancestor or descendant, or itself
            }
            g.entry(m[..common].to_vec())
                .or_default()
                .entry(m[common].clone())
                .or_default()
                .insert(t[common].clone());
        }
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
        for (parent, g) in graphs(&root.join(c).join("src")) {
            if let Some(cycle) = find_cycle(&g) {
                let at = if parent.is_empty() {
                    String::new()
                } else {
                    format!(" (in {})", parent.join("::"))
                };
                cycles.push(format!("{c}{at}: {}", cycle.join(" -> ")));
            }
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

#[test]
fn the_checker_reads_super_and_reexports() {
    let m = |s: &str| -> ModPath {
        s.split("::")
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    };
    let files = vec![
        (m(""), "mod engine;".to_string()),
        (
            m("engine"),
            "mod cache; mod index; pub use index::{Config, Index};".to_string(),
        ),
        (
            m("engine::cache"),
            "use super::Index; use super::super::util::f;".to_string(),
        ),
        (
            m("engine::index"),
            "use super::cache::{Ring, self};".to_string(),
        ),
        (m("util"), "pub fn f() {}".to_string()),
    ];
    let c = Crate::new(&files);
    assert_eq!(
        c.imports(&m("engine::cache"), &files[2].1),
        BTreeSet::from([m("engine::index"), m("util")])
    );
    assert_eq!(
        c.imports(&m("engine::index"), &files[3].1),
        BTreeSet::from([m("engine::cache")])
    );
}
