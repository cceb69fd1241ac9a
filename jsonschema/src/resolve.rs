//! Base URIs and `$ref` resolution inside one document (JSON Schema Core
//! 2020-12 §8.2: `$id` sets the base URI of a schema resource, resolved
//! against the enclosing one; `$ref` is a URI reference resolved against
//! the base URI of the schema it appears in, RFC 3986 §5, with
//! `fluent-uri`).
//!
//! [`Bases::new`] walks the document once (an explicit stack) and records
//! every schema resource — an object with a string `$id` (or draft-4 `id`)
//! that is not a bare fragment — under its absolute URI without fragment,
//! plus the plain-name anchors of each resource (`$anchor`,
//! `$dynamicAnchor`, which also declares a plain-name anchor, or drafts
//! 4–7 `$id`/`id: "#name"`). [`Bases::resolve`] turns a reference found at a
//! JSON pointer into the pointer of its target. A root without an absolute
//! `$id` gets the placeholder base [`DEFAULT_BASE`], so relative `$id`s
//! below it still nest. References to other documents are refused.
//!
//! Reading: every object of the document is looked at, also values of
//! `enum`, `const`, `default` and `examples`, so an `$id` string inside
//! such data counts as a resource (validators that walk only subschema
//! keywords would not count it). Cost: one pass over the document.

use rustc_hash::FxHashMap as HashMap;

use fluent_uri::{Iri, IriRef};
use serde_json::{Map, Value};

use crate::error::push_ptr;

/// The base URI of a root that has no absolute `$id`.
pub(crate) const DEFAULT_BASE: &str = "zapspec-document:///root.json";

/// Data keywords whose values are instances, not schemas.
const DATA: &[&str] = &["enum", "const", "default", "examples"];

/// Keywords whose values map names to schemas (a name there is no
/// keyword).
const NAME_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// The schema resources of one document (module docs).
#[derive(Debug, Default)]
pub(crate) struct Bases {
    /// Absolute URI without fragment → pointer of the resource's root.
    resources: HashMap<String, String>,
    /// Pointer of each resource root → its base URI.
    roots: Vec<(String, String)>,
    /// (resource URI, anchor name) → pointer.
    anchors: HashMap<(String, String), String>,
    /// The base URI of every schema object, by address (the document is
    /// borrowed while it is compiled, so an address is one object): the
    /// emitter's pointers follow references, so they do not locate an
    /// object in the document.
    base_of: HashMap<*const Map<String, Value>, u32>,
    /// The base URIs [`Bases::base_of`] indexes (one per resource, not one
    /// per object).
    base_uris: Vec<String>,
    /// The JSON pointer of every schema object, by address: where a
    /// conjunction of borrowed subschemas (`allOf` merges of `properties`,
    /// `items`) names its parts in messages.
    ptr_of: HashMap<*const Map<String, Value>, String>,
    /// Anchor name → pointer, whatever the resource (the first met): the
    /// fallback for documents whose anchors ignore resource scoping.
    global_anchors: HashMap<String, String>,
}

/// Why a reference does not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unresolved {
    /// Not a URI reference, or not resolvable against its base.
    BadUri(String),
    /// A document other than this one.
    Outside(String),
    /// A plain-name fragment no resource declares.
    NoAnchor,
}

/// `r` resolved against `base` (`None`: not a URI reference).
fn join(base: &str, r: &str) -> Option<String> {
    let base = Iri::parse(base).ok()?;
    let r = IriRef::parse(r).ok()?;
    r.resolve_against(&base)
        .ok()
        .map(|u| u.as_str().to_string())
}

/// `(uri without fragment, fragment)`.
fn split_fragment(u: &str) -> (&str, &str) {
    match u.find('#') {
        Some(i) => (&u[..i], &u[i + 1..]),
        None => (u, ""),
    }
}

