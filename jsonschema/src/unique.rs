//! `uniqueItems: true`, exact where the items range over a small finite
//! set of scalar values.
//!
//! The item schema's normal form (module `normalize`) must be a union of
//! branches each of which has finitely many values: an `enum`/`const` of
//! scalars (null, booleans, numbers, strings), or a `type` within `null`,
//! `boolean` and `integer` where an integer has both bounds. Those
//! candidate values are deduplicated by JSON equality (`1` and `1.0` are
//! one value) and each is kept with the spellings the compiler's own
//! grammar of the item schema accepts (a number by value: `2`, `2.0`,
//! `2.00`…, `-0` for zero; under drafts 3–4 an `integer` only as `2`),
//! so the domain is
//! exactly the item schema's language, grouped by value. The array is then
//! a finite automaton whose states are the sets of values used so far:
//! from set `S` it may write any value outside `S` (while below
//! `maxItems`) and end (at or above `minItems`). The states are the
//! subsets of at most `maxItems` of the `d` values, bounded by
//! [`JsonSchemaOptions::max_unique_states`]; `d` by
//! [`JsonSchemaOptions::max_unique_values`]. Beyond either bound the
//! schema is refused ([`SchemaError::TooLarge`], naming `uniqueItems`);
//! items of an infinite domain, `prefixItems` and `contains` next to
//! `uniqueItems` are refused ([`SchemaError::Unsupported`] on
//! `uniqueItems`). Arrays of at most one item (`maxItems` ≤ 1) are always
//! unique, so there `uniqueItems` needs nothing (handled by the caller).
//!
//! [`JsonSchemaOptions::max_unique_states`]: super::JsonSchemaOptions::max_unique_states
//! [`JsonSchemaOptions::max_unique_values`]: super::JsonSchemaOptions::max_unique_values

use rustc_hash::FxHashMap as HashMap;

use serde_json::Value;

use super::emit::{lit, re, Emitter};
use super::error::{push_ptr, SchemaError};
use super::numbers::value_regex;
use super::schema::{json_eq, Sub, TypeSet};
use zapspec_grammar::ir::{NtId, Symbol};
use zapspec_grammar::Recognizer;

/// Largest magnitude of an integer bound enumerated (exact in `f64`).
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// The refusal of items whose domain is not a finite set of scalars.
fn infinite(ptr: &str, what: &str) -> SchemaError {
    SchemaError::unsupported(
        "uniqueItems",
        ptr,
        format!(
            "only items with a finite domain of scalars (enum/const of scalars, null, boolean, \
             integer with both bounds) are implemented; the items allow {what}"
        ),
    )
}

/// Number of subsets of at most `k` of `d` elements, saturating.
fn subsets_up_to(d: u64, k: u64) -> u64 {
    let mut total: u128 = 0;
    let mut c: u128 = 1; // C(d, j), exact for d ≤ 64
    for j in 0..=k.min(d) {
        total = total.saturating_add(c);
        // C(d, j+1) = C(d, j) · (d − j) / (j + 1)
        c = c.saturating_mul(u128::from(d - j)) / u128::from(j + 1);
    }
    u64::try_from(total).unwrap_or(u64::MAX)
}

