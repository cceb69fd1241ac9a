"""Test helpers at the names of ``xgrammar.testing``, so that an engine's
test suite written against XGrammar ports by changing its imports.

Each helper is a few lines over the public API (no private engine
state): accept a string on a matcher over an empty vocabulary, read the
rejected ids out of a bitmask, convert between boolean masks and
bitmasks, list the rules that derive the empty string, write a numeric
range as zapspec's JSON Schema compiler writes it. The XGrammar helpers
that expose its own internals (rule FSMs, grammar functors) have no
zapspec counterpart; the names are here so that a test module that
imports them still loads, and calling one raises ``NotImplementedError``
saying so.
"""

import json
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _zapspec
from ._zapspec import CompiledGrammar, Grammar, GrammarCompiler, GrammarMatcher, TokenizerInfo

__all__ = [
    "_get_matcher_from_grammar",
    "_get_matcher_from_grammar_and_tokenizer_info",
    "_is_grammar_accept_string",
    "_get_masked_tokens_from_bitmask",
    "_is_single_token_bitmask",
    "bool_mask_to_bitmask",
    "bitmask_to_bool_mask",
    "_traverse_draft_tree",
    "_json_schema_to_ebnf",
    "_regex_to_ebnf",
    "_ebnf_to_grammar_no_normalization",
    "_get_allow_empty_rule_ids",
    "_generate_range_regex",
    "_generate_float_regex",
]


def _compile(grammar: Union[Grammar, str], tokenizer_info: Optional[TokenizerInfo]) -> CompiledGrammar:
    if tokenizer_info is None:
        tokenizer_info = TokenizerInfo([])
    return GrammarCompiler(tokenizer_info, cache_enabled=False).compile_grammar(grammar)


def _get_matcher_from_grammar(grammar: Union[Grammar, str], **kwargs: Any) -> GrammarMatcher:
    """A matcher of ``grammar`` (a ``Grammar`` or EBNF text) over an empty
    vocabulary, terminating when the grammar completes: it accepts strings,
    not tokens."""
    kwargs.setdefault("terminate_without_stop_token", True)
    return GrammarMatcher(_compile(grammar, None), **kwargs)


def _get_matcher_from_grammar_and_tokenizer_info(
    grammar: Union[Grammar, str], tokenizer_info: Optional[TokenizerInfo] = None, **kwargs: Any
) -> GrammarMatcher:
    """A matcher of ``grammar`` over ``tokenizer_info`` (default: an empty
    vocabulary); ``kwargs`` go to ``GrammarMatcher``."""
    return GrammarMatcher(_compile(grammar, tokenizer_info), **kwargs)


def _is_grammar_accept_string(
    grammar: Union[Grammar, str],
    input_str: Union[str, bytes],
    *,
    debug_print: bool = False,
    print_time: bool = False,
    require_termination: bool = True,
) -> bool:
    """Whether ``grammar`` accepts ``input_str`` (as a whole when
    ``require_termination``, else as a prefix)."""
    matcher = _get_matcher_from_grammar(grammar)
    if not matcher.accept_string(input_str):
        return False
    return matcher.is_terminated() if require_termination else True


def _rows(bitmask: Any) -> np.ndarray:
    arr = bitmask.numpy() if hasattr(bitmask, "numpy") and not isinstance(bitmask, np.ndarray) else bitmask
    arr = np.asarray(arr)
    if arr.dtype != np.int32:
        raise ValueError(f"the bitmask must have dtype int32, not {arr.dtype}")
    return arr.reshape(1, -1) if arr.ndim == 1 else arr


def _allowed(bitmask: Any, vocab_size: int, index: int) -> np.ndarray:
    row = _rows(bitmask)[index].view(np.uint32)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little").astype(bool)
    return bits[:vocab_size]


def _get_masked_tokens_from_bitmask(bitmask: Any, vocab_size: int, index: int = 0) -> List[int]:
    """The ids ``< vocab_size`` whose bit in row ``index`` is 0 (rejected)."""
    return np.flatnonzero(~_allowed(bitmask, vocab_size, index)).tolist()


