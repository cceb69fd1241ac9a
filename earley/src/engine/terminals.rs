//! The terminal cache of a [`VocabIndex`]: each terminal's automaton,
//! compiled once per index and keyed by regex text (a cache miss builds
//! it, or defers it to first use), and [`TerminalTokens`], what one
//! terminal state contributes to a mask.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rustc_hash::FxBuildHasher;

use zapspec_core::{TokenId, TokenSet, Vocabulary};
use zapspec_grammar::Terminal;

use crate::ci_cache::TermEntry;
use crate::error::EarleyError;
use crate::terminal::ByteDfa;

use super::ring::map_bytes;
use super::ring::Ghosts;
use super::VocabIndex;

impl VocabIndex {
    /// The shared entry of a terminal given as regex text.
    pub(crate) fn terminal_regex(&self, regex: String) -> Result<Arc<TermEntry>, EarleyError> {
        self.terminal_regex_with(regex, &zapspec_grammar::RegexLimits::default())
    }

    /// [`Self::terminal_regex`] under explicit limits (an entry compiled
    /// earlier is reused whatever the limits it was compiled under).
    pub(crate) fn terminal_regex_with(
        &self,
        regex: String,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        self.terminal_built(regex, |re| self.entry_of_text(re, limits))
    }

    /// [`Self::entry_of`] the parse of `regex`.
    fn entry_of_text(
        &self,
        regex: &str,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<TermEntry, EarleyError> {
        let hir = crate::terminal::parse_regex(regex).map_err(|e| EarleyError::Terminal {
            regex: regex.to_string(),
            reason: e.to_string(),
        })?;
        self.entry_of(regex, Arc::new(hir), limits, self.config.lazy_dfas)
    }

    /// The entry of `hir` (the language of `regex`): deferred to its first
    /// use where [`ByteDfa::deferrable`] allows (`IndexConfig::lazy_dfas`
    /// on, no look-around, not a counted repetition, a modest NFA), built
    /// now otherwise.
    fn entry_of(
        &self,
        regex: &str,
        hir: Arc<regex_syntax::hir::Hir>,
        limits: &zapspec_grammar::RegexLimits,
        lazy: bool,
    ) -> Result<TermEntry, EarleyError> {
        if self.config.direct_literals {
            if let Some(dfa) = literal_dfa(&hir, limits) {
                return Ok(TermEntry::new(regex.to_string(), dfa));
            }
        }
        if self.config.deferred_terminals {
            if let Some(facts) = ByteDfa::deferrable(&hir, limits, lazy) {
                self.deferred.fetch_add(1, Ordering::Relaxed);
                return Ok(TermEntry::deferred(regex.to_string(), hir, *limits, facts));
            }
        }
        let dfa = ByteDfa::from_parsed(&hir, regex, limits, lazy)?;
        Ok(TermEntry::new(regex.to_string(), dfa))
    }

    /// The shared entry of a regular family's terminal ([`crate::family`]),
    /// keyed by its text like a regex.
    pub(crate) fn terminal_family(
        &self,
        family: &crate::family::Family,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        self.terminal_built(
            ByteDfa::regex_of(&Terminal::Regex(family.key().to_string())),
            |re| Ok(TermEntry::new(re.to_string(), family.dfa(limits)?)),
        )
    }

    /// The entry of `regex` from the cache, or built by `build` and stored.
    fn terminal_built(
        &self,
        regex: String,
        build: impl FnOnce(&str) -> Result<TermEntry, EarleyError>,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        if let Some(e) = self.lock().get(&*regex) {
            e.touch(self.tick());
            e.note_compile();
            return Ok(e.clone());
        }
        // The clock is read only when the caller asked for build times
        // (`IndexConfig::time_dfa_builds`, a documented wall-time stat).
        let t0 = self.config.time_dfa_builds.then(std::time::Instant::now);
        let entry = build(&regex);
        self.dfa_builds.fetch_add(1, Ordering::Relaxed);
        if let Some(t0) = t0 {
            self.dfa_build_nanos.fetch_add(
                u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        }
        let mut entry = entry?;
        // one allocation of the text, shared by the entry and the map's key
        let key: Arc<str> = regex.into();
        entry.regex = key.clone();
        entry.charge(&self.account);
        let ours = Arc::new(entry);
        ours.touch(self.tick());
        ours.note_compile();
        if self
            .ghosts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set
            .contains(&Ghosts::hash(&key))
        {
            // released once already: a second grammar uses it
            ours.note_compile();
        }
        let e = {
            let mut map = self.lock();
            let e = map.entry(key).or_insert_with(|| ours.clone()).clone();
            self.tables.terminals.set(&self.account, map_bytes(&map));
            e
        };
        if Arc::ptr_eq(&e, &ours) {
            let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
            ring.push(Arc::downgrade(&e));
            self.charge_ring(&ring);
        }
        Ok(e)
    }

    /// What the terminal given as regex text (in [`ByteDfa::regex_of`]'s
    /// dialect), after it has read `prefix`, contributes to any mask: its
    /// context-independent cache entry as plain data, computed on first
    /// use (and the terminal compiled on first use) like a mask would;
    /// `None` when no match starts with `prefix`. For inspecting and
    /// measuring the cache: masks never need it.
    pub fn terminal_tokens(
        &self,
        regex: &str,
        prefix: &[u8],
    ) -> Result<Option<TerminalTokens>, EarleyError> {
        let e = self.terminal_regex(regex.to_string())?;
        let s = e.dfa().run(e.dfa().start(), prefix);
        if s == ByteDfa::DEAD {
            return Ok(None);
        }
        let c = e.ci(s, self);
        Ok(Some(TerminalTokens {
            allowed: c.allowed_tokens(self.vocab.len()),
            dependent: c.dependent(),
            sliced: c.sliced(),
        }))
    }

    pub(crate) fn terminal(
        &self,
        t: &Terminal,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        match t {
            Terminal::And(..) => return self.terminal_and(t, || None, || None, limits),
            Terminal::Except(..) => return self.terminal_except(t, || None, limits),
            Terminal::Avoid(..) => return self.terminal_avoid(t, || None, limits),
            _ => {}
        }
        self.terminal_regex_with(ByteDfa::regex_of(t), limits)
    }

    /// The entry of an intersection ([`Terminal::And`], any other
    /// terminal: as [`Self::terminal`]), built on a miss from the HIRs `a`
    /// and `b` give (`None`: the parse of the text): by
    /// [`ByteDfa::from_and`] when `b` is a counted repetition (a counter
    /// times its unit, `crate::intersect`), else as the product of the two
    /// regexes' own entries, which every intersection over the same regex
    /// shares (two `format`/`pattern` strings: the format's automaton is
    /// built once, lazily, and the product explores only the pairs
    /// reachable from the start). Built at once, not deferred: its pair
    /// table is what compilation reads the start state from.
    pub(crate) fn terminal_and(
        &self,
        t: &Terminal,
        a: impl FnOnce() -> Option<Arc<regex_syntax::hir::Hir>>,
        b: impl FnOnce() -> Option<Arc<regex_syntax::hir::Hir>>,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        let Terminal::And(ta, tb) = t else {
            return self.terminal(t, limits);
        };
        self.terminal_built(ByteDfa::regex_of(t), |key| {
            let (ha, hb) = (hir_or_parse(a(), ta)?, hir_or_parse(b(), tb)?);
            if crate::counted::splits(&hb) {
                let dfa = ByteDfa::from_and_opts(&ha, &hb, key, limits, self.config.lazy_dfas)?;
                return Ok(TermEntry::new(key.to_string(), dfa));
            }
            let lazy = self.config.lazy_dfas;
            let side = |text: &str, hir: Arc<regex_syntax::hir::Hir>| {
                let plain = Terminal::Regex(text.to_string());
                self.terminal_built(ByteDfa::regex_of(&plain), |k| {
                    self.entry_of(k, hir, limits, lazy)
                })
            };
            let (ea, eb) = (side(ta, ha)?, side(tb, hb)?);
            let dfa = product_of_entries(&ea, &eb, key, limits)?;
            Ok(TermEntry::new(key.to_string(), dfa))
        })
    }

    /// The entry of a regex without some strings ([`Terminal::Except`];
    /// any other terminal: as [`Self::terminal`]). The regex gets an entry
    /// of its own (from the HIR `base` gives, `None`: the parse of its
    /// text), which every such terminal over the same regex shares; the
    /// product with the strings' trie is built on first use when the
    /// regex's language is surely infinite (the start state is then known:
    /// the product's language is not empty), else at once.
    pub(crate) fn terminal_except(
        &self,
        t: &Terminal,
        base: impl FnOnce() -> Option<Arc<regex_syntax::hir::Hir>>,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        let Terminal::Except(re, names) = t else {
            return self.terminal(t, limits);
        };
        self.terminal_built(ByteDfa::regex_of(t), |key| {
            let hir = hir_or_parse(base(), re)?;
            let entry = self.regex_entry(re, &hir, limits)?;
            let facts = crate::compile::Facts {
                start: entry.start(),
                nullable: entry.is_nullable() && !names.iter().any(|n| n.is_empty()),
            };
            let deferrable = self.config.deferred_terminals
                && entry.start() != ByteDfa::DEAD
                && hir.properties().look_set().is_empty()
                && crate::compile::surely_infinite(&hir);
            if deferrable {
                return Ok(TermEntry::deferred_except(
                    key.to_string(),
                    entry,
                    names.clone(),
                    *limits,
                    facts,
                ));
            }
            let base = entry.dfa();
            if let Some(e) = entry.build_error() {
                return Err(e.clone());
            }
            let dfa = ByteDfa::from_except(base, names, key, limits)?;
            Ok(TermEntry::new(key.to_string(), dfa))
        })
    }

    /// The entry of the plain regex `re` (its HIR `hir`) that an exception
    /// or an avoid terminal over it is built from, shared by all of them.
    fn regex_entry(
        &self,
        re: &str,
        hir: &Arc<regex_syntax::hir::Hir>,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        let plain = Terminal::Regex(re.to_string());
        let lazy = self.config.lazy_dfas;
        self.terminal_built(ByteDfa::regex_of(&plain), |k| {
            self.entry_of(k, hir.clone(), limits, lazy)
        })
    }

    /// The entry of a regex's strings that contain none of some strings
    /// ([`Terminal::Avoid`]; any other terminal: as [`Self::terminal`]):
    /// the regex gets an entry of its own (from the HIR `base` gives,
    /// `None`: the parse of its text), and the product with the strings'
    /// Aho–Corasick automaton is built at once (it is small: the strings'
    /// bytes times the regex's states). Over any text
    /// ([`zapspec_grammar::avoid::ANY_TEXT_REGEX`]) the entry also keeps
    /// the strings, so that its masks are built from the tokens they
    /// forbid (module `avoid_text`) rather than by a walk of the trie.
    pub(crate) fn terminal_avoid(
        &self,
        t: &Terminal,
        base: impl FnOnce() -> Option<Arc<regex_syntax::hir::Hir>>,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        let Terminal::Avoid(re, strings) = t else {
            return self.terminal(t, limits);
        };
        self.terminal_built(ByteDfa::regex_of(t), |key| {
            let hir = hir_or_parse(base(), re)?;
            let entry = self.regex_entry(re, &hir, limits)?;
            let b = entry.dfa();
            if let Some(e) = entry.build_error() {
                return Err(e.clone());
            }
            let dfa = ByteDfa::from_avoid(b, strings, key, limits)?;
            let mut e = TermEntry::new(key.to_string(), dfa);
            if self.config.avoid_masks && re == zapspec_grammar::avoid::ANY_TEXT_REGEX {
                e.set_avoid(strings.clone());
            }
            Ok(e)
        })
    }

    /// [`Self::terminal`] of a regex terminal whose HIR the grammar holds
    /// ([`Grammar::regex_hir`](zapspec_grammar::Grammar::regex_hir)): built from the HIR on a miss, not from
    /// its text (the cache is still keyed by the text).
    pub(crate) fn terminal_parsed(
        &self,
        t: &Terminal,
        hir: &Arc<regex_syntax::hir::Hir>,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        let lazy = self.config.lazy_dfas;
        self.terminal_built(ByteDfa::regex_of(t), |re| {
            self.entry_of(re, hir.clone(), limits, lazy)
        })
    }

    /// [`Self::terminal`] built, on a miss, from the HIR `hir` makes
    /// (called only then; `None`: parse the text): a literal's or class's
    /// ([`ByteDfa::hir_of`]), a fused regex's ([`crate::fuse::Fused::hir`]).
    pub(crate) fn terminal_hir_on_miss(
        &self,
        t: &Terminal,
        hir: impl FnOnce() -> Option<regex_syntax::hir::Hir>,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        let lazy = self.config.lazy_dfas;
        self.terminal_built(ByteDfa::regex_of(t), |re| match hir() {
            Some(h) => self.entry_of(re, Arc::new(h), limits, lazy),
            None => self.entry_of_text(re, limits),
        })
    }

    pub(super) fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<TermEntry>, FxBuildHasher>> {
        self.terminals.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What one state of a terminal contributes to every mask
/// ([`VocabIndex::terminal_tokens`]): its context-independent cache entry
/// (module `ci_cache`), as plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalTokens {
    /// The tokens allowed whatever follows the terminal: its automaton
    /// stays live over all their bytes.
    pub allowed: TokenSet,
    /// The context-dependent tokens, sorted: `(bytes[k..], token)` for
    /// each `k` (`1 ≤ k < len`) after which the terminal may end, of each
    /// token not in [`Self::allowed`] whose bytes the automaton reads
    /// that far. Whether one is allowed depends on what the grammar lets
    /// follow the terminal; a mask parses the remainder to find out.
    pub dependent: Vec<(Vec<u8>, TokenId)>,
    /// The entry was computed through a vocabulary slice
    /// ([`IndexConfig::slices`](crate::IndexConfig::slices)): only the tokens outside it were walked.
    pub sliced: bool,
}

/// Literals at most this long get [`literal_dfa`]'s table (at most 1 MiB
/// of transitions: one row of at most 256 classes per byte).
const MAX_DIRECT_LITERAL: usize = 1 << 10;

/// The eager automaton of a literal terminal, written down directly
/// ([`zapspec_grammar::dense::DenseDfa::literal`]) when the literal is at
/// most [`MAX_DIRECT_LITERAL`] bytes and within the state bound: no NFA, no
/// lazy closure per transition. A grammar with thousands of literal
/// alternatives (a long `enum`) otherwise paid a lazy automaton per member
/// and a closure for every transition its first mask reads. `None`: not a
/// literal, or too long (the regex paths and their limits apply).
fn literal_dfa(
    hir: &regex_syntax::hir::Hir,
    limits: &zapspec_grammar::RegexLimits,
) -> Option<ByteDfa> {
    let regex_syntax::hir::HirKind::Literal(regex_syntax::hir::Literal(bytes)) = hir.kind() else {
        return None;
    };
    if bytes.len() > MAX_DIRECT_LITERAL || bytes.len() + 2 > limits.dfa_states {
        return None;
    }
    Some(ByteDfa::from_dense(
        zapspec_grammar::dense::DenseDfa::literal(bytes),
    ))
}

/// `hir` when given, else the parse of the regex `text` (a parse error as
/// [`EarleyError::Terminal`]).
fn hir_or_parse(
    hir: Option<Arc<regex_syntax::hir::Hir>>,
    text: &str,
) -> Result<Arc<regex_syntax::hir::Hir>, EarleyError> {
    match hir {
        Some(h) => Ok(h),
        None => crate::terminal::parse_regex(text)
            .map(Arc::new)
            .map_err(|e| EarleyError::Terminal {
                regex: text.to_string(),
                reason: e.to_string(),
            }),
    }
}

/// The intersection of two terminals' automata (their entries'
/// [`TermEntry::dfa`], built now if deferred, lazy or dense): the
/// [`ByteDfa::product`] of the pairs reachable from the start, at most
/// `limits.dfa_states` of them. A side that failed to build, or a lazy side
/// that outgrew its cache while the product read it, fails the
/// intersection with a typed limit.
fn product_of_entries(
    a: &TermEntry,
    b: &TermEntry,
    key: &str,
    limits: &zapspec_grammar::RegexLimits,
) -> Result<ByteDfa, EarleyError> {
    use crate::terminal::limit_error;
    use zapspec_grammar::Limit;
    let (da, db) = (a.dfa(), b.dfa());
    for e in [a, b] {
        if let Some(err) = e.build_error() {
            return Err(err.clone());
        }
    }
    let d = ByteDfa::product(da, db, limits.dfa_states)
        .map_err(|n| crate::compile::intersection_too_large(key, limits, n))?;
    if da.overflowed() || db.overflowed() {
        return Err(limit_error(
            key,
            Limit::DfaStates,
            limits.dfa_states,
            "a side's lazy automaton outgrew its cache".into(),
        ));
    }
    Ok(d)
}
