//! Terminal fusion: nonterminals that denote *regular* languages of modest
//! size are compiled into one regex terminal before parsing.
//!
//! Byte-level grammars written character by character (GBNF's
//! `string ::= "\"" char* "\""`) give the Earley parser one item per
//! character and make every character a terminal boundary, which defeats
//! the context-independent mask cache of §4.3 (a token inside a string
//! crosses many terminals). Fusion turns such lexeme-like nonterminals back
//! into single DFAs, so a token inside a JSON string is classified by one
//! table lookup. The transform preserves the language: a fused nonterminal
//! `N` is replaced, wherever a non-fused rule uses it, by a terminal whose
//! regex denotes exactly `L(N)`:
//!
//! - `N` whose rules use only terminals and already-fused nonterminals:
//!   the alternation of the concatenations;
//! - `N` that refers to itself only as the *last* symbol of some rules
//!   (`N → α N | β`, right-linear, what `*`/`+` desugar to) is `(α)*(β)`;
//!   only as the *first* symbol (`N → N α | β`) is `(β)(α)*`;
//! - `N` in a larger recursive cycle, or whose regex would exceed
//!   [`MAX_FUSED_REGEX`] characters, is left as rules (its fusable
//!   children are still fused). The size bound keeps fused terminals
//!   lexeme-sized: a JSON string or number becomes one terminal, a whole
//!   object does not, so the (terminal, state) cache entries of strings are
//!   shared between all the places a string occurs.

use zapspec_grammar::{Grammar, NtId, Rule, Symbol, Terminal};

use crate::family::Family;
use crate::terminal::ByteDfa;
use zapspec_grammar::limits::regex_nesting as nesting;

/// Fused regexes longer than this (in characters) are not used.
pub const MAX_FUSED_REGEX: usize = 600;
/// A sub-grammar with at most this many distinct terminals counts as one
/// lexeme (e.g. a string of bounded length: quotes and one character unit)
/// and may be fused up to [`MAX_LEXEME_REGEX`] characters.
pub const LEXEME_TERMINALS: usize = 3;
/// Size bound of a fused lexeme's regex.
pub const MAX_LEXEME_REGEX: usize = 20_000;
/// Size bound of a fused set of literals' regex (an `enum`, one
/// alternation of literals: an NFA trie, linear in its text; the weight
/// bound does not apply to it).
pub const MAX_LITERAL_SET_REGEX: usize = 1 << 20;
/// Default bound on a fused regex's estimated expanded size (counted
/// repetitions multiplied out; roughly NFA states): larger ones are not
/// used (`EngineConfig::fuse_max_weight`). A string with `maxLength:
/// 32767` fused whole is an automaton of ~100k states (its NFA built at
/// compile time, its DFA states — eagerly, or lazily as masks reach them —
/// as many again: seconds of TTFM or of the first masks); left as the
/// compiler's binary decomposition, its
/// ≤ 2^k-unit pieces are fused and the rest is parsed: DFA construction
/// leaves TTFM at the cost of some byte-level parsing per token.
pub const MAX_FUSED_WEIGHT: usize = 20_000;

/// Fused regexes nested deeper than this (groups within groups) are not
/// used: `regex-syntax` refuses nesting beyond 250 (its depth counts
/// alternations and repetitions too, so parentheses are a lower bound), and
/// a chain of right-linear rules (`maxItems: 1000` written out rule by
/// rule) nests a few groups per rule. Engines compiled with a refused
/// fused terminal un-fuse that nonterminal and retry
/// (`CompiledGrammar::new`).
pub const MAX_FUSED_NESTING: usize = 60;

/// The regex of each nonterminal that can be fused (None: cannot).
pub fn fusable(g: &Grammar) -> Vec<Option<String>> {
    fusable_within(g, MAX_FUSED_WEIGHT)
}

/// [`fusable`] with the weight bound `max_weight`.
pub fn fusable_within(g: &Grammar, max_weight: usize) -> Vec<Option<String>> {
    fusable_excluding(g, max_weight, &[])
}