def _is_single_token_bitmask(bitmask: Any, vocab_size: int, index: int = 0) -> Tuple[bool, int]:
    """``(True, id)`` when row ``index`` allows exactly one id, else ``(False, -1)``."""
    ids = np.flatnonzero(_allowed(bitmask, vocab_size, index))
    return (True, int(ids[0])) if len(ids) == 1 else (False, -1)


def bool_mask_to_bitmask(bool_mask: Any) -> Any:
    """A ``(batch, vocab)`` boolean mask (True = allowed) as an int32
    bitmask; the last word is padded with allowed bits. Returns the
    argument's kind (torch tensor or numpy array)."""
    is_torch = hasattr(bool_mask, "numpy") and not isinstance(bool_mask, np.ndarray)
    m = np.asarray(bool_mask.cpu().numpy() if is_torch else bool_mask, dtype=bool)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    pad = (-m.shape[1]) % 32
    m = np.pad(m, ((0, 0), (0, pad)), constant_values=True)
    out = np.packbits(m, axis=1, bitorder="little").view(np.int32)
    if is_torch:
        import torch

        return torch.from_numpy(out.copy())
    return out


def bitmask_to_bool_mask(bit_mask: Any, vocab_size: Optional[int] = None) -> Any:
    """An int32 bitmask as a ``(batch, vocab_size)`` boolean mask (True =
    allowed); ``vocab_size`` defaults to 32 bits per word."""
    is_torch = hasattr(bit_mask, "numpy") and not isinstance(bit_mask, np.ndarray)
    rows = _rows(bit_mask)
    width = rows.shape[1] * 32
    if vocab_size is None:
        vocab_size = width
    if vocab_size > width:
        raise ValueError("vocab_size should be less than or equal to the size represented by bit_mask.")
    bits = np.unpackbits(np.ascontiguousarray(rows).view(np.uint8), axis=1, bitorder="little")
    out = bits[:, :vocab_size].astype(bool)
    if is_torch:
        import torch

        return torch.from_numpy(out)
    return out


def _traverse_draft_tree(
    retrieve_next_token: Any,
    retrieve_next_sibling: Any,
    draft_tokens: Any,
    matcher: GrammarMatcher,
    bitmask: Any,
    time_threshold: float = -1.0,
) -> bool:
    """``matcher.traverse_draft_tree`` with XGrammar's older argument order."""
    return matcher.traverse_draft_tree(
        retrieve_next_token, retrieve_next_sibling, draft_tokens, bitmask, time_threshold
    )


def _json_schema_to_ebnf(schema: Any, **kwargs: Any) -> str:
    """The GBNF zapspec compiles ``schema`` to: the schema's rules (zapspec's,
    not XGrammar's: the two converters name and shape them differently),
    then XGrammar's named JSON value rules (``basic_string``,
    ``basic_object``, ...), which grammar text written for XGrammar refers
    to. ``json_format`` other than ``"json"`` (``"qwen_xml"``, ...) is the
    structural tag's ``json_schema`` format in that style, with
    ``any_order`` and ``max_whitespace_cnt``; the JSON layout options
    (``indent``, ``separators``, ...) do not apply to it."""
    style = kwargs.pop("json_format", "json")
    if style == "json":
        return str(Grammar.from_json_schema(schema, **kwargs))
    if isinstance(schema, str):
        schema = json.loads(schema)
    elif isinstance(schema, type):
        schema = schema.model_json_schema()
    fmt: Dict[str, Any] = {"type": "json_schema", "json_schema": schema, "style": style}
    if kwargs.get("any_order"):
        fmt["any_order"] = True
    if kwargs.get("max_whitespace_cnt") is not None:
        fmt["max_whitespace_cnt"] = kwargs["max_whitespace_cnt"]
    return str(Grammar.from_structural_tag({"type": "structural_tag", "format": fmt}))


