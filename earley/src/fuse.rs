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

use regex_syntax::hir::Hir;
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
    fusable_plans(g, max_weight, excluded, &counted_terminals(g)).0
}

/// Per regex terminal text of `g`, whether the counted construction builds
/// it (`crate::counted`), from the grammar's HIR where it has one.
fn counted_terminals(g: &Grammar) -> rustc_hash::FxHashMap<&str, bool> {
    let mut counted: rustc_hash::FxHashMap<&str, bool> = Default::default();
    for r in &g.rules {
        for sym in &r.rhs {
            if let Symbol::T(Terminal::Regex(text)) = sym {
                counted.entry(text.as_str()).or_insert_with(|| {
                    crate::counted::is_counted_regex_with(text, g.regex_hir(text))
                });
            }
        }
    }
    counted
}

/// [`fusable_excluding`] with the [`Plan`] of each fused nonterminal.
fn fusable_plans(
    g: &Grammar,
    max_weight: usize,
    excluded: &[NtId],
    counted: &rustc_hash::FxHashMap<&str, bool>,
) -> (Vec<Option<String>>, Vec<Option<Plan>>) {
    let n = g.num_nonterminals();
    let mut by_nt: Vec<Vec<&Rule>> = vec![Vec::new(); n];
    let mut by_nt_ix: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, r) in g.rules.iter().enumerate() {
        if let Some(v) = by_nt.get_mut(r.lhs.index()) {
            v.push(r);
            by_nt_ix[r.lhs.index()].push(i);
        }
    }
    let mut re: Vec<Option<String>> = vec![None; n];
    let mut plans: Vec<Option<Plan>> = vec![None; n];
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
    for r in &g.rules {
        for sym in &r.rhs {
            let own = match sym {
                Symbol::T(Terminal::Regex(text)) => {
                    counted.get(text.as_str()).copied().unwrap_or(false)
                }
                // an intersection or an exception is no regex
                Symbol::T(Terminal::And(..) | Terminal::Except(..) | Terminal::Avoid(..)) => true,
                _ => false,
            };
            if own {
                if let Some(d) = dead.get_mut(r.lhs.index()) {
                    *d = true;
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
            let mut roles = Vec::with_capacity(rules.len());
            for (k, r) in rules.iter().enumerate() {
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
                let ix = by_nt_ix[nt][k];
                match selfs.as_slice() {
                    [] => {
                        roles.push((ix, Role::Base));
                        base.push(cat(&r.rhs))
                    }
                    [i] if *i + 1 == r.rhs.len() && r.rhs.len() > 1 => {
                        roles.push((ix, Role::Right));
                        right.push(cat(&r.rhs[..*i]))
                    }
                    [0] if r.rhs.len() > 1 => {
                        roles.push((ix, Role::Left));
                        left.push(cat(&r.rhs[1..]))
                    }
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
                    plans[nt] = Some(Plan {
                        rules: roles,
                        suffix: suffix.is_some(),
                    });
                    weight[nt] = w;
                    lexterms[nt] = terms;
                }
                _ => dead[nt] = true,
            }
            changed = true;
        }
    }
    (re, plans)
}

/// How a fused nonterminal's regex text was put together from its rules,
/// kept so that its HIR can be built the same way from its parts' HIRs
/// ([`Fused::hir`]) when its terminal is compiled — not parsed from the
/// text, and only on a miss of the shared terminal cache.
#[derive(Clone, Debug)]
struct Plan {
    /// The nonterminal's rules (indices into the grammar's rules), each
    /// with its place in the regex.
    rules: Vec<(usize, Role)>,
    /// Every rule ends in one common symbol, factored out: `(α₁|α₂) Z`.
    suffix: bool,
}

/// A rule's place in its nonterminal's fused regex.
#[derive(Clone, Copy, Debug)]
enum Role {
    /// `N → α`: one alternative `α`.
    Base,
    /// `N → α N`: `(α)*` before the alternatives.
    Right,
    /// `N → N α`: `(α)*` after them.
    Left,
}

/// `(?:sub){min,max}` (greedy; `max` `None`: unbounded), as the parser
/// builds it.
fn repeat(sub: Hir, min: u32, max: Option<u32>) -> Hir {
    Hir::repetition(regex_syntax::hir::Repetition {
        min,
        max,
        greedy: true,
        sub: Box::new(sub),
    })
}

/// Builds the HIRs of fused nonterminals from their [`Plan`]s, mirroring
/// the text `fusable_excluding` prints (same alternatives, runs, suffix and
/// stars): a terminal's HIR is [`ByteDfa::hir_of`], the grammar's
/// [`Grammar::regex_hir`] or the parse of its text.
struct HirBuilder<'a> {
    g: &'a Grammar,
    plans: &'a [Option<Plan>],
    memo: rustc_hash::FxHashMap<usize, Option<Hir>>,
}

