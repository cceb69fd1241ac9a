//! `allOf` of simple schemas: [`merge`] combines two [`Simple`]s keyword
//! by keyword, one JSON type's keywords at a time. A contradiction found
//! on the way is a [`Sat::No`], a conjunction the compiler cannot express
//! a [`SchemaError`], naming the keyword, the values and the pointers of
//! both schemas in the user's document (numeric keywords carry their
//! origin, [`super::Origin`], through merges and negations).

use super::{json_eq, ArrayKw, NumberKw, ObjectKw, Origin, Simple, StringKw, Sub};
use crate::error::{push_ptr, Sat, SchemaError, Unsat};
use crate::keys::KeyPattern;
use crate::numbers::lcm_multiple;

/// `a ∧ b`, as one simple schema at `a`'s pointer; `ptr` is `b`'s (the
/// place of a conflict). [`Sat::No`] when they contradict each other.
pub(crate) fn merge<'a>(
    mut a: Simple<'a>,
    mut b: Simple<'a>,
    ptr: &str,
) -> Result<Sat<Simple<'a>>, SchemaError> {
    // `minContains`/`maxContains` do nothing beside no `contains`: drop
    // them so that they do not attach to the other side's `contains`
    for s in [&mut a, &mut b] {
        if s.array.contains.is_none() {
            s.array.min_contains = None;
            s.array.max_contains = None;
        }
    }
    // where each side's own keywords stand
    let (mut a_at, mut b_at) = (a.ptr.clone(), ptr.to_string());
    if b.object.pattern_properties.is_some() && a.object.pattern_properties.is_none() {
        // the conjunction is symmetric: keep the patterns on the left
        std::mem::swap(&mut a, &mut b);
        std::mem::swap(&mut a.ptr, &mut b.ptr);
        std::mem::swap(&mut a_at, &mut b_at);
    }
    let at = (a_at.as_str(), b_at.as_str());
    merge_objects(&mut a.object, &mut b.object, at)?;
    merge_arrays(&mut a.array, &mut b.array);
    match (a.types, b.types) {
        (Some(x), Some(y)) => {
            let t = x.intersect(y);
            if t.is_empty() {
                return Ok(Sat::No(Unsat::DisjointTypes(x.to_value(), y.to_value())));
            }
            a.types = Some(t);
        }
        (None, y) => a.types = y,
        (Some(_), None) => {}
    }
    a.enum_values = match (a.enum_values.take(), b.enum_values.take()) {
        (Some(x), Some(y)) => Some(
            x.into_iter()
                .filter(|e| y.iter().any(|f| json_eq(e, f)))
                .collect(),
        ),
        (x, y) => x.or(y),
    };
    merge_numbers(&mut a.number, b.number, at, &a.ptr)?;
    merge_strings(&mut a.string, b.string, at)?;
    merge_array_counts(&mut a.array, b.array, at)?;
    merge_object_counts(&mut a.object, b.object);
    Ok(Sat::Yes(a))
}

/// `x ∪ y` keeping `x`'s order (lists of names or patterns).
fn union(x: &mut Vec<String>, y: Vec<String>) {
    for e in y {
        if !x.contains(&e) {
            x.push(e);
        }
    }
}

/// The larger lower bound / smaller upper bound of two optional counts.
fn tighter(a: &mut Option<u64>, b: Option<u64>, lower: bool) {
    *a = match (*a, b) {
        (Some(x), Some(y)) => Some(if lower { x.max(y) } else { x.min(y) }),
        (x, y) => x.or(y),
    };
}

/// Where the two sides of a merge stand: the first conjunct's pointer
/// (the accumulated conjunction's) and the second's.
type At<'s> = (&'s str, &'s str);

/// `at \`p\``, or "at the root".
pub(crate) fn at(p: &str) -> String {
    if p.is_empty() {
        "at the root".to_string()
    } else {
        format!("at `{p}`")
    }
}