/// [`fusable_within`], never fusing the nonterminals in `excluded` (nor,
/// therefore, any nonterminal that uses them).
pub fn fusable_excluding(g: &Grammar, max_weight: usize, excluded: &[NtId]) -> Vec<Option<String>> {
    let n = g.num_nonterminals();
    let mut by_nt: Vec<Vec<&Rule>> = vec![Vec::new(); n];
    for r in &g.rules {
        if let Some(v) = by_nt.get_mut(r.lhs.index()) {
            v.push(r);
        }
    }
    let mut re: Vec<Option<String>> = vec![None; n];
    let mut weight: Vec<usize> = vec![0; n];
    // Distinct terminal texts under each fused nonterminal (at most
    // LEXEME_TERMINALS + 1 kept): few means "a lexeme", e.g. a counted
    // repetition of one character class.
    let mut lexterms: Vec<Vec<String>> = vec![Vec::new(); n];
    let mut dead = vec![false; n];
    for x in excluded {
        if let Some(d) = dead.get_mut(x.index()) {
            *d = true;
        }
    }
    // A terminal the counted construction builds (`crate::counted`) stays a
    // terminal of its own: inside a larger regex it would lose that shape
    // and be determinised as `n` expanded copies.
    let mut counted: std::collections::HashMap<&str, bool> = Default::default();
    for r in &g.rules {
        for sym in &r.rhs {
            if let Symbol::T(Terminal::Regex(text)) = sym {
                let c = *counted
                    .entry(text.as_str())
                    .or_insert_with(|| crate::counted::is_counted_regex(text));
                if c {
                    if let Some(d) = dead.get_mut(r.lhs.index()) {
                        *d = true;
                    }
                }
            }
        }
    }
    let sym_re = |s: &Symbol, re: &[Option<String>]| -> Option<String> {
        match s {
            Symbol::T(t) => Some(ByteDfa::regex_of(t)),
            Symbol::Nt(m) => re
                .get(m.index())
                .cloned()
                .flatten()
                .map(|r| format!("(?:{r})")),
        }
    };
    // Children before parents (post-order of the nonterminal graph), so
    // one pass decides every nonterminal outside a cycle; further passes
    // only propagate deaths through cycles. (In index order a chain of
    // nonterminals defined parent first needed one pass per link.)
    let order = post_order(n, &by_nt);
    let mut changed = true;
    while changed {
        changed = false;
        for &nt in &order {
            if re[nt].is_some() || dead[nt] {
                continue;
            }
            let me = NtId(nt as u32);
            let rules = &by_nt[nt];
            // Children must be decided (fusable) first.
            let mut ready = true;
            for r in rules {
                for s in &r.rhs {
                    if let Symbol::Nt(m) = s {
                        if *m == me {
                            continue;
                        }
                        if m.index() >= n || dead[m.index()] {
                            dead[nt] = true;
                            changed = true;
                        } else if re[m.index()].is_none() {
                            ready = false;
                        }
                    }
                }
            }
            if dead[nt] || !ready {
                continue;
            }
            let mut base = Vec::new();
            let mut right = Vec::new();
            let mut left = Vec::new();
            let mut ok = true;
            // Distinct terminals of the sub-grammar.
            let mut terms: Vec<String> = Vec::new();
            for r in rules {
                for x in &r.rhs {
                    let add: Vec<String> = match x {
                        Symbol::T(t) => vec![ByteDfa::regex_of(t)],
                        Symbol::Nt(m) if *m == me => vec![],
                        Symbol::Nt(m) => lexterms[m.index()].clone(),
                    };
                    for a in add {
                        if terms.len() <= LEXEME_TERMINALS && !terms.contains(&a) {
                            terms.push(a);
                        }
                    }
                }
            }
            // Common last symbol of every alternative (no self reference):
            // `A → α₁ Z | α₂ Z` is `(α₁|α₂) Z`, which keeps nested counted
            // ranges (`Q_k → Q_{k-1} | P_{k-1} Q_{k-1}`) linear in size.
            let mut suffix: Option<&Symbol> = None;
            if rules.len() >= 2 {
                if let Some(z) = rules[0].rhs.last() {
                    if *z != Symbol::Nt(me)
                        && rules
                            .iter()
                            .all(|r| r.rhs.last() == Some(z) && !r.rhs.contains(&Symbol::Nt(me)))
                    {
                        suffix = Some(z);
                    }
                }
            }
            let cut = usize::from(suffix.is_some());
            for r in rules {
                let r = &Rule {
                    lhs: r.lhs,
                    rhs: r.rhs[..r.rhs.len() - cut].to_vec(),
                };
                let selfs: Vec<usize> = r
                    .rhs
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| **s == Symbol::Nt(me))
                    .map(|(i, _)| i)
                    .collect();
                // Concatenation; a run of one repeated symbol `X X … X` is
                // written `(?:X){k}` so counted repetitions stay small text.
                let cat = |syms: &[Symbol]| -> Option<(String, usize)> {
                    let mut s = String::new();
                    let mut w = 0usize;
                    let mut i = 0;
                    while i < syms.len() {
                        let mut j = i + 1;
                        while j < syms.len() && syms[j] == syms[i] {
                            j += 1;
                        }
                        let x = sym_re(&syms[i], &re)?;
                        let xw = match &syms[i] {
                            Symbol::Nt(m) => weight[m.index()],
                            Symbol::T(_) => x.len(),
                        };
                        if j - i > 1 {
                            s.push_str(&format!("(?:{x}){{{}}}", j - i));
                        } else {
                            s.push_str(&x);
                        }
                        w = w.saturating_add(xw.saturating_mul(j - i));
                        i = j;
                    }
                    Some((s, w))
                };
                match selfs.as_slice() {
                    [] => base.push(cat(&r.rhs)),
                    [i] if *i + 1 == r.rhs.len() && r.rhs.len() > 1 => {
                        right.push(cat(&r.rhs[..*i]))
                    }
                    [0] if r.rhs.len() > 1 => left.push(cat(&r.rhs[1..])),
                    _ => ok = false,
                }
            }
            if !ok || (!right.is_empty() && !left.is_empty()) {
                dead[nt] = true;
                changed = true;
                continue;
            }
            let alt = |v: Vec<Option<(String, usize)>>| -> Option<(String, usize)> {
                let v: Option<Vec<(String, usize)>> = v.into_iter().collect();
                let v = v?;
                let w = v.iter().fold(0usize, |a, x| a.saturating_add(x.1));
                let texts: Vec<String> = v.into_iter().map(|x| x.0).collect();
                Some(if texts.is_empty() {
                    ("[a&&b]".to_string(), 1)
                } else {
                    (format!("(?:{})", texts.join("|")), w)
                })
            };
            let mut b = alt(base);
            if let (Some(z), Some((bt, bw))) = (suffix, b.clone()) {
                let zw = match z {
                    Symbol::Nt(m) => weight[m.index()],
                    Symbol::T(_) => 1,
                };
                b = sym_re(z, &re).map(|zt| (format!("{bt}{zt}"), bw.saturating_add(zw)));
            }
            let r = if !right.is_empty() {
                alt(right)
                    .zip(b)
                    .map(|(a, b)| (format!("(?:{})*{}", a.0, b.0), a.1.saturating_add(b.1)))
            } else if !left.is_empty() {
                alt(left)
                    .zip(b)
                    .map(|(a, b)| (format!("{}(?:{})*", b.0, a.0), a.1.saturating_add(b.1)))
            } else {
                b
            };
            // A finite set of literals (an `enum`): one alternation, which
            // the NFA compiler lays out as a trie, however long its text;
            // left as rules, its literals are as many items of one Earley
            // set, each stepped on every byte.
            let literal_set = by_nt[nt]
                .iter()
                .all(|r| matches!(r.rhs.as_slice(), [Symbol::T(Terminal::Literal(_))]));
            match r {
                Some((r, w))
                    if nesting(&r) <= MAX_FUSED_NESTING
                        && ((w <= max_weight
                            && (r.len() <= MAX_FUSED_REGEX
                                || (terms.len() <= LEXEME_TERMINALS
                                    && r.len() <= MAX_LEXEME_REGEX)))
                            || (literal_set && r.len() <= MAX_LITERAL_SET_REGEX)) =>
                {
                    re[nt] = Some(r);
                    weight[nt] = w;
                    lexterms[nt] = terms;
                }
                _ => dead[nt] = true,
            }
            changed = true;
        }
    }
    re
}