impl HirBuilder<'_> {
    fn symbol(&mut self, s: &Symbol) -> Option<Hir> {
        match s {
            Symbol::T(Terminal::Regex(text)) => match self.g.regex_hir(text) {
                Some(h) => Some(h.clone()),
                None => crate::terminal::parse_regex(text).ok(),
            },
            Symbol::T(t) => ByteDfa::hir_of(t),
            Symbol::Nt(m) => self.nonterminal(m.index()),
        }
    }

    /// The concatenation of `syms`, a run of one symbol as a counted
    /// repetition.
    fn cat(&mut self, syms: &[Symbol]) -> Option<Hir> {
        let mut hs = Vec::new();
        let mut i = 0;
        while i < syms.len() {
            let mut j = i + 1;
            while j < syms.len() && syms[j] == syms[i] {
                j += 1;
            }
            let h = self.symbol(&syms[i])?;
            hs.push(if j - i > 1 {
                let k = u32::try_from(j - i).ok()?;
                repeat(h, k, Some(k))
            } else {
                h
            });
            i = j;
        }
        Some(Hir::concat(hs))
    }

    fn nonterminal(&mut self, nt: usize) -> Option<Hir> {
        if let Some(h) = self.memo.get(&nt) {
            return h.clone();
        }
        let h = self.build(nt);
        self.memo.insert(nt, h.clone());
        h
    }

    fn build(&mut self, nt: usize) -> Option<Hir> {
        let plan = self.plans.get(nt)?.as_ref()?;
        let cut = usize::from(plan.suffix);
        let (mut base, mut right, mut left) = (Vec::new(), Vec::new(), Vec::new());
        for &(ix, role) in &plan.rules {
            let rhs = &self.g.rules[ix].rhs;
            let rhs = &rhs[..rhs.len() - cut];
            match role {
                Role::Base => base.push(self.cat(rhs)?),
                Role::Right => right.push(self.cat(&rhs[..rhs.len() - 1])?),
                Role::Left => left.push(self.cat(&rhs[1..])?),
            }
        }
        let alt = |v: Vec<Hir>| {
            if v.is_empty() {
                Hir::fail()
            } else {
                Hir::alternation(v)
            }
        };
        let mut b = alt(base);
        if plan.suffix {
            let &(ix, _) = plan.rules.first()?;
            let z = self.g.rules[ix].rhs.last()?.clone();
            b = Hir::concat(vec![b, self.symbol(&z)?]);
        }
        Some(if !right.is_empty() {
            Hir::concat(vec![repeat(alt(right), 0, None), b])
        } else if !left.is_empty() {
            Hir::concat(vec![b, repeat(alt(left), 0, None)])
        } else {
            b
        })
    }
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
    pub families: rustc_hash::FxHashMap<String, std::sync::Arc<Family>>,
    /// How each fused regex was put together ([`Fused::hir`]).
    plans: Vec<Option<Plan>>,
}

impl Fused {
    /// The HIR of the fused regex terminal `text` (`None` for a text no
    /// nonterminal was fused into, or one with a part whose text does not
    /// parse; a family's key gives its nonterminal's regex, the same
    /// language), built from its parts' HIRs: the same language
    /// as the text's parse, which compiling it this way skips. `original`
    /// is the grammar [`fuse_with`] was given. Cost: linear in the regex.
    pub fn hir(&self, original: &Grammar, text: &str) -> Option<Hir> {
        self.hirs(original).get(text)
    }

    /// [`Fused::hir`] for many terminals of one grammar: the HIRs of
    /// nonterminals they share are built once.
    pub fn hirs<'a>(&'a self, original: &'a Grammar) -> FusedHirs<'a> {
        let mut by_text = rustc_hash::FxHashMap::default();
        for (nt, t) in self.terminal.iter().enumerate() {
            if let Some(t) = t {
                by_text.entry(t.as_str()).or_insert(nt);
            }
        }
        FusedHirs {
            builder: HirBuilder {
                g: original,
                plans: &self.plans,
                memo: Default::default(),
            },
            by_text,
        }
    }
}

/// The HIRs of a [`Fused`] grammar's terminals ([`Fused::hirs`]).
pub struct FusedHirs<'a> {
    builder: HirBuilder<'a>,
    by_text: rustc_hash::FxHashMap<&'a str, usize>,
}

impl FusedHirs<'_> {
    /// [`Fused::hir`] of `text`, reusing the HIRs built so far.
    pub fn get(&mut self, text: &str) -> Option<Hir> {
        let nt = *self.by_text.get(text)?;
        self.builder.nonterminal(nt)
    }
}

/// [`fuse_excluding`], and with `families`, regular families (module
/// [`crate::family`]) replaced by family terminals too.
pub fn fuse_with(g: &Grammar, max_weight: usize, excluded: &[NtId], families: bool) -> Fused {
    let counted = counted_terminals(g);
    let (mut re, plans) = fusable_plans(g, max_weight, excluded, &counted);
    let mut fams = rustc_hash::FxHashMap::default();
    if families {
        let n = g.num_nonterminals();
        let mut blocked = vec![false; n];
        for x in excluded {
            if let Some(b) = blocked.get_mut(x.index()) {
                *b = true;
            }
        }
        for r in &g.rules {
            for sym in &r.rhs {
                if let Symbol::T(Terminal::Regex(text)) = sym {
                    if counted.get(text.as_str()).copied().unwrap_or(false) {
                        if let Some(b) = blocked.get_mut(r.lhs.index()) {
                            *b = true;
                        }
                    }
                }
            }
        }
        // fused nonterminals' HIRs from their plans, not from their text
        let mut builder = HirBuilder {
            g,
            plans: &plans,
            memo: Default::default(),
        };
        let found =
            crate::family::regular_families_with(g, &re, &blocked, |m| builder.nonterminal(m));
        for (nt, f) in found.into_iter().enumerate() {
            if let Some(f) = f {
                // (its plan stays: fused parents built from its regex
                // text rebuild their HIRs through it)
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
            plans,
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
        plans,
    }
}
