"""The exceptions of zapspec.

Every error the package raises on purpose is a :class:`ZapspecError`, and
every :class:`ZapspecError` is a ``RuntimeError``: that is what XGrammar
raises for a refused schema, grammar or regex, and what serving engines
catch (SGLang's ``dispatch_json`` / ``dispatch_ebnf`` / ``dispatch_regex``
turn a ``RuntimeError`` into an invalid-grammar object). Errors of bad
input also inherit ``ValueError``, so ``except ValueError`` keeps working.
The names XGrammar's ``xgrammar.exception`` defines are here too, as
subclasses of the package's own classes: :class:`InvalidJSONError` (a
schema or document that is not JSON: a :class:`SchemaError`),
:class:`DeserializeFormatError` and :class:`DeserializeVersionError`
(``deserialize_json``), :class:`InvalidStructuralTagError`.
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
    "InvalidJSONError",
    "DeserializeFormatError",
    "DeserializeVersionError",
    "InvalidStructuralTagError",
]


class ZapspecError(RuntimeError):
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


class InvalidJSONError(SchemaError):
    """A schema (or serialized object) that is not valid JSON (XGrammar's
    ``InvalidJSONError``); ``position`` is its ``(line, column)``."""


class DeserializeFormatError(ZapspecError, ValueError):
    """A ``deserialize_json`` input that is JSON but not the layout
    ``serialize_json`` writes (XGrammar's ``DeserializeFormatError``)."""


class DeserializeVersionError(ZapspecError, ValueError):
    """A ``deserialize_json`` input written by another serialization
    version (XGrammar's ``DeserializeVersionError``)."""


class InvalidStructuralTagError(ZapspecError, ValueError):
    """A structural tag the compiler refuses (XGrammar's
    ``InvalidStructuralTagError``)."""
