//! A random walk over a compiled grammar: sampled strings of its language,
//! for the oracle tests (the strings are checked against an independent
//! JSON Schema validator). Bounded: past `max_depth` nested expansions or
//! `max_len` bytes, the walk takes the rule of least derivation height and,
//! inside a terminal, the shortest way to a full match.

use std::collections::{HashMap, VecDeque};

use rand::rngs::StdRng;
use rand::Rng;
use zapspec_grammar::{CharClass, Grammar, NtId, Symbol, Terminal, TerminalDfa};

/// One terminal's automaton and, per state, the bytes to the nearest full
/// match (`u32::MAX` for `DEAD`).
struct Walk {
    dfa: TerminalDfa,
    dist: Vec<u32>,
    /// Per state, the distinct live successors with one byte reaching each.
    succ: Vec<Vec<(u8, u32)>>,
}

impl Walk {
    fn new(dfa: TerminalDfa) -> Walk {
        let n = dfa.num_states();
        let mut succ = vec![Vec::new(); n];
        let mut pred: Vec<Vec<u32>> = vec![Vec::new(); n];
        for s in 1..n as u32 {
            let mut seen: Vec<u32> = Vec::new();
            for b in 0..=255u8 {
                let t = dfa.next(s, b);
                if t != TerminalDfa::DEAD && !seen.contains(&t) {
                    seen.push(t);
                    succ[s as usize].push((b, t));
                    pred[t as usize].push(s);
                }
            }
        }
        let mut dist = vec![u32::MAX; n];
        let mut q = VecDeque::new();
        for (s, d) in dist.iter_mut().enumerate().skip(1) {
            if dfa.is_accepting(s as u32) {
                *d = 0;
                q.push_back(s as u32);
            }
        }
        while let Some(s) = q.pop_front() {
            for &p in &pred[s as usize] {
                if dist[p as usize] == u32::MAX {
                    dist[p as usize] = dist[s as usize] + 1;
                    q.push_back(p);
                }
            }
        }
        Walk { dfa, dist, succ }
    }

    /// Appends one sampled full match to `out`.
    fn sample(&self, rng: &mut StdRng, out: &mut Vec<u8>, stop: f64, max_len: usize) {
        let mut s = self.dfa.start();
        let mut len = 0usize;
        loop {
            let acc = self.dfa.is_accepting(s);
            if acc && (self.succ[s as usize].is_empty() || rng.random_bool(stop)) {
                return;
            }
            let succ = &self.succ[s as usize];
            let (b, t) = if len >= max_len {
                // Head for the nearest full match.
                if acc {
                    return;
                }
                *succ
                    .iter()
                    .min_by_key(|(_, t)| self.dist[*t as usize])
                    .expect("a live state has a successor")
            } else {
                succ[rng.random_range(0..succ.len())]
            };
            // Another byte of the same class, for variety.
            let same: Vec<u8> = (0..=255u8).filter(|&c| self.dfa.next(s, c) == t).collect();
            let b = if same.is_empty() {
                b
            } else {
                same[rng.random_range(0..same.len())]
            };
            out.push(b);
            s = t;
            len += 1;
        }
    }
}

/// Samples strings of a grammar's language.
pub struct Sampler<'g> {
    g: &'g Grammar,
    rules: Vec<Vec<usize>>,
    height: Vec<u32>,
    rule_height: Vec<u32>,
    walks: HashMap<String, Walk>,
    /// Nesting depth past which the walk heads for the shortest derivation.
    pub max_depth: usize,
    /// Output length past which the walk heads for the shortest derivation.
    pub max_len: usize,
    /// Probability of stopping a regex terminal in an accepting state.
    pub stop: f64,
}

fn class_char(c: &CharClass, rng: &mut StdRng) -> Option<char> {
    let r = c.ranges();
    if r.is_empty() {
        return None;
    }
    let (lo, hi) = r[rng.random_range(0..r.len())];
    for _ in 0..64 {
        let x = rng.random_range(lo as u32..=hi as u32);
        if let Some(ch) = char::from_u32(x) {
            if c.contains(ch) {
                return Some(ch);
            }
        }
    }
    c.contains(lo).then_some(lo)
}

