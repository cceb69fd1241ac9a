//! Text in and out of a pipeline: a [`Tokenizer`] (a vocabulary and, for
//! chat models, its chat template), the [`Prompt`] a generation starts
//! from, and the incremental decoder behind streaming and stop strings.
//!
//! Output text is the UTF-8 decoding of the output tokens' bytes, with
//! each invalid byte sequence replaced by U+FFFD (as
//! [`String::from_utf8_lossy`] does on the whole output). Streamed deltas
//! never split a character and never show the start of a stop string that
//! may still complete: their concatenation is exactly the final
//! [`crate::Generation::text`].

use std::sync::Arc;

use zapspec_core::TokenId;
use zapspec_vocab::{ChatMl, Message, TokenVocab};

use crate::Error;

/// A model's tokenizer as the pipeline uses it: its vocabulary and, for a
/// chat model, its chat template.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    vocab: Arc<TokenVocab>,
    chat: Option<ChatMl>,
}

impl Tokenizer {
    /// A tokenizer without a chat template.
    pub fn new(vocab: Arc<TokenVocab>) -> Self {
        Tokenizer { vocab, chat: None }
    }

    /// With the chat template `chat` (needed by chat prompts).
    pub fn with_chat(mut self, chat: ChatMl) -> Self {
        self.chat = Some(chat);
        self
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Arc<TokenVocab> {
        &self.vocab
    }

    /// The chat template, if the model has one.
    pub fn chat(&self) -> Option<&ChatMl> {
        self.chat.as_ref()
    }

    /// Token ids of `text` (no template, no special tokens added).
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>, Error> {
        Ok(self.vocab.encode(text)?)
    }

    /// Token ids of a conversation ending in the assistant's generation
    /// prompt, through the chat template.
    pub fn encode_chat(&self, messages: &[Message]) -> Result<Vec<TokenId>, Error> {
        let chat = self.chat.as_ref().ok_or_else(|| {
            Error::Config(format!(
                "the tokenizer `{}` has no chat template: prompt with text or tokens",
                self.vocab.name()
            ))
        })?;
        Ok(chat.encode(&self.vocab, messages, true)?)
    }

    /// The text of `ids` (invalid UTF-8 replaced by U+FFFD).
    pub fn decode(&self, ids: &[TokenId]) -> String {
        String::from_utf8_lossy(&self.vocab.decode(ids)).into_owned()
    }
}

/// What a generation is conditioned on: token ids, text (encoded as is),
/// or chat messages (through the model's chat template). The prompt is
/// outside the constraint: the constraint sees the output only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// Token ids, used as given.
    Tokens(Vec<TokenId>),
    /// Text, encoded without a template (an empty text needs no tokenizer).
    Text(String),
    /// A conversation; the chat template appends the assistant's
    /// generation prompt.
    Chat(Vec<Message>),
}

impl Default for Prompt {
    /// No prompt: generation starts from the model's empty context.
    fn default() -> Self {
        Prompt::Tokens(Vec::new())
    }
}

impl Prompt {
    /// The prompt's token ids under `tokenizer` (needed for non-empty text
    /// and for chat).
    pub fn to_tokens(&self, tokenizer: Option<&Tokenizer>) -> Result<Vec<TokenId>, Error> {
        let need = |what: &str| {
            tokenizer.ok_or_else(|| {
                Error::Config(format!(
                    "a {what} prompt needs a tokenizer: build the pipeline from a `Model` or call `Builder::tokenizer`"
                ))
            })
        };
        match self {
            Prompt::Tokens(ids) => Ok(ids.clone()),
            Prompt::Text(t) if t.is_empty() => Ok(Vec::new()),
            Prompt::Text(t) => need("text")?.encode(t),
            Prompt::Chat(m) => need("chat")?.encode_chat(m),
        }
    }
}

impl From<&str> for Prompt {
    fn from(t: &str) -> Self {
        Prompt::Text(t.to_string())
    }
}

impl From<String> for Prompt {
    fn from(t: String) -> Self {
        Prompt::Text(t)
    }
}

impl From<&String> for Prompt {
    fn from(t: &String) -> Self {
        Prompt::Text(t.clone())
    }
}

impl From<&[TokenId]> for Prompt {
    fn from(ids: &[TokenId]) -> Self {
        Prompt::Tokens(ids.to_vec())
    }
}

impl<const N: usize> From<&[TokenId; N]> for Prompt {
    fn from(ids: &[TokenId; N]) -> Self {
        Prompt::Tokens(ids.to_vec())
    }
}

impl From<Vec<TokenId>> for Prompt {
    fn from(ids: Vec<TokenId>) -> Self {
        Prompt::Tokens(ids)
    }
}

impl From<&Vec<TokenId>> for Prompt {
    fn from(ids: &Vec<TokenId>) -> Self {
        Prompt::Tokens(ids.clone())
    }
}

