"""XGrammar's ``xgrammar.matcher`` module path: the matcher, the batch
matcher and the bitmask helpers.

:class:`BatchGrammarMatcher` is XGrammar's batch interface over
:func:`zapspec.batch_fill_next_token_bitmask` (rows filled in parallel,
the GIL released) and per-matcher loops for accepting and rolling back.
"""

from typing import List, Optional, Sequence, Union

from ._zapspec import GrammarMatcher, batch_fill_next_token_bitmask
from .bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    bitmask_dtype,
    get_bitmask_shape,
    reset_token_bitmask,
)
from .errors import ZapspecError

__all__ = [
    "GrammarMatcher",
    "BatchGrammarMatcher",
    "batch_fill_next_token_bitmask",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_dtype",
    "get_bitmask_shape",
    "reset_token_bitmask",
]


def _same_length(what: str, a: Sequence, b: Sequence) -> None:
    if len(a) != len(b):
        raise ZapspecError(f"{len(a)} matchers but {len(b)} {what}", kind="batch")


class BatchGrammarMatcher:
    """Fills, accepts and rolls back many matchers at once (XGrammar's
    ``BatchGrammarMatcher``). ``max_threads``: threads for the fill
    (``"auto"``: zapspec's choice, which fills cheap rows on the calling
    thread and hands the rest to a pool)."""

    def __init__(self, max_threads: Union[int, str] = "auto") -> None:
        if max_threads == "auto":
            self._threads: Optional[int] = None
        elif isinstance(max_threads, int) and max_threads >= 1:
            self._threads = max_threads
        else:
            raise ZapspecError(f"max_threads must be 'auto' or a positive int, not {max_threads!r}", kind="batch")

    def batch_fill_next_token_bitmask(
        self,
        matchers: List[GrammarMatcher],
        bitmask,
        indices: Optional[List[int]] = None,
        debug_print: bool = False,
    ) -> None:
        """Row ``indices[i]`` (default ``i``) of ``bitmask`` gets the mask of
        ``matchers[i]``; equal to a loop of ``fill_next_token_bitmask``."""
        batch_fill_next_token_bitmask(matchers, bitmask, indices, self._threads)

    @staticmethod
    def batch_accept_token(
        matchers: List[GrammarMatcher], tokens: List[int], debug_print: bool = False
    ) -> List[bool]:
        """``matchers[i].accept_token(tokens[i])`` for each ``i``."""
        _same_length("tokens", matchers, tokens)
        return [m.accept_token(int(t)) for m, t in zip(matchers, tokens)]

    @staticmethod
    def batch_accept_string(
        matchers: List[GrammarMatcher], strings: List[Union[str, bytes]], debug_print: bool = False
    ) -> List[bool]:
        """``matchers[i].accept_string(strings[i])`` for each ``i``."""
        _same_length("strings", matchers, strings)
        return [m.accept_string(s) for m, s in zip(matchers, strings)]

    @staticmethod
    def batch_rollback(matchers: List[GrammarMatcher], num_tokens: Union[List[int], int] = 1) -> None:
        """``matchers[i].rollback(num_tokens[i])`` (or the same count for all)."""
        counts = [num_tokens] * len(matchers) if isinstance(num_tokens, int) else list(num_tokens)
        _same_length("rollback counts", matchers, counts)
        for m, n in zip(matchers, counts):
            m.rollback(n)