/// The refusal of two values of `kw` that one simple schema cannot hold,
/// naming both places.
fn conflict(kw: &str, (a_at, b_at): At<'_>, what: &str) -> SchemaError {
    SchemaError::unsupported(
        kw,
        b_at,
        format!(
            "the schema {} must hold together with the one {} (or a schema conjoined with \
             that one: allOf, $ref or sibling keywords), and {what}",
            at(b_at),
            at(a_at)
        ),
    )
}

/// Both sides' value of a keyword the conjunction cannot combine: equal,
/// or refused.
fn same<T: PartialEq>(
    a: &mut Option<T>,
    b: Option<T>,
    kw: &str,
    sides: At<'_>,
) -> Result<(), SchemaError> {
    match (a.as_ref(), b) {
        (_, None) => Ok(()),
        (None, b) => {
            *a = b;
            Ok(())
        }
        (Some(x), Some(y)) if *x == y => Ok(()),
        (Some(_), Some(_)) => Err(conflict(
            kw,
            sides,
            &format!("two different `{kw}` values in one schema are not implemented"),
        )),
    }
}

/// The numeric keywords of `a ∧ b` (`at`: where each side's own keywords
/// stand): the tighter bounds, and the least common multiple of two
/// `multipleOf`s (exact: [`lcm_multiple`]); the origin of each value taken
/// from `b` is recorded in `a.from`, for messages.
fn merge_numbers(
    a: &mut NumberKw,
    b: NumberKw,
    sides: At<'_>,
    own: &str,
) -> Result<(), SchemaError> {
    let f = |n: &serde_json::Number| n.as_f64().unwrap_or(f64::NAN);
    let (a_at, b_at) = sides;
    // `a`'s own values stand at `a_at`: recorded where the result does not
    let moved = a_at != own;
    for (kw, lower) in [
        ("minimum", true),
        ("exclusiveMinimum", true),
        ("maximum", false),
        ("exclusiveMaximum", false),
    ] {
        let (x, y) = match kw {
            "minimum" => (&mut a.minimum, b.minimum.clone()),
            "exclusiveMinimum" => (&mut a.exclusive_minimum, b.exclusive_minimum.clone()),
            "maximum" => (&mut a.maximum, b.maximum.clone()),
            _ => (&mut a.exclusive_maximum, b.exclusive_maximum.clone()),
        };
        let take_b = match (&*x, &y) {
            (Some(p), Some(q)) => {
                if lower {
                    f(q) > f(p)
                } else {
                    f(q) < f(p)
                }
            }
            (None, Some(_)) => true,
            _ => false,
        };
        // origins written only where they are recorded (each clones a
        // pointer)
        let keep_a = !take_b && x.is_some() && moved;
        if take_b {
            *x = y;
            a.set_origin(b.origin(kw, b_at));
        } else if keep_a {
            let o = a.origin(kw, a_at);
            a.set_origin(o);
        }
    }
    match (a.multiple_of.take(), b.multiple_of.clone()) {
        (Some(x), Some(y)) => {
            let (ox, oy) = (a.origin("multipleOf", a_at), b.origin("multipleOf", b_at));
            let name = |o: &Origin, v: &serde_json::Number| match &o.how {
                None => format!("{v} {}", at(&o.pointer)),
                Some(h) => format!("{v} ({h} {})", at(&o.pointer)),
            };
            let (dx, dy) = (name(&ox, &x), name(&oy, &y));
            let l = lcm_multiple(&x, &y).ok_or_else(|| {
                SchemaError::unsupported(
                    "multipleOf",
                    &oy.pointer,
                    format!(
                        "multipleOf {dx} and multipleOf {dy} in one conjunction (allOf, $ref or \
                         sibling keywords): their least common multiple, the one multipleOf \
                         equivalent to both, is not representable (a value is not positive, \
                         or it exceeds u64 or an exact f64 decimal)"
                    ),
                )
            })?;
            a.multiple_of = Some(l);
            a.set_origin(Origin {
                keyword: "multipleOf",
                pointer: ox.pointer.clone(),
                how: Some(format!(
                    "the least common multiple of multipleOf {dx} and {dy}"
                )),
            });
        }
        (None, Some(y)) => {
            a.multiple_of = Some(y);
            a.set_origin(b.origin("multipleOf", b_at));
        }
        (x, None) => {
            if x.is_some() && moved {
                let o = a.origin("multipleOf", a_at);
                a.set_origin(o);
            }
            a.multiple_of = x;
        }
    }
    Ok(())
}