impl From<&[Message]> for Prompt {
    fn from(m: &[Message]) -> Self {
        Prompt::Chat(m.to_vec())
    }
}

impl From<Vec<Message>> for Prompt {
    fn from(m: Vec<Message>) -> Self {
        Prompt::Chat(m)
    }
}

/// Incremental decoding of output tokens to text: lossy UTF-8 across token
/// boundaries, stop-string search, and the deltas a stream may show.
pub(crate) struct TextOut<'a> {
    tokenizer: &'a Tokenizer,
    stops: &'a [String],
    /// The text of the tokens pushed so far, bytes of an unfinished
    /// character excluded.
    text: String,
    /// Trailing bytes of a character not yet complete.
    pending: Vec<u8>,
    /// `ends[i]`: `text.len()` after token `i` was pushed.
    ends: Vec<usize>,
    /// Bytes of `text` already handed out as deltas.
    shown: usize,
}

/// Where the text reached a stop string.
pub(crate) struct StopHit {
    /// Output tokens to keep (through the token that completed the string).
    pub tokens: usize,
    /// Text to keep (up to the string's start).
    pub text_len: usize,
    /// The stop string.
    pub stop: String,
}

impl<'a> TextOut<'a> {
    pub fn new(tokenizer: &'a Tokenizer, stops: &'a [String]) -> Self {
        TextOut {
            tokenizer,
            stops,
            text: String::new(),
            pending: Vec::new(),
            ends: Vec::new(),
            shown: 0,
        }
    }

    /// Tokens pushed so far.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Appends the next output tokens; returns the first stop string the
    /// text now contains (searched only where a new match can be).
    pub fn push(&mut self, tokens: &[TokenId]) -> Option<StopHit> {
        let longest = self.stops.iter().map(String::len).max().unwrap_or(0);
        let from = self.text.len().saturating_sub(longest.saturating_sub(1));
        for &t in tokens {
            self.pending.extend(self.tokenizer.vocab.decode(&[t]));
            self.drain_pending(false);
            self.ends.push(self.text.len());
        }
        self.find_stop(from)
    }

    fn drain_pending(&mut self, at_end: bool) {
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    self.text.push_str(s);
                    self.pending.clear();
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // the prefix up to `valid` is UTF-8 (from_utf8 said so)
                    self.text
                        .push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            self.text.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + n);
                        }
                        None if at_end => {
                            self.text.push(char::REPLACEMENT_CHARACTER);
                            self.pending.clear();
                            return;
                        }
                        None => {
                            self.pending.drain(..valid);
                            return;
                        }
                    }
                }
            }
        }
    }

    fn find_stop(&self, from: usize) -> Option<StopHit> {
        let mut from = from;
        while !self.text.is_char_boundary(from) {
            from -= 1;
        }
        let hay = &self.text[from..];
        let (pos, stop) = self
            .stops
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| hay.find(s.as_str()).map(|p| (from + p, s)))
            .min_by_key(|&(p, s)| (p, std::cmp::Reverse(s.len())))?;
        let end = pos + stop.len();
        let tokens = self.ends.partition_point(|&e| e < end) + 1;
        Some(StopHit {
            tokens,
            text_len: pos,
            stop: stop.clone(),
        })
    }

    /// Text not shown yet that can no longer change: complete characters,
    /// less any suffix that begins a stop string.
    pub fn delta(&mut self) -> &str {
        let hold = self
            .stops
            .iter()
            .map(|s| {
                (1..s.len())
                    .rev()
                    .find(|&l| s.is_char_boundary(l) && self.text.ends_with(&s[..l]))
                    .unwrap_or(0)
            })
            .max()
            .unwrap_or(0);
        let end = self.text.len() - hold;
        let start = self.shown.min(end);
        self.shown = end.max(self.shown);
        &self.text[start..end]
    }

    /// Ends the output: an unfinished character at the end becomes U+FFFD
    /// (which may complete a stop string).
    pub fn flush(&mut self) -> Option<StopHit> {
        if self.pending.is_empty() {
            return None;
        }
        let from = self.text.len();
        self.drain_pending(true);
        if let Some(e) = self.ends.last_mut() {
            *e = self.text.len();
        }
        let longest = self.stops.iter().map(String::len).max().unwrap_or(0);
        self.find_stop(from.saturating_sub(longest.saturating_sub(1)))
    }

    /// The final text, cut at `text_len` when a stop string was reached,
    /// and the delta not shown yet.
    pub fn finish(mut self, text_len: Option<usize>) -> (String, String) {
        self.drain_pending(true);
        if let Some(n) = text_len {
            self.text.truncate(n);
        }
        let rest = self.text.get(self.shown..).unwrap_or_default().to_string();
        (self.text, rest)
    }
}