/// The nonterminals `0..n` in a post-order of their uses (`by_nt[a]`'s
/// rules use `b` ⇒ `b` before `a`, outside cycles), by an iterative
/// depth-first search.
fn post_order(n: usize, by_nt: &[Vec<&Rule>]) -> Vec<usize> {
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    // (nonterminal, next rule, next symbol)
    let mut stack: Vec<(usize, usize, usize)> = Vec::new();
    for root in 0..n {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        stack.push((root, 0, 0));
        while let Some(top) = stack.last_mut() {
            let (nt, ri, si) = *top;
            let rules = &by_nt[nt];
            if ri >= rules.len() {
                order.push(nt);
                stack.pop();
                continue;
            }
            if si >= rules[ri].rhs.len() {
                *top = (nt, ri + 1, 0);
                continue;
            }
            *top = (nt, ri, si + 1);
            if let Symbol::Nt(m) = &rules[ri].rhs[si] {
                let m = m.index();
                if m < n && !seen[m] {
                    seen[m] = true;
                    stack.push((m, 0, 0));
                }
            }
        }
    }
    order
}

/// The grammar with every fusable nonterminal replaced by a regex terminal
/// at its uses (see the module docs). Nonterminal ids are unchanged.
pub fn fuse(g: &Grammar) -> Grammar {
    fuse_within(g, MAX_FUSED_WEIGHT)
}