fn merge_strings(a: &mut StringKw, b: StringKw, sides: At<'_>) -> Result<(), SchemaError> {
    tighter(&mut a.min_length, b.min_length, true);
    tighter(&mut a.max_length, b.max_length, false);
    // both must match: further patterns are kept after the first
    union(&mut a.patterns, b.patterns);
    match (&a.format, b.format) {
        (_, None) => {}
        (None, f) => a.format = f,
        (Some(x), Some(y)) if *x == y => {}
        (Some(x), Some(y)) => {
            return Err(conflict(
                "format",
                sides,
                &format!(
                    "a string checked against both `format` {x:?} and {y:?} is not implemented"
                ),
            ))
        }
    }
    union(&mut a.not_in, b.not_in);
    union(&mut a.not_patterns, b.not_patterns);
    Ok(())
}

/// `prefixItems`/`items` per position.
fn merge_arrays<'a>(a: &mut ArrayKw<'a>, b: &mut ArrayKw<'a>) {
    let a_arr = a.prefix_items.is_some() || a.items.is_some();
    let b_arr = b.prefix_items.is_some() || b.items.is_some();
    if a_arr && b_arr {
        let pa = a.prefix_items.take().unwrap_or_default();
        let pb = b.prefix_items.take().unwrap_or_default();
        let ia = a.items.take().unwrap_or(Sub::TRUE);
        let ib = b.items.take().unwrap_or(Sub::TRUE);
        let n = pa.len().max(pb.len());
        let prefix: Vec<Sub<'_>> = (0..n)
            .map(|j| {
                Sub::all(vec![
                    pa.get(j).cloned().unwrap_or_else(|| ia.clone()),
                    pb.get(j).cloned().unwrap_or_else(|| ib.clone()),
                ])
            })
            .collect();
        if !prefix.is_empty() {
            a.prefix_items = Some(prefix);
        }
        let items = Sub::all(vec![ia, ib]);
        if items != Sub::TRUE {
            a.items = Some(items);
        }
    } else if b_arr {
        a.prefix_items = b.prefix_items.take();
        a.items = b.items.take();
    }
}

fn merge_array_counts<'a>(
    a: &mut ArrayKw<'a>,
    b: ArrayKw<'a>,
    sides: At<'_>,
) -> Result<(), SchemaError> {
    tighter(&mut a.min_items, b.min_items, true);
    tighter(&mut a.max_items, b.max_items, false);
    a.unique_items |= b.unique_items;
    same(&mut a.contains, b.contains, "contains", sides)?;
    same(&mut a.min_contains, b.min_contains, "minContains", sides)?;
    same(&mut a.max_contains, b.max_contains, "maxContains", sides)
}

fn merge_object_counts<'a>(a: &mut ObjectKw<'a>, b: ObjectKw<'a>) {
    union(&mut a.required, b.required);
    tighter(&mut a.min_properties, b.min_properties, true);
    tighter(&mut a.max_properties, b.max_properties, false);
    // every key must satisfy both
    a.property_names = match (a.property_names.take(), b.property_names) {
        (Some(x), Some(y)) => Some(Sub::all(vec![x, y])),
        (x, y) => x.or(y),
    };
}