impl<'a> Emitter<'a> {
    /// The candidate values of the items: every value the item schema may
    /// accept (a superset of its language), or a refusal when that is no
    /// small finite set of scalars.
    fn unique_candidates(
        &mut self,
        items: &Sub<'a>,
        iptr: &str,
        ptr: &str,
    ) -> Result<Vec<Value>, SchemaError> {
        // a set of values is a 64-bit mask
        let limit = self.opts.max_unique_values.min(64);
        let too_many = |ptr: &str| SchemaError::TooLarge {
            pointer: ptr.to_string(),
            reason: format!(
                "uniqueItems over more than {limit} distinct item values \
                 (JsonSchemaOptions::max_unique_values)"
            ),
        };
        let mut out: Vec<Value> = Vec::new();
        let push = |out: &mut Vec<Value>, v: Value| -> bool {
            if !out.iter().any(|w| json_eq(w, &v)) {
                out.push(v);
            }
            out.len() <= limit
        };
        let branches = self.norm.branches(items, iptr)?;
        for b in &branches {
            let types = b.types();
            if let Some(e) = &b.enum_values {
                for v in e {
                    if !types.admits(v) {
                        continue;
                    }
                    if v.is_array() || v.is_object() {
                        return Err(infinite(ptr, "an array or object enum member"));
                    }
                    if !push(&mut out, v.clone()) {
                        return Err(too_many(ptr));
                    }
                }
                continue;
            }
            for (t, what) in [
                (TypeSet::STRING, "strings"),
                (TypeSet::ARRAY, "arrays"),
                (TypeSet::OBJECT, "objects"),
                (TypeSet::NUMBER, "non-integer numbers"),
            ] {
                if types.contains(t) {
                    return Err(infinite(ptr, what));
                }
            }
            if types.contains(TypeSet::NULL) && !push(&mut out, Value::Null) {
                return Err(too_many(ptr));
            }
            if types.contains(TypeSet::BOOLEAN) {
                for x in [true, false] {
                    if !push(&mut out, Value::Bool(x)) {
                        return Err(too_many(ptr));
                    }
                }
            }
            if types.contains(TypeSet::INTEGER) {
                let n = &b.number;
                let f = |x: &Option<serde_json::Number>| x.as_ref().and_then(|n| n.as_f64());
                let lo = match (f(&n.minimum), f(&n.exclusive_minimum)) {
                    (None, None) => None,
                    (a, b) => Some(
                        a.map(f64::ceil)
                            .unwrap_or(f64::MIN)
                            .max(b.map(|x| x.floor() + 1.0).unwrap_or(f64::MIN)),
                    ),
                };
                let hi = match (f(&n.maximum), f(&n.exclusive_maximum)) {
                    (None, None) => None,
                    (a, b) => Some(
                        a.map(f64::floor)
                            .unwrap_or(f64::MAX)
                            .min(b.map(|x| x.ceil() - 1.0).unwrap_or(f64::MAX)),
                    ),
                };
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    return Err(infinite(ptr, "integers without both bounds"));
                };
                if lo.abs() > MAX_EXACT || hi.abs() > MAX_EXACT {
                    return Err(infinite(ptr, "integers with bounds beyond 2^53"));
                }
                // the bounds are exact in f64 here, so is the count
                if hi >= lo && hi - lo >= limit as f64 {
                    return Err(too_many(ptr));
                }
                let mut i = lo;
                while i <= hi {
                    if !push(&mut out, Value::from(i as i64)) {
                        return Err(too_many(ptr));
                    }
                    i += 1.0;
                }
            }
        }
        Ok(out)
    }

    /// The distinct values of the items with their spellings (each a
    /// symbol for texts the item grammar accepts), in candidate order.
    fn unique_domain(
        &mut self,
        items: &Sub<'a>,
        iptr: &str,
        ptr: &str,
    ) -> Result<Vec<Vec<Symbol>>, SchemaError> {
        let cands = self.unique_candidates(items, iptr, ptr)?;
        if cands.is_empty() {
            return Ok(vec![]);
        }
        let g = match self.compile_sub(items, iptr) {
            Ok((g, _)) => g,
            Err(SchemaError::Unsatisfiable { .. }) => return Ok(vec![]),
            Err(e) => return Err(e),
        };
        let rec = Recognizer::new(&g).map_err(|e| {
            SchemaError::unsupported("uniqueItems", ptr, format!("the items' grammar: {e}"))
        })?;
        let mut out = Vec::new();
        for v in &cands {
            let ok = match v {
                Value::Number(n) => number_spellings(n, &rec),
                v if rec.recognizes(v.to_string().as_bytes()) => vec![lit(&v.to_string())],
                _ => vec![],
            };
            if !ok.is_empty() {
                out.push(ok);
            }
        }
        Ok(out)
    }

    /// An array with `uniqueItems: true` of `min..=max` items of the
    /// schema `items` (no `prefixItems`, no `contains`, `max` > 1 or
    /// none): see the module docs.
    pub(crate) fn unique_array(
        &mut self,
        nt: NtId,
        items: &Sub<'a>,
        min: u64,
        max: Option<u64>,
        ptr: &str,
    ) -> Result<(), SchemaError> {
        let iptr = push_ptr(ptr, "items");
        let domain = self.unique_domain(items, &iptr, ptr)?;
        let d = domain.len() as u64;
        if min > d {
            self.norm.note_unsat(
                ptr,
                format!("minItems above the {d} distinct values the items allow (uniqueItems)"),
            );
            return Ok(());
        }
        let top = max.map_or(d, |m| m.min(d));
        let n_states = subsets_up_to(d, top);
        if n_states > self.opts.max_unique_states as u64 {
            return Err(SchemaError::TooLarge {
                pointer: ptr.to_string(),
                reason: format!(
                    "uniqueItems: {n_states} sets of item values to track, above {} \
                     (JsonSchemaOptions::max_unique_states)",
                    self.opts.max_unique_states
                ),
            });
        }
        let base = self.g.name(nt).to_string();
        // one nonterminal per value, deriving its spellings
        let mut vals: Vec<NtId> = Vec::new();
        for spellings in &domain {
            let v = self.fresh(&format!("{base}-value"), ptr)?;
            for s in spellings {
                self.g.add_rule(v, vec![s.clone()]);
            }
            vals.push(v);
        }
        let ws = self.ws();
        let mut states: HashMap<u64, NtId> = HashMap::default();
        let s0 = self.fresh(&format!("{base}-set"), ptr)?;
        states.insert(0, s0);
        let mut open = vec![lit("[")];
        open.extend(ws.clone());
        open.push(Symbol::Nt(s0));
        self.g.add_rule(nt, open);
        let mut work = vec![0u64];
        while let Some(set) = work.pop() {
            let me = states[&set];
            let k = u64::from(set.count_ones());
            if k >= min {
                let close = self.close("]", k);
                self.g.add_rule(me, vec![close]);
            }
            if k >= top {
                continue;
            }
            for (i, &v) in vals.iter().enumerate() {
                if set >> i & 1 == 1 {
                    continue;
                }
                let to_set = set | 1 << i;
                let to = match states.get(&to_set) {
                    Some(&x) => x,
                    None => {
                        let x = self.fresh(&format!("{base}-set"), ptr)?;
                        states.insert(to_set, x);
                        work.push(to_set);
                        x
                    }
                };
                let mut rhs = self.lead(k);
                rhs.push(Symbol::Nt(v));
                rhs.extend(ws.clone());
                rhs.push(Symbol::Nt(to));
                self.g.add_rule(me, rhs);
            }
        }
        Ok(())
    }
}