/// [`fuse`] with the weight bound `max_weight`.
pub fn fuse_within(g: &Grammar, max_weight: usize) -> Grammar {
    fuse_excluding(g, max_weight, &[]).0
}

/// [`fuse_within`] never fusing `excluded`; also returns the regex of each
/// fused nonterminal (to find which one a refused terminal came from).
pub fn fuse_excluding(
    g: &Grammar,
    max_weight: usize,
    excluded: &[NtId],
) -> (Grammar, Vec<Option<String>>) {
    let f = fuse_with(g, max_weight, excluded, false);
    (f.grammar, f.terminal)
}

/// The result of [`fuse_with`].
#[derive(Clone, Debug)]
pub struct Fused {
    /// The grammar with fused nonterminals replaced by terminals.
    pub grammar: Grammar,
    /// The terminal text each nonterminal was replaced by (a regex, or a
    /// family's [`Family::key`]); `None`: kept as rules.
    pub terminal: Vec<Option<String>>,
    /// The families behind terminal texts starting with
    /// [`crate::family::FAMILY_PREFIX`], by text.
    pub families: std::collections::HashMap<String, std::sync::Arc<Family>>,
}

/// [`fuse_excluding`], and with `families`, regular families (module
/// [`crate::family`]) replaced by family terminals too.
pub fn fuse_with(g: &Grammar, max_weight: usize, excluded: &[NtId], families: bool) -> Fused {
    let mut re = fusable_excluding(g, max_weight, excluded);
    let mut fams = std::collections::HashMap::new();
    if families {
        let n = g.num_nonterminals();
        let mut blocked = vec![false; n];
        for x in excluded {
            if let Some(b) = blocked.get_mut(x.index()) {
                *b = true;
            }
        }
        let mut counted: std::collections::HashMap<&str, bool> = Default::default();
        for r in &g.rules {
            for sym in &r.rhs {
                if let Symbol::T(Terminal::Regex(text)) = sym {
                    if *counted
                        .entry(text.as_str())
                        .or_insert_with(|| crate::counted::is_counted_regex(text))
                    {
                        if let Some(b) = blocked.get_mut(r.lhs.index()) {
                            *b = true;
                        }
                    }
                }
            }
        }
        let found = crate::family::regular_families(g, &re, &blocked);
        for (nt, f) in found.into_iter().enumerate() {
            if let Some(f) = f {
                re[nt] = Some(f.key().to_string());
                fams.insert(f.key().to_string(), f);
            }
        }
    }
    let n = g.num_nonterminals();
    let mut out = Grammar::new();
    for i in 0..n {
        out.add_nonterminal(g.name(NtId(i as u32)));
    }
    out.start = g.start;
    let map = |s: &Symbol| -> Symbol {
        match s {
            Symbol::Nt(m) => match re.get(m.index()).cloned().flatten() {
                Some(r) => Symbol::T(Terminal::Regex(r)),
                None => s.clone(),
            },
            t => t.clone(),
        }
    };
    if let Some(Some(r)) = re.get(g.start.index()) {
        out.add_rule(g.start, vec![Symbol::T(Terminal::Regex(r.clone()))]);
        return Fused {
            grammar: out,
            terminal: re,
            families: fams,
        };
    }
    for r in &g.rules {
        if re.get(r.lhs.index()).is_some_and(|x| x.is_some()) {
            continue;
        }
        out.add_rule(r.lhs, r.rhs.iter().map(map).collect());
    }
    Fused {
        grammar: out,
        terminal: re,
        families: fams,
    }
}