/// `properties`/`additionalProperties`/`patternProperties` per key (`a`
/// has the patterns if either does).
fn merge_objects<'a>(
    a: &mut ObjectKw<'a>,
    b: &mut ObjectKw<'a>,
    sides: At<'_>,
) -> Result<(), SchemaError> {
    let a_pp = a.pattern_properties.is_some();
    let b_pp = b.pattern_properties.is_some();
    let a_obj = a.properties.is_some() || a.additional_properties.is_some();
    let b_obj = b.properties.is_some() || b.additional_properties.is_some();
    if a_pp || b_pp {
        if a_pp && b_pp {
            return Err(conflict(
                "patternProperties",
                sides,
                "both have patternProperties, whose conjunction is not implemented",
            ));
        }
        if b_obj {
            merge_into_patterns(a, b, sides)?;
        }
    } else if a_obj && b_obj {
        let pa = a.properties.take().unwrap_or_default();
        let pb = b.properties.take().unwrap_or_default();
        let aa = a.additional_properties.take().unwrap_or(Sub::TRUE);
        let ab = b.additional_properties.take().unwrap_or(Sub::TRUE);
        let find = |ps: &[(String, Sub<'a>)], k: &str| ps.iter().position(|(n, _)| n == k);
        let mut props: Vec<(String, Sub<'a>)> = Vec::with_capacity(pa.len() + pb.len());
        for (k, v) in &pa {
            let other = match find(&pb, k) {
                Some(i) => pb[i].1.clone(),
                None => ab.clone(),
            };
            props.push((k.clone(), Sub::all(vec![v.clone(), other])));
        }
        for (k, v) in &pb {
            if find(&pa, k).is_none() {
                props.push((k.clone(), Sub::all(vec![aa.clone(), v.clone()])));
            }
        }
        a.properties = Some(props);
        let add = Sub::all(vec![aa, ab]);
        if add != Sub::TRUE {
            a.additional_properties = Some(add);
        }
    } else if b_obj {
        a.properties = b.properties.take();
        a.additional_properties = b.additional_properties.take();
    }
    Ok(())
}

/// `a ∧ b` for the object keywords where `a` has `patternProperties` and
/// `b` has `properties`/`additionalProperties` but no patterns. Exact when
/// `b` allows every undeclared key (`additionalProperties` absent or
/// `true`): a key `b` declares but `a` does not must also satisfy what `a`
/// demands of it — the schemas of `a`'s patterns it matches (which the
/// emitter applies to every declared key) or else `a`'s
/// `additionalProperties`. Other cases are refused.
fn merge_into_patterns<'a>(
    a: &mut ObjectKw<'a>,
    b: &mut ObjectKw<'a>,
    sides: At<'_>,
) -> Result<(), SchemaError> {
    let ab = b.additional_properties.take().unwrap_or(Sub::TRUE);
    if !ab.is_true() {
        let (p_at, a_at) = sides;
        return Err(SchemaError::unsupported(
            "patternProperties",
            p_at,
            format!(
                "the patternProperties {} must hold together with additionalProperties of the \
                 schema {} (or of a schema conjoined with it: allOf, $ref or sibling keywords), \
                 and that conjunction is not implemented",
                at(p_at),
                at(a_at)
            ),
        ));
    }
    let aa = a.additional_properties.clone().unwrap_or(Sub::TRUE);
    let pats = pattern_properties(a, sides.0)?;
    let mut pa = a.properties.take().unwrap_or_default();
    let pb = b.properties.take().unwrap_or_default();
    for (k, v) in pb {
        let at = pa.iter().position(|(n, _)| *n == k);
        let merged = match at {
            Some(i) => Sub::all(vec![pa[i].1.clone(), v]),
            None if pats.iter().any(|(p, _)| p.matches(&k)) => v,
            None => Sub::all(vec![aa.clone(), v]),
        };
        match at {
            Some(i) => pa[i].1 = merged,
            None => pa.push((k, merged)),
        }
    }
    if !pa.is_empty() {
        a.properties = Some(pa);
    }
    Ok(())
}

/// The compiled `patternProperties` of an object schema at `ptr`.
pub(crate) fn pattern_properties<'a>(
    o: &ObjectKw<'a>,
    ptr: &str,
) -> Result<Vec<(KeyPattern, Sub<'a>)>, SchemaError> {
    let mut out = Vec::new();
    for (p, v) in o.pattern_properties.iter().flatten() {
        let kp = KeyPattern::new(p).map_err(|r| {
            r.into_schema(
                "patternProperties",
                &push_ptr(&push_ptr(ptr, "patternProperties"), p),
                &format!("(pattern {p:?}) "),
            )
        })?;
        out.push((kp, v.clone()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::TypeSet;
    use serde_json::{json, Value};

    fn simple(v: &Value) -> Simple<'_> {
        Simple::parse(v.as_object().unwrap(), "/x").unwrap()
    }

    fn both<'a>(a: &'a Value, b: &'a Value) -> Result<Sat<Simple<'a>>, SchemaError> {
        merge(simple(a), simple(b), "/y")
    }

    #[test]
    fn types_intersect_and_disjoint_types_are_unsat() {
        let (a, b) = (
            json!({"type": ["number", "string"]}),
            json!({"type": "integer"}),
        );
        let Ok(Sat::Yes(m)) = both(&a, &b) else {
            panic!()
        };
        assert_eq!(m.types, Some(TypeSet::INTEGER));
        assert_eq!(m.ptr, "/x");
        let c = json!({"type": "null"});
        assert!(matches!(
            both(&a, &c),
            Ok(Sat::No(Unsat::DisjointTypes(..)))
        ));
    }

    #[test]
    fn string_keywords_merge_per_keyword() {
        let a = json!({"pattern": "a", "minLength": 2, "format": "date"});
        let b = json!({"pattern": "b", "minLength": 3, "maxLength": 9});
        let Ok(Sat::Yes(m)) = both(&a, &b) else {
            panic!()
        };
        assert_eq!(m.string.patterns, vec!["a", "b"]);
        assert_eq!(
            (m.string.min_length, m.string.max_length),
            (Some(3), Some(9))
        );
        let c = json!({"format": "uuid"});
        assert!(matches!(
            both(&a, &c),
            Err(SchemaError::Unsupported { keyword, pointer, .. }) if keyword == "format" && pointer == "/y"
        ));
    }

    #[test]
    fn properties_meet_the_other_sides_additional_properties() {
        let a = json!({"properties": {"p": {"type": "string"}}, "additionalProperties": false});
        let b = json!({"properties": {"q": {}}, "required": ["q"]});
        let Ok(Sat::Yes(m)) = both(&a, &b) else {
            panic!()
        };
        let props = m.object.properties.unwrap();
        assert_eq!(
            props[0],
            ("p".to_string(), Sub::Schema(&a["properties"]["p"]))
        );
        assert_eq!(props[1], ("q".to_string(), Sub::FALSE));
        assert_eq!(m.object.additional_properties, Some(Sub::FALSE));
        assert_eq!(m.object.required, vec!["q"]);
    }

    #[test]
    fn items_conjoin_per_position_and_unmergeable_keywords_are_refused() {
        let a = json!({"prefixItems": [{"type": "integer"}], "items": false});
        let b = json!({"items": {"minimum": 1}, "contains": {"const": 1}});
        let Ok(Sat::Yes(m)) = both(&a, &b) else {
            panic!()
        };
        assert_eq!(
            m.array.prefix_items,
            Some(vec![Sub::All(vec![
                Sub::Schema(&a["prefixItems"][0]),
                Sub::Schema(&b["items"])
            ])])
        );
        assert_eq!(m.array.items, Some(Sub::FALSE));
        let c = json!({"contains": {"const": 2}});
        assert!(matches!(
            both(&b, &c),
            Err(SchemaError::Unsupported { keyword, .. }) if keyword == "contains"
        ));
    }
}
