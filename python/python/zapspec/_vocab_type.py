"""``VocabType``, in a module of its own so that every module can import it."""

from enum import Enum

__all__ = ["VocabType"]


class VocabType(Enum):
    """How a vocabulary list writes token bytes (``TokenizerInfo(encoded_vocab, vocab_type)``)."""

    RAW = 0
    """The text is the token's bytes."""
    BYTE_FALLBACK = 1
    """SentencePiece: ``▁`` is a space, ``<0xHH>`` the byte ``HH``."""
    BYTE_LEVEL = 2
    """GPT-2's byte-level alphabet (``Ġ`` for a space, ...)."""
