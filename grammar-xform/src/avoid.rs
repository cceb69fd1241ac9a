//! Free text that avoids a set of strings.
//!
//! [`avoiding`] adds a nonterminal whose language is every string (any
//! Unicode scalar values) that contains none of the given strings as a
//! substring: one [`Terminal::Avoid`] over [`ANY_TEXT_REGEX`]. This is
//! the free text of a structural tag — text until a trigger, a reasoning
//! section until its end string — and of any region that must not
//! contain a delimiter.
//!
//! Why a terminal of its own and not a regex: regular-expression syntax
//! has no complement, and the complement of `.*(s₁|…|sₖ).*` written out
//! as a regex by state elimination can be exponentially long. Engines
//! build the automaton directly, the product of a UTF-8 automaton with
//! the strings' Aho–Corasick automaton (Aho & Corasick 1975;
//! [`crate::dense::avoid`]): one state per trie node and UTF-8 position.
//! Knowing the strings, the Earley engine (`zapspec-earley`) also fills a
//! free-text mask from the few tokens the strings forbid instead of a walk
//! of the vocabulary.
//!
//! Costs: states at most the strings' total length plus one, times the
//! UTF-8 automaton's few states. The strings are matched on UTF-8 bytes,
//! which for valid UTF-8 text is matching on characters.

use crate::ir::{Grammar, NtId, Symbol, Terminal};

/// The regex of unrestricted text: any number of any characters.
pub const ANY_TEXT_REGEX: &str = "(?s:.)*";

/// Adds a nonterminal (named from `name`) matching every string that
/// contains none of `excluded` (empty strings are ignored; with none left
/// it is unrestricted text, one regex terminal) and returns it.
pub fn avoiding<S: AsRef<str>>(g: &mut Grammar, name: &str, excluded: &[S]) -> NtId {
    let start = g.add_nonterminal(name);
    let t = Terminal::avoid(
        ANY_TEXT_REGEX.to_string(),
        excluded.iter().map(|s| s.as_ref().as_bytes().to_vec()),
    );
    g.add_rule(start, vec![Symbol::T(t)]);
    start
}

/// [`avoiding`] with at most `max_chars` characters (Unicode scalar
/// values): one [`Terminal::Avoid`] over `(?s:.){0,max_chars}` (a
/// counted repetition alone when no string is left). Engines build the
/// product eagerly, so its states grow with `max_chars` times the
/// strings' bytes and meet the automaton limits (a typed error) long
/// before memory does.
pub fn avoiding_at_most<S: AsRef<str>>(
    g: &mut Grammar,
    name: &str,
    excluded: &[S],
    max_chars: u64,
) -> NtId {
    let start = g.add_nonterminal(name);
    let t = Terminal::avoid(
        format!("(?s:.){{0,{max_chars}}}"),
        excluded.iter().map(|s| s.as_ref().as_bytes().to_vec()),
    );
    g.add_rule(start, vec![Symbol::T(t)]);
    start
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::Recognizer;
    use proptest::prelude::*;

    fn grammar(excluded: &[&str]) -> Grammar {
        let mut g = Grammar::new();
        g.start = avoiding(&mut g, "text", excluded);
        g
    }

    fn brute(s: &str, excluded: &[&str]) -> bool {
        excluded.iter().all(|e| e.is_empty() || !s.contains(e))
    }

    #[test]
    fn avoids_the_strings_and_nothing_else() {
        let ex = ["<tool_call>", "</think>", "ab"];
        let g = grammar(&ex);
        let r = Recognizer::new(&g).unwrap();
        for s in [
            "",
            "hello",
            "<tool_call",
            "<tool_call>",
            "x</think>",
            "</thin",
            "a b",
            "xab",
            "aab",
            "é</think",
            "<<tool_call>",
        ] {
            assert_eq!(r.recognizes(s.as_bytes()), brute(s, &ex), "{s:?}");
        }
    }

    #[test]
    fn printed_text_parses_back_to_the_same_terminal() {
        let g = grammar(&["<tool_call>", "a\"b", "~"]);
        let text = g.to_string();
        assert!(text.contains(r#"~ "<tool_call>""#), "{text}");
        let back = crate::gbnf::parse_gbnf(&text).unwrap().grammar;
        assert_eq!(back.rules[0].rhs, g.rules[0].rhs, "{text}");
        // `~` after anything but a regex is an error with a position
        let e = crate::gbnf::parse_gbnf(r#"root ::= "a" ~ "b""#).unwrap_err();
        assert!(e.to_string().contains("`~` takes a string literal"), "{e}");
    }

    #[test]
    fn a_character_budget_counts_characters() {
        let mut g = Grammar::new();
        g.start = avoiding_at_most(&mut g, "text", &["</think>"], 3);
        let r = Recognizer::new(&g).unwrap();
        for (s, ok) in [
            ("", true),
            ("abc", true),
            ("abcd", false),
            ("中中中", true),
            ("中中中中", false),
            ("a</think>", false),
            ("</t", true),
        ] {
            assert_eq!(r.recognizes(s.as_bytes()), ok, "{s:?}");
        }
    }

    #[test]
    fn no_strings_is_any_text() {
        let g = grammar(&[]);
        let r = Recognizer::new(&g).unwrap();
        assert!(r.recognizes("any ✓ text\n".as_bytes()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Membership equals a substring check on random strings over a
        /// small alphabet (so that overlaps and failure links are hit).
        #[test]
        fn equals_brute_force(
            ex in proptest::collection::vec("[abé]{1,4}", 1..4),
            texts in proptest::collection::vec("[abéc]{0,8}", 1..24),
        ) {
            let ex: Vec<&str> = ex.iter().map(String::as_str).collect();
            let g = grammar(&ex);
            let r = Recognizer::new(&g).unwrap();
            for t in &texts {
                prop_assert_eq!(r.recognizes(t.as_bytes()), brute(t, &ex), "{:?} {:?}", t, ex);
            }
        }
    }
}
