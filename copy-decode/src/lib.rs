//! # zapspec-copy — Copy-as-Decode
//!
//! Editing as structured decoding (paper `002_*`, Copy-as-Decode): a model
//! writes a *program* of `<copy lines="I-J"/>` ops (copy source lines
//! `I..=J` of the input document verbatim) and `<gen>TEXT</gen>` ops (new
//! text); a token-level FSM keeps the decoder inside that grammar (Fig. 7)
//! and a deterministic resolver R(P, D) expands the program against the
//! document D into the edited document D′ (§2.2, Fig. 2).
//!
//! ## Programs, resolver, oracle programs
//!
//! | module | entry points | cost |
//! |---|---|---|
//! | [`program`] | [`Program`], [`Op`], [`Program::parse`] (typed [`ParseError`] with line, column and op), [`Program::print`], [`Program::stats`] → [`ProgramStats`] | parse and print linear in the text |
//! | [`resolve`](mod@resolve) | [`resolve()`] = R(P, D), [`LineIndex`] (split once, resolve many) | `O(|D| + |P| + |D′|)`; a copy op is an `O(1)` slice |
//! | [`oracle`] | [`oracle_program`]`(before, after)`: the program a perfect span selector would write, from a Myers line diff (`similar`) | `O((N + M) · D)` for `N`, `M` lines, `D` differences |
//! | [`error`] | [`ParseError`] / [`ParseErrorKind`], [`ResolveError`], [`OpKind`] | — |
//!
//! Guarantee, tested on random documents and on the `edits` corpora
//! (ripgrep, HumanEvalFix-Py/JS): for every pair of documents,
//! `resolve(&Program::parse(&oracle_program(d, d2).print())?, d) == d2`
//! byte for byte (the paper's "oracle programs round-trip" result).
//!
//! ## The token-level FSM
//!
//! [`fsm`]: [`ProgramConstraint`] is a `zapspec_core::Constraint` (via
//! `Matcher`) allowing exactly the token sequences whose bytes are a prefix
//! of a valid program for an `n`-line document (Fig. 7's five states over
//! an exact byte automaton, masks by a pruned walk of a [`VocabTrie`],
//! cached per byte state); [`ProgramConstraint::forced_bytes`] gives the
//! literal bytes a decoder can prefill. Building the trie is
//! `O(Σ|token bytes|)` once per vocabulary; a cached mask is one
//! `|V|/64`-word copy.
//!
//! ### Our readings where the paper is ambiguous
//!
//! - **Surface syntax.** A program is exactly `<program>\n`, then each op
//!   followed by one `\n`, then `</program>` with nothing after it; line
//!   numbers are decimal without leading zeros (paper Fig. 7 / §2.3 show
//!   the tags but not the whitespace).
//! - **Escaping** (the paper does not specify it). Inside gen TEXT, `\` is
//!   written `\\` and `</gen>` is written `<\/gen>`; a `\` must be followed
//!   by `\` or `/` (`\/` decodes to `/` anywhere); the raw bytes `</gen>`
//!   end the body; every other UTF-8 character stands for itself.
//! - **Line terminators belong to the copied line.** A line ends after
//!   `\n` (so `\r\n` stays with its line); a last line without `\n` is a
//!   line; the empty document has 0 lines. Copying never adds or drops a
//!   newline, so CRLF documents and missing final newlines are preserved.
//! - **Ranges are 1-based and inclusive**, as in the paper's
//!   `lines="i-j"`; `I = 0`, `I > J` and `J > n` are errors.
//!
//! Costs are stated per module; nothing here panics on bad input — errors
//! are typed ([`ParseError`], [`ResolveError`], [`BoundError`]).
//!
//! ## Coverage, bounds, perturbation (Fig. 4, Fig. 6)
//!
//! | module | entry points | cost |
//! |---|---|---|
//! | [`coverage`] | [`line_cover`] (oracle program tokenized op by op), [`token_cover`] / [`TokenMatcher`] (greedy longest-match cover at minimum span `m`, [`MIN_SPANS`]), [`Cover`] (token counts, span-length histogram, [`Cover::merge`]), [`bound`] = `1/((1−f) + f/s)`, [`KernelSpeedups`] (`s(N)`, log-log interpolated, clamped), [`histogram_bound`] = `T / (G + Σ len/s(len))`, [`Tokenizer`] (any `Fn(&str) -> Vec<TokenId>`) | line cover: the oracle diff plus one tokenizer pass; token cover: a suffix automaton of the input, expected `O(|in| + |out|)` once, then `O(|out|)` per `m` |
//! | [`perturb`] | [`perturbation_em`]`(pairs, eps, trials, seed)`, [`perturb_program`] (endpoints ± uniform `[−ε, ε]`, clamped to `1..=n`, swapped if reversed; `ChaCha8Rng`) | one oracle diff per pair, then `O(|P| + |D′|)` per trial |
//!
//! The composition of coverage with the kernel table, and the noise model,
//! are our readings of the paper; both are spelled out in the module docs.
//! The `copy_coverage` binary of the `examples` crate runs all of it on the
//! edit corpora (results in `examples/results/copy_coverage.md`).
//!
//! ## Not built yet
//!
//! This crate is a slice of its issue. Still to come: GEN_BODY
//! delegating to an inner `Constraint` (grammar-constrained gen text);
//! executing programs against a `LanguageModel` (copies as one `prefill`
//! each) beside full regeneration and prompt-lookup speculative decoding;
//! canonical tokenization at span boundaries; corpora from a git
//! repository's history; fuzzing the parser.

pub mod coverage;
pub mod error;
pub mod execute;
pub mod fsm;
pub mod gen_body;
pub mod oracle;
pub mod perturb;
pub mod program;
pub mod resolve;

pub use coverage::{
    bound, histogram_bound, line_cover, token_cover, BoundError, Cover, KernelSpeedups,
    TokenMatcher, Tokenizer, MIN_SPANS,
};
pub use error::{OpKind, ParseError, ParseErrorKind, ResolveError};
pub use execute::{
    lookup_draft, prompt_lookup, regenerate, CopyDecoder, ExecConfig, ExecError, ExecStats,
    Execution, LookupConfig, ProgramMatcher, Target,
};
pub use fsm::{ByteState, FsmConfig, FsmError, Phase, ProgramConstraint, ProgramFsm, VocabTrie};
pub use gen_body::{GenBodyError, NestedProgramConstraint};
pub use oracle::oracle_program;
pub use perturb::{perturb_program, perturbation_em};
pub use program::{Op, Program, ProgramStats};
pub use resolve::{resolve, LineIndex};
