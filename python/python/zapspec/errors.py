"""The exceptions of zapspec.

Every error the package raises on purpose is a :class:`ZapspecError`; each
subclass also inherits the builtin it refines (``ValueError`` for bad input,
``RuntimeError`` for bad state), so ``except ValueError`` keeps working.
Each carries the Rust error's structured fields:

- ``kind``: a short category (``"unsupported `uniqueItems`"``, ``"syntax"``,
  ``"bitmask"``, ``"token id"``, ...);
- ``pointer``: the JSON pointer of the schema location (``SchemaError``,
  ``LimitExceeded``), or the engine's place for an engine limit;
- ``position``: ``(line, column)``, 1-based, in a grammar text or schema;
- ``limit``: the name of the exceeded limit (``LimitExceeded``).

A Rust panic is a bug of zapspec and arrives as :class:`InternalError`.
"""

from typing import Optional, Tuple

__all__ = [
    "ZapspecError",
    "SchemaError",
    "GrammarError",
    "TokenizerError",
    "LimitExceeded",
    "InvalidTokenError",
    "RollbackError",
    "BitmaskError",
    "MatcherTerminatedError",
    "InternalError",
]


class ZapspecError(Exception):
    """Base class of every exception zapspec raises."""

    def __init__(
        self,
        message: str,
        *,
        kind: Optional[str] = None,
        pointer: Optional[str] = None,
        position: Optional[Tuple[int, int]] = None,
        limit: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.pointer = pointer
        self.position = position
        self.limit = limit


class SchemaError(ZapspecError, ValueError):
    """A JSON Schema that is invalid JSON, or that the compiler refuses
    (``pointer`` says where, ``kind`` which keyword)."""


class GrammarError(ZapspecError, ValueError):
    """A GBNF text, regex or grammar the parser or the engine refuses
    (``position`` for text)."""


class TokenizerError(ZapspecError, ValueError):
    """A tokenizer that cannot be loaded or described."""


class LimitExceeded(ZapspecError):
    """A resource bound of the compiler or engine was reached (``limit``
    names it): the input is refused instead of exhausting time or memory."""


class InvalidTokenError(ZapspecError, ValueError):
    """A token id outside the vocabulary."""


class RollbackError(ZapspecError, ValueError):
    """A rollback past the first token, or past ``max_rollback_tokens``."""


class BitmaskError(ZapspecError, ValueError):
    """A bitmask (or logits) of the wrong shape, dtype, layout or device."""


class MatcherTerminatedError(ZapspecError, RuntimeError):
    """A mask asked of a matcher that has accepted its stop token."""


class InternalError(ZapspecError, RuntimeError):
    """A bug in zapspec (a Rust panic); please report it."""
