"""XGrammar's ``xgrammar.exception`` module path: the same exception names,
which are :mod:`zapspec.errors` classes (each a ``RuntimeError``)."""

from .errors import (
    DeserializeFormatError,
    DeserializeVersionError,
    InvalidJSONError,
    InvalidStructuralTagError,
)

__all__ = [
    "DeserializeFormatError",
    "DeserializeVersionError",
    "InvalidJSONError",
    "InvalidStructuralTagError",
]
