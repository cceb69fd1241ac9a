//! # zapspec-copy — Copy-as-Decode
//!
//! Editing as structured decoding (paper `002_*`, Copy-as-Decode): a model
//! writes a *program* of `<copy lines="I-J"/>` ops (copy source lines
//! `I..=J` of the input document verbatim) and `<gen>TEXT</gen>` ops (new
//! text); a token-level FSM keeps the decoder inside that grammar (Fig. 7)
//! and a deterministic resolver R(P, D) expands the program against the
//! document D into the edited document D′ (§2.2, Fig. 2).
//!
//! ## Modules
//!
//! | module | entry points | cost |
//! |---|---|---|
//! | [`program`] | [`Program`], [`Op`], [`Program::parse`] (typed [`ParseError`] with line, column and op), [`Program::print`], [`Program::stats`] → [`ProgramStats`] | parse and print linear in the text |
//! | [`resolve`](mod@resolve) | [`resolve()`] = R(P, D), [`LineIndex`] (split once, resolve many) | `O(|D| + |P| + |D′|)`; a copy op is an `O(1)` slice |
//! | [`oracle`] | [`oracle_program`]`(before, after)`: the program a perfect span selector would write, from a Myers line diff (`similar`) | `O((N + M) · D)` for `N`, `M` lines, `D` differences |
//! | [`error`] | [`ParseError`] / [`ParseErrorKind`], [`ResolveError`], [`OpKind`] | — |
//! | [`fsm`] | [`ProgramConstraint`], [`ProgramFsm`] (below) | a cached mask is one `|V|/64`-word copy |
//! | [`gen_body`] | [`NestedProgramConstraint`] (below) | the inner constraint's step plus two set operations |
//! | [`execute`] | [`CopyDecoder`], [`CountingModel`], [`ExecStats`], [`tokenize_program`] (below) | `O(|token|)` per program token beyond the model |
//! | [`boundary`] | [`CanonicalTokens`], [`TokenBoundary`] (below) | two tokenizer calls over `O(window)` tokens per op |
//!
//! Guarantee, tested on random documents (here) and on the `edits`
//! corpora (ripgrep, HumanEvalFix-Py/JS, and a git history: the
//! `copy_corpus` test of the `examples` crate): for every pair of documents,
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
//! ### GEN_BODY delegation
//!
//! [`gen_body`]: [`NestedProgramConstraint`] is the same FSM whose every
//! gen body is constrained by a fresh copy of an inner
//! `zapspec_core::Constraint` (an Earley matcher for a grammar, a trie, a
//! Dyck matcher…) over the same vocabulary — the composition this
//! workspace exists for. Per body step: the inner constraint's mask plus
//! two `|V|/64`-word set operations; masks of the program part are cached
//! as above.
//!
//! ## Execution against a model
//!
//! [`execute`]: [`CopyDecoder`] executes a program with any
//! `zapspec_core::LanguageModel` — teacher-forced
//! ([`CopyDecoder::execute_program`], for oracle programs) or sampled
//! under a [`ProgramMatcher`] ([`CopyDecoder::decode_program`]) — where a
//! copy op's lines, like forced literals, are appended in the one
//! `prefill` that carries the next decided token (the paper's parallel
//! prefill). Every call returns [`ExecStats`]: forwards (closed forms in
//! the module docs), tokens decided / forced / copied, window slides —
//! counts only: the executors read no clock, so wall-clock timing and
//! races against baselines are the caller's ([`CountingModel`], the
//! counting layer over the model, is public for a caller's own loop; the
//! `examples` crate's `copy_study` module holds the regeneration and
//! prompt-lookup baselines and the timing). Cost beyond the model:
//! `O(|token|)` per program token, one tokenizer call per copy.
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
//! - **Token-aligned gen bodies** under delegation (the paper's FSM has a
//!   GEN_BODY state but says nothing of tokens that straddle `<gen>` /
//!   `</gen>`): a non-empty body starts and ends at token boundaries, its
//!   tokens are fed to the inner constraint, the close may begin only
//!   where the inner constraint accepts, and a close in progress (`</`,
//!   `</ge` spread over tokens) is tracked beside the body-text reading;
//!   see [`gen_body`].
//! - **Where copied lines enter the context**: right after the token that
//!   completes the copy op (its `\n`), together with the following forced
//!   literal and the next decided token, in one `prefill`; the paper
//!   prefills the copy "in one forward" and force-prefills literals
//!   "in a single parallel forward" without saying whether they share it.
//! - **Oracle execution is teacher-forced**: the model runs every forward
//!   a decoder would and the program's own token is taken at each
//!   decision; the baselines are teacher-forced on `D′` alike (a model
//!   whose greedy output is `D′`), so the comparison isolates the
//!   mechanism, as the paper's upper-bound analysis does.
//! - **Two context layouts.** In the *program layout*
//!   ([`CopyDecoder::execute_program`], [`CopyDecoder::decode_program`])
//!   the model's context holds the program's own tokens with each copy's
//!   lines inserted after its op; in the *output layout*
//!   ([`CopyDecoder::execute_output`], §2.4's serving-layer primitive as
//!   the closed-form bound charges it) the serving layer runs a given
//!   program and the context holds only `D′` as it is written: one
//!   prefill per copy, one forward per generated token.
//! - **Canonical tokenization at span boundaries** ([`boundary`]). A BPE
//!   tokenizer may tokenize `D′` differently as a whole where a span meets
//!   its neighbour (a merge across the line boundary); then a context
//!   built span by span is not the canonical tokenization of the `D′`
//!   prefix, which can skew the model's next-token distribution
//!   (llguidance's notes on fast-forward tokens). o200k joins a run of
//!   newlines (`"\n\n"`) into one token; GPT-2-style pre-tokenizers
//!   (SmolLM2's) join a newline with the next line's indentation
//!   (`\s+(?!\S)`), so indented code disagrees at most boundaries
//!   (measured per pair by the `examples` crate's `copy_study::coverage`);
//!   [`TokenBoundary::Canonical`] in [`ExecConfig`] makes
//!   [`CopyDecoder::execute_output`] roll back the trailing tokens that
//!   can merge with the next op's text (truncating the model's cache) and
//!   re-tokenize ([`CanonicalTokens`]), so the context equals
//!   `tok(prefix of D′)` after every op and `tok(D′)` at the end
//!   (property-tested with o200k and a byte vocabulary, and on the
//!   corpora); [`ExecStats::rolled_back`] / [`ExecStats::truncated`] count
//!   the extra tokens. The program layout stays span-wise (its context is
//!   program text, not `D′`).
//!
//! Costs are stated per module; nothing here panics on bad input — errors
//! are typed ([`ParseError`], [`ResolveError`], [`ExecError`], [`FsmError`],
//! [`GenBodyError`]).
//!
//! ## Experiments live elsewhere
//!
//! The paper's measurements — copy coverage and the closed-form bounds
//! (Fig. 4), the perturbation study (Fig. 6), edit corpora from JSONL files
//! or a git history, the timed regeneration / prompt-lookup baselines —
//! are experiment code over this crate's API: the `copy_study` module of
//! the `examples` crate, run by its `copy_coverage`, `copy_exec` and
//! `copy_demo` binaries (results in `examples/results/copy-coverage/`,
//! `copy-exec/` and `copy-demo/`).
//!
//! ## Robustness
//!
//! The parser and resolver are fuzzed (`copy-decode/fuzz`, a cargo-fuzz
//! project with its own workspace: `cargo +nightly fuzz run -O
//! parse_program`; 601 s, 541,017 executions, no crash, with a
//! differential check that a printed program resolves exactly when the
//! FSM's byte automaton accepts it — `examples/results/copy-fuzz/copy_fuzz.md`);
//! `tests/hostile.rs` covers a million-line document (the digit automaton
//! is arithmetic, `O(log n)` per digit, and the FSM's only per-document
//! memory is the capped mask cache), the empty document, binary-looking
//! text and very long lines.
//!
//! ## Not done yet
//!
//! The SmolLM2 execution table (`examples/results/copy-exec/copy_exec_smollm2.md`)
//! covers a small subset (the first few pairs per corpus under a token
//! bound) on a shared 2-core CPU; the byte-model table (`copy_exec.md`)
//! predates the output layout and canonical rows. Op selection in the
//! output layout is not modelled (it runs given programs only).

pub mod boundary;
pub mod error;
pub mod execute;
pub mod fsm;
pub mod gen_body;
pub mod oracle;
pub mod program;
pub mod resolve;
mod tokenizer;

pub use boundary::{Append, CanonicalTokens, TokenBoundary};
pub use error::{OpKind, ParseError, ParseErrorKind, ResolveError};
pub use execute::{
    tokenize_program, CopyDecoder, CountingModel, ExecConfig, ExecError, ExecStats, Execution,
    ProgramMatcher,
};
pub use fsm::{ByteState, FsmConfig, FsmError, Phase, ProgramConstraint, ProgramFsm, VocabTrie};
pub use gen_body::{GenBodyError, NestedProgramConstraint};
pub use oracle::oracle_program;
pub use program::{Op, Program, ProgramStats};
pub use resolve::{resolve, LineIndex};
pub use tokenizer::Tokenizer;