impl Bases {
    /// The resources and anchors of `root` (module docs);
    /// `ids_beside_ref: false` (drafts 3–7) ignores an `$id` next to `$ref`.
    pub(crate) fn new(root: &Value, ids_beside_ref: bool) -> Self {
        let mut b = Bases {
            base_uris: vec![DEFAULT_BASE.to_string()],
            ..Bases::default()
        };
        // (value, pointer, index of the base URI of the enclosing resource,
        // whether the value's keys are names: `properties`, `$defs`, …);
        // data (`enum`, `const`, …) is not walked: nothing in it is a
        // schema
        let mut stack: Vec<(&Value, String, u32, bool)> = vec![(root, String::new(), 0, false)];
        while let Some((v, p, base, names)) = stack.pop() {
            let m = match v {
                Value::Object(m) => m,
                Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        if x.is_object() || x.is_array() {
                            stack.push((x, push_ptr(&p, &i.to_string()), base, false));
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            let mut here = base;
            // drafts 3–7 ignore the siblings of `$ref`, its `$id` too
            let ignored = !ids_beside_ref && m.contains_key("$ref");
            if !ignored {
                let id = ["$id", "id"]
                    .iter()
                    .find_map(|k| m.get(*k).and_then(Value::as_str));
                if let Some(id) = id {
                    let base_uri = b.base_uris[base as usize].clone();
                    if let Some(name) = id.strip_prefix('#') {
                        b.anchor(&base_uri, name, &p);
                    } else if let Some(u) = join(&base_uri, id) {
                        let (doc, frag) = split_fragment(&u);
                        here = b.base_uris.len() as u32;
                        b.base_uris.push(doc.to_string());
                        b.resources
                            .entry(doc.to_string())
                            .or_insert_with(|| p.clone());
                        b.roots.push((p.clone(), doc.to_string()));
                        if !frag.is_empty() {
                            b.anchor(doc, frag, &p);
                        }
                    }
                }
                // a `$dynamicAnchor` is also a plain-name anchor (2020-12
                // Core §8.2.2)
                for k in ["$anchor", "$dynamicAnchor"] {
                    if let Some(a) = m.get(k).and_then(Value::as_str) {
                        let here_uri = b.base_uris[here as usize].clone();
                        b.anchor(&here_uri, a, &p);
                    }
                }
            }
            if p.is_empty() && here == base {
                // a root without an `$id` of its own: the placeholder base
                let uri = b.base_uris[here as usize].clone();
                b.resources.insert(uri.clone(), String::new());
                b.roots.push((String::new(), uri));
            }
            b.base_of.insert(m as *const _, here);
            for (k, x) in m {
                // a property named `enum` is a schema; the keyword is data
                if (x.is_object() || x.is_array()) && (names || !DATA.contains(&k.as_str())) {
                    let kids_named = !names && NAME_MAPS.contains(&k.as_str());
                    stack.push((x, push_ptr(&p, k), here, kids_named));
                }
            }
            b.ptr_of.insert(m as *const _, p);
        }
        b
    }

    fn anchor(&mut self, base: &str, name: &str, p: &str) {
        self.anchors
            .entry((split_fragment(base).0.to_string(), name.to_string()))
            .or_insert_with(|| p.to_string());
        self.global_anchors
            .entry(name.to_string())
            .or_insert_with(|| p.to_string());
    }

    /// The base URI of the schema object `obj` (the document's root base
    /// for an object not met by the walk).
    pub(crate) fn base_of(&self, obj: &Map<String, Value>) -> &str {
        self.base_of
            .get(&(obj as *const _))
            .map_or(DEFAULT_BASE, |&i| self.base_uris[i as usize].as_str())
    }

    /// The JSON pointer of the schema object `obj` in the document
    /// (`None` for an object not met by the walk).
    pub(crate) fn pointer_of(&self, obj: &Map<String, Value>) -> Option<&str> {
        self.ptr_of.get(&(obj as *const _)).map(String::as_str)
    }

    /// What `reference`, found in schema object `obj`, designates:
    /// `(resource root pointer, fragment)` with the fragment still
    /// percent-encoded, for the caller to read as a JSON pointer or an
    /// anchor ([`Bases::anchor_of`]).
    pub(crate) fn target(
        &self,
        reference: &str,
        obj: &Map<String, Value>,
    ) -> Result<(String, String), Unresolved> {
        let base = self.base_of(obj);
        let u = join(base, reference).ok_or_else(|| Unresolved::BadUri(reference.to_string()))?;
        let (doc, frag) = split_fragment(&u);
        let root = self
            .resources
            .get(doc)
            .ok_or_else(|| Unresolved::Outside(doc.to_string()))?;
        Ok((root.clone(), frag.to_string()))
    }

    /// The pointer of anchor `name` of the resource rooted at `root`
    /// (falling back to any resource's anchor of that name).
    pub(crate) fn anchor_of(&self, root: &str, name: &str) -> Result<String, Unresolved> {
        let uri = self
            .roots
            .iter()
            .find(|(p, _)| p == root)
            .map(|(_, u)| u.clone());
        uri.and_then(|u| self.anchors.get(&(u, name.to_string())).cloned())
            .or_else(|| self.global_anchors.get(name).cloned())
            .ok_or(Unresolved::NoAnchor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_ids_resolve_relative_to_their_resource() {
        let doc = json!({
            "$id": "https://example.com/schemas/root.json",
            "$defs": {
                "addr": {
                    "$id": "address.json",
                    "$defs": {"street": {"$anchor": "street", "type": "string"}},
                    "properties": {"s": {"$ref": "#street"}, "t": {"$ref": "#/$defs/street"}}
                },
                "other": {"$id": "sub/other.json", "$ref": "../address.json"}
            },
            "properties": {"a": {"$ref": "address.json"}, "e": {"enum": [{"$id": "not-a-resource.json"}]}}
        });
        let b = Bases::new(&doc, true);
        let at = |p: &str| doc.pointer(p).and_then(Value::as_object).unwrap();
        assert_eq!(
            b.target("address.json", at("/properties/a")).unwrap(),
            ("/$defs/addr".to_string(), String::new())
        );
        assert_eq!(
            b.target("#/$defs/street", at("/$defs/addr/properties/t"))
                .unwrap(),
            ("/$defs/addr".to_string(), "/$defs/street".to_string())
        );
        let (root, frag) = b.target("#street", at("/$defs/addr/properties/s")).unwrap();
        assert_eq!(
            b.anchor_of(&root, &frag).unwrap(),
            "/$defs/addr/$defs/street"
        );
        assert_eq!(
            b.target("../address.json", at("/$defs/other")).unwrap().0,
            "/$defs/addr"
        );
        assert_eq!(
            b.target("https://example.com/schemas/root.json#/properties", at(""))
                .unwrap(),
            (String::new(), "/properties".to_string())
        );
        assert!(matches!(
            b.target("not-a-resource.json", at("")),
            Err(Unresolved::Outside(_))
        ));
        assert!(matches!(
            b.target("https://elsewhere.org/x.json", at("")),
            Err(Unresolved::Outside(_))
        ));
    }

    #[test]
    fn a_dynamic_anchor_is_also_a_plain_anchor() {
        let doc = json!({
            "$id": "https://example.com/tree",
            "$ref": "#items",
            "$defs": {"x": {"$dynamicAnchor": "items", "type": "integer"}}
        });
        let b = Bases::new(&doc, true);
        let (root, frag) = b.target("#items", doc.as_object().unwrap()).unwrap();
        assert_eq!(b.anchor_of(&root, &frag).unwrap(), "/$defs/x");
    }

    #[test]
    fn a_root_without_id_is_the_placeholder_base() {
        let doc = json!({"$defs": {"a": {"$id": "a.json"}}, "$ref": "a.json"});
        let b = Bases::new(&doc, true);
        let root = doc.as_object().unwrap();
        assert_eq!(b.target("#", root).unwrap().0, "");
        assert_eq!(b.target("a.json", root).unwrap().0, "/$defs/a");
    }

    #[test]
    fn a_property_named_like_a_data_keyword_is_a_schema() {
        let doc = json!({
            "properties": {"default": {"$anchor": "d", "type": "integer"}},
            "enum": [{"$anchor": "not-a-schema"}],
            "$ref": "#d"
        });
        let b = Bases::new(&doc, true);
        let root = doc.as_object().unwrap();
        let (r, frag) = b.target("#d", root).unwrap();
        assert_eq!(b.anchor_of(&r, &frag).unwrap(), "/properties/default");
        assert!(b.anchor_of(&r, "not-a-schema").is_err());
        let sub = doc["properties"]["default"].as_object().unwrap();
        assert_eq!(b.pointer_of(sub), Some("/properties/default"));
    }
}