def _regex_to_ebnf(regex: str, with_rule_name: bool = True) -> str:
    """``regex`` (read as ``Grammar.from_regex`` reads it) as plain GBNF,
    one character per literal, classes as written, laid out as XGrammar's
    regex converter writes it (``root ::= "a" [0-9]+``); without
    ``with_rule_name``, the rule's body. ``Grammar.from_regex`` itself
    compiles the regex as one regex terminal."""
    body = _zapspec._regex_to_gbnf(regex)
    return f"root ::= {body}\n" if with_rule_name else body


def _ebnf_to_grammar_no_normalization(ebnf_string: str, root_rule_name: str = "root") -> Grammar:
    """``Grammar.from_ebnf``: zapspec's parser keeps the rules as written."""
    return Grammar.from_ebnf(ebnf_string, root_rule_name=root_rule_name)


def _internal(name: str):
    def f(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"xgrammar.testing.{name} reads XGrammar's internals (rule FSMs, grammar passes); "
            "zapspec has no counterpart"
        )

    f.__name__ = name
    f.__doc__ = f"XGrammar-internal helper {name}: not available in zapspec (raises NotImplementedError)."
    return f


_is_rule_fsm_accept_string = _internal("_is_rule_fsm_accept_string")
_print_grammar_fsms = _internal("_print_grammar_fsms")


def _get_allow_empty_rule_ids(compiled_grammar: Union[CompiledGrammar, Grammar]) -> List[int]:
    """The ids of the rules that derive the empty string, ascending. A
    rule's id is its place among the rules as written (for EBNF, in the
    order the text defines them; the nonterminals zapspec makes for groups
    and repetitions are not rules of the text)."""
    grammar = compiled_grammar.grammar if isinstance(compiled_grammar, CompiledGrammar) else compiled_grammar
    return list(_zapspec._allow_empty_rule_ids(grammar))


def _generate_range_regex(start: Optional[int] = None, end: Optional[int] = None) -> str:
    """The integers from ``start`` to ``end`` (both inclusive, ``None``
    unbounded) as an anchored regex (Python ``re`` syntax): the language
    zapspec's JSON Schema compiler gives an integer with those bounds
    (written without a fraction). The bounds pass as floats, exact up to
    2**53. XGrammar's helper writes its own regex of the same integers;
    the texts differ."""
    return _zapspec._number_range_regex(
        None if start is None else float(start), None if end is None else float(end), integer=True
    )


def _generate_float_regex(
    start: Optional[float] = None,
    end: Optional[float] = None,
    exclusive_start: bool = False,
    exclusive_end: bool = False,
) -> str:
    """The JSON numbers between ``start`` and ``end`` as an anchored regex
    (Python ``re`` syntax): the language zapspec's JSON Schema compiler
    gives ``minimum`` / ``maximum`` (``exclusiveMinimum`` /
    ``exclusiveMaximum`` with the ``exclusive_*`` flags), any number of
    fraction digits. XGrammar's helper writes its own regex, with at most
    six fraction digits; the texts differ."""
    return _zapspec._number_range_regex(start, end, exclusive_start, exclusive_end)


class GrammarFunctor:
    """XGrammar's grammar passes (normalisers, inliners, fusers): internals
    with no zapspec counterpart; each raises ``NotImplementedError``."""

    structure_normalizer = staticmethod(_internal("GrammarFunctor.structure_normalizer"))
    rule_inliner = staticmethod(_internal("GrammarFunctor.rule_inliner"))
    byte_string_fuser = staticmethod(_internal("GrammarFunctor.byte_string_fuser"))
    dead_code_eliminator = staticmethod(_internal("GrammarFunctor.dead_code_eliminator"))
    lookahead_assertion_analyzer = staticmethod(_internal("GrammarFunctor.lookahead_assertion_analyzer"))
    grammar_optimizer = staticmethod(_internal("GrammarFunctor.grammar_optimizer"))
    fsm_builder = staticmethod(_internal("GrammarFunctor.fsm_builder"))
    repetition_normalizer = staticmethod(_internal("GrammarFunctor.repetition_normalizer"))
