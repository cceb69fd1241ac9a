//! Chat prompts in the ChatML layout (`<|im_start|>role\ncontent<|im_end|>\n`),
//! the template of SmolLM2, Qwen and many other instruction-tuned models.
//!
//! The prompt is built as token ids: the `<|im_start|>` / `<|im_end|>`
//! control tokens are inserted by id and only the text between them is
//! encoded, so a message that happens to contain `<|im_end|>` as text cannot
//! end its turn.

use crate::{TokenId, TokenVocab, VocabError};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The system prompt.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// The role's name in the template.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: Role::System,
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// The ChatML template: the two control tokens and the system prompt used
/// when a conversation does not start with one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMl {
    /// `<|im_start|>`.
    pub im_start: TokenId,
    /// `<|im_end|>` (also the end of the assistant's turn).
    pub im_end: TokenId,
    /// Inserted as the first message when the first is not a system message
    /// (SmolLM2's template does this).
    pub default_system: Option<String>,
}

impl ChatMl {
    /// Finds `<|im_start|>` and `<|im_end|>` in a GGUF tokenizer and reads
    /// the default system prompt from its Jinja template when the template
    /// has SmolLM2's shape (`{% if loop.first and messages[0]['role'] !=
    /// 'system' %}{{ '<|im_start|>system\n…<|im_end|>\n' }}`).
    #[cfg(feature = "gguf")]
    pub fn from_gguf_info(info: &crate::gguf::GgufTokenizerInfo) -> Result<Self, VocabError> {
        let find = |s: &str| {
            info.control
                .get(s)
                .copied()
                .ok_or_else(|| VocabError::UnknownToken { token: s.into() })
        };
        Ok(ChatMl {
            im_start: find("<|im_start|>")?,
            im_end: find("<|im_end|>")?,
            default_system: info.chat_template.as_deref().and_then(default_system),
        })
    }

    /// Finds `<|im_start|>` and `<|im_end|>` in `vocab` (e.g. a Hugging Face
    /// `tokenizer.json`) and reads the default system prompt from the Jinja
    /// `template` (`tokenizer_config.json`'s `chat_template`) as
    /// [`from_gguf_info`](Self::from_gguf_info) does.
    pub fn from_vocab(vocab: &TokenVocab, template: Option<&str>) -> Result<Self, VocabError> {
        let find = |s: &str| {
            vocab
                .find_special(s)
                .ok_or_else(|| VocabError::UnknownToken { token: s.into() })
        };
        Ok(ChatMl {
            im_start: find("<|im_start|>")?,
            im_end: find("<|im_end|>")?,
            default_system: template.and_then(default_system),
        })
    }

    /// Token ids of `messages`, followed by `<|im_start|>assistant\n` when
    /// `add_generation_prompt`.
    pub fn encode(
        &self,
        vocab: &TokenVocab,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<Vec<TokenId>, VocabError> {
        let mut out = Vec::new();
        let mut turn = |role: &str, content: Option<&str>| -> Result<(), VocabError> {
            out.push(self.im_start);
            match content {
                Some(c) => {
                    out.extend(vocab.encode(&format!("{role}\n{c}"))?);
                    out.push(self.im_end);
                    out.extend(vocab.encode("\n")?);
                }
                None => out.extend(vocab.encode(&format!("{role}\n"))?),
            }
            Ok(())
        };
        if let (Some(sys), Some(first)) = (&self.default_system, messages.first()) {
            if first.role != Role::System {
                turn("system", Some(sys))?;
            }
        }
        for m in messages {
            turn(m.role.as_str(), Some(&m.content))?;
        }
        if add_generation_prompt {
            turn("assistant", None)?;
        }
        Ok(out)
    }
}

/// The default system prompt of a ChatML Jinja template of SmolLM2's shape
/// (`{{ '<|im_start|>system\n…<|im_end|>\n' }}` for conversations without
/// one).
fn default_system(template: &str) -> Option<String> {
    let open = "'<|im_start|>system\n";
    let start = template.find(open)? + open.len();
    let len = template[start..].find("<|im_end|>")?;
    Some(template[start..start + len].to_string())
}