/// The spellings of the number `n` that the item grammar `rec` accepts,
/// as symbols: its plain decimal text (`2`, `2.5`, `0`) and, where
/// accepted, the same with trailing fraction zeros (`2.0…`, `2.50…`), and
/// for zero the same with a minus sign. The compiler's number grammars
/// accept one text of each of these families only with all of them (a
/// zero fraction or `-0` is allowed by value or not at all), so testing
/// one member decides the family.
fn number_spellings(n: &serde_json::Number, rec: &Recognizer) -> Vec<Symbol> {
    let Some(re_text) = value_regex(n, true) else {
        // non-integral (or beyond `u128`): the plain text, padded
        let t = n.to_string();
        let mut out = Vec::new();
        if rec.recognizes(t.as_bytes()) {
            out.push(lit(&t));
        }
        if t.contains('.') && !t.contains(['e', 'E']) && rec.recognizes(format!("{t}0").as_bytes())
        {
            out.push(re(format!("{}0+", regex_syntax::escape(&t))));
        }
        return out;
    };
    // an integral value: `re_text` is its plain integer text (`-3`, `0`)
    let mut out = Vec::new();
    let mut signs = vec![re_text.clone()];
    if re_text == "0" {
        signs.push("-0".into());
    }
    for t in signs {
        if rec.recognizes(t.as_bytes()) {
            out.push(lit(&t));
        }
        if rec.recognizes(format!("{t}.0").as_bytes()) {
            out.push(re(format!("{}\\.0+", regex_syntax::escape(&t))));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::subsets_up_to;

    #[test]
    fn subsets_are_counted_by_binomials() {
        assert_eq!(subsets_up_to(4, 4), 16);
        assert_eq!(subsets_up_to(4, 1), 5);
        assert_eq!(subsets_up_to(16, 3), 1 + 16 + 120 + 560);
        assert_eq!(subsets_up_to(0, 5), 1);
        assert_eq!(subsets_up_to(64, 64), u64::MAX);
    }
}