impl<'g> Sampler<'g> {
    /// Prepares the walk (derivation heights of every rule).
    pub fn new(g: &'g Grammar) -> Sampler<'g> {
        let n = g.num_nonterminals();
        let mut rules = vec![Vec::new(); n];
        for (i, r) in g.rules.iter().enumerate() {
            rules[r.lhs.index()].push(i);
        }
        let mut height = vec![u32::MAX; n];
        let mut rule_height = vec![u32::MAX; g.rules.len()];
        loop {
            let mut changed = false;
            for (i, r) in g.rules.iter().enumerate() {
                let mut h = 0u32;
                for s in &r.rhs {
                    if let Symbol::Nt(x) = s {
                        h = h.max(height[x.index()]);
                    }
                }
                let h = h.saturating_add(1);
                if h < rule_height[i] {
                    rule_height[i] = h;
                }
                if h < height[r.lhs.index()] {
                    height[r.lhs.index()] = h;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Sampler {
            g,
            rules,
            height,
            rule_height,
            walks: HashMap::new(),
            max_depth: 24,
            max_len: 2048,
            stop: 0.15,
        }
    }

    /// Whether the start symbol derives any string.
    pub fn productive(&self) -> bool {
        self.height[self.g.start.index()] != u32::MAX
    }

    /// One string of the language (`None` if the grammar is empty or a
    /// terminal's automaton fails to compile).
    pub fn sample(&mut self, rng: &mut StdRng) -> Option<Vec<u8>> {
        if !self.productive() {
            return None;
        }
        let mut out = Vec::new();
        let mut stack: Vec<(Symbol, usize)> = vec![(Symbol::Nt(self.g.start), 0)];
        while let Some((sym, depth)) = stack.pop() {
            match sym {
                Symbol::Nt(nt) => {
                    let r = self.pick(nt, depth, out.len(), rng);
                    for s in self.g.rules[r].rhs.iter().rev() {
                        stack.push((s.clone(), depth + 1));
                    }
                }
                Symbol::T(Terminal::Literal(b)) => out.extend_from_slice(&b),
                Symbol::T(Terminal::Class(c)) => {
                    let ch = class_char(&c, rng)?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                Symbol::T(t @ (Terminal::And(..) | Terminal::Except(..) | Terminal::Avoid(..))) => {
                    let key = t.to_string();
                    if !self.walks.contains_key(&key) {
                        let dfa = TerminalDfa::compile(&t).ok()?;
                        self.walks.insert(key.clone(), Walk::new(dfa));
                    }
                    let budget = self.max_len.saturating_sub(out.len()).max(8);
                    let (stop, walk) = (self.stop, &self.walks[&key]);
                    walk.sample(rng, &mut out, stop, budget);
                }
                Symbol::T(Terminal::Regex(re)) => {
                    if !self.walks.contains_key(&re) {
                        let dfa = TerminalDfa::regex(&re).ok()?;
                        self.walks.insert(re.clone(), Walk::new(dfa));
                    }
                    let budget = self.max_len.saturating_sub(out.len()).max(8);
                    let (stop, walk) = (self.stop, &self.walks[&re]);
                    walk.sample(rng, &mut out, stop, budget);
                }
            }
        }
        Some(out)
    }

    fn pick(&self, nt: NtId, depth: usize, len: usize, rng: &mut StdRng) -> usize {
        let rs: Vec<usize> = self.rules[nt.index()]
            .iter()
            .copied()
            .filter(|&r| self.rule_height[r] != u32::MAX)
            .collect();
        if depth >= self.max_depth || len >= self.max_len {
            *rs.iter()
                .min_by_key(|&&r| self.rule_height[r])
                .expect("a productive nonterminal has a productive rule")
        } else {
            rs[rng.random_range(0..rs.len())]
        }
    }
}
