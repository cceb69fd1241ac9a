"""XGrammar's ``xgrammar.tokenizer_info`` module path: :class:`TokenizerInfo`,
:class:`VocabType`, and the byte-level alphabet ``_BYTE_LEVEL_CHARSET``
(the 256 characters GPT-2's byte-to-unicode map writes bytes with)."""

from typing import FrozenSet

from ._zapspec import TokenizerInfo
from ._vocab_type import VocabType

__all__ = ["TokenizerInfo", "VocabType"]


def _byte_level_charset() -> FrozenSet[str]:
    kept = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = [chr(b) for b in kept]
    shifted = 0
    for b in range(256):
        if b not in kept:
            chars.append(chr(256 + shifted))
            shifted += 1
    return frozenset(chars)


_BYTE_LEVEL_CHARSET = _byte_level_charset()
