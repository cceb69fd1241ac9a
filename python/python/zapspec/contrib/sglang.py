"""zapspec as SGLang's grammar backend (SGLang 0.5.23).

SGLang has a registry of grammar backends (``register_grammar_backend`` in
``sglang/srt/constrained/base_grammar_backend.py``) and loads plugins from
the ``sglang.srt.plugins`` entry point in each of its processes. The
``zapspec`` package declares that entry point
(``zapspec = "zapspec.contrib.sglang:register"``): it adds the name
``zapspec`` to ``--grammar-backend``'s choices and registers
:class:`ZapspecGrammarBackend` under it, so a server picks it by name:

    python -m sglang.launch_server --model-path ... --grammar-backend zapspec

It answers SGLang's ``dispatch_json`` / ``dispatch_regex`` / ``dispatch_ebnf``
/ ``dispatch_structural_tag`` (both structural-tag forms, ``$$ANY$$`` as the
built-in JSON grammar) with ``zapspec.GrammarCompiler`` and turns a
refusal into SGLang's ``InvalidGrammarObject`` carrying zapspec's message
and JSON pointer. Masks are XGrammar's int32 bitmask, so they are applied
with ``zapspec.apply_token_bitmask_inplace`` (CPU or the logits' device).

Tested against SGLang's own classes where ``sglang`` imports
(``python/tests-serving/test_sglang.py``: masks, acceptance, rollback, copy,
jump-forward and refusals equal to SGLang's xgrammar backend on SmolLM2).
A whole SGLang server cannot run on a CPU-only machine from PyPI (its CPU
path needs a CPU build of ``sgl-kernel``), so no server test here.
"""

from __future__ import annotations

import json
import logging
from typing import Any, List, Optional, Tuple

import zapspec
from zapspec.contrib import refusal_message

logger = logging.getLogger("zapspec.contrib.sglang")

#: The name this backend registers for ``--grammar-backend``.
NAME = "zapspec"
#: SGLang's xgrammar backend keeps this many tokens of rollback.
MAX_ROLLBACK_TOKENS = 200

try:
    from sglang.srt.constrained.base_grammar_backend import (
        BaseGrammarBackend,
        BaseGrammarObject,
        InvalidGrammarObject,
    )

    _HAVE_SGLANG = True
except ImportError:  # documentation builds, tests without SGLang
    BaseGrammarBackend = BaseGrammarObject = object  # type: ignore[misc, assignment]
    InvalidGrammarObject = None  # type: ignore[assignment]
    _HAVE_SGLANG = False


def register() -> None:
    """The ``sglang.srt.plugins`` entry point: makes ``--grammar-backend
    zapspec`` a choice and registers the backend (idempotent)."""
    from sglang.srt.arg_groups import choices
    from sglang.srt.constrained.base_grammar_backend import register_grammar_backend

    if NAME not in choices.GRAMMAR_BACKEND_CHOICES:
        choices.GRAMMAR_BACKEND_CHOICES.append(NAME)
    register_grammar_backend(NAME, create)


def create(server_args: Any, tokenizer: Any, vocab_size: int, eos_token_ids: Optional[set] = None) -> "ZapspecGrammarBackend":
    """The registry's factory (SGLang calls it with these four arguments)."""
    any_ws, max_ws = True, None
    try:
        from sglang.srt.runtime_context import get_serving

        serving = get_serving()
        any_ws = not serving.constrained_json_disable_any_whitespace
        max_ws = serving.constrained_json_max_whitespace_cnt
    except Exception:  # outside a running server: XGrammar's defaults
        pass
    return ZapspecGrammarBackend(
        tokenizer,
        vocab_size=vocab_size,
        model_eos_token_ids=list(eos_token_ids) if eos_token_ids else None,
        any_whitespace=any_ws,
        max_whitespace_cnt=max_ws,
    )


def _allocate(vocab_size: int, batch_size: int, device: Any = None) -> Any:
    """An int32 bitmask on the CPU (all allowed)."""
    return zapspec.allocate_token_bitmask(batch_size, vocab_size, framework="torch")


def _move(vocab_mask: Any, device: Any) -> Any:
    """The bitmask on the logits' device."""
    return vocab_mask.to(device, non_blocking=True)


def _apply(logits: Any, vocab_mask: Any) -> None:
    """Masked logits to -inf, in place (on their device)."""
    zapspec.apply_token_bitmask_inplace(logits, vocab_mask)


class ZapspecGrammar(BaseGrammarObject):  # type: ignore[misc, valid-type]
    """One request's grammar: a ``zapspec.GrammarMatcher`` behind SGLang's
    ``BaseGrammarObject``."""

    def __init__(self, matcher: Any, vocab_size: int, ctx: Any, override_stop_tokens: Optional[List[int]], key_string: str = ""):
        if _HAVE_SGLANG:
            super().__init__()
        self.matcher = matcher
        self.vocab_size = vocab_size
        self.ctx = ctx
        self.override_stop_tokens = override_stop_tokens
        self.key_string = key_string
        self.accepted_tokens: List[int] = []

    def accept_token(self, token: int) -> None:
        """Advances; a refused token raises ``ValueError`` (as SGLang's
        xgrammar backend)."""
        if self.is_terminated():
            return
        self.current_token = token
        if not self.matcher.accept_token(token):
            raise ValueError(f"Tokens not accepted: {token}\nAccepted tokens: {self.accepted_tokens}\nKey string: {self.key_string}")
        self.accepted_tokens.append(token)

    def rollback(self, k: int) -> None:
        """Undoes the last ``k`` tokens."""
        self.matcher.rollback(k)
        self.accepted_tokens = self.accepted_tokens[:-k] if k else self.accepted_tokens

    def is_terminated(self) -> bool:
        """Whether a stop token ended the grammar."""
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> Any:
        """An int32 bitmask on the CPU (all allowed)."""
        return _allocate(vocab_size, batch_size)

    def fill_vocab_mask(self, vocab_mask: Any, idx: int) -> None:
        """Row ``idx`` of the bitmask: this request's next-token mask."""
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)

    @staticmethod
    def fill_vocab_mask_batched(entries: Any, vocab_mask: Any) -> None:
        """Every listed row in one call, in parallel with the GIL released."""
        entries = list(entries)
        if entries:
            zapspec.batch_fill_next_token_bitmask(
                [e.grammar.matcher for e in entries], vocab_mask, indices=[e.row for e in entries]
            )

    @staticmethod
    def reset_vocab_mask(vocab_mask: Any) -> None:
        """All tokens allowed again."""
        vocab_mask.fill_(-1)

    move_vocab_mask = staticmethod(_move)
    apply_vocab_mask = staticmethod(_apply)

    def copy(self) -> "ZapspecGrammar":
        """A fresh matcher on the same compiled grammar (SGLang's cache
        hands copies to new requests)."""
        m = zapspec.GrammarMatcher(self.ctx, max_rollback_tokens=MAX_ROLLBACK_TOKENS, override_stop_tokens=self.override_stop_tokens)
        return ZapspecGrammar(m, self.vocab_size, self.ctx, self.override_stop_tokens, self.key_string)

    def try_jump_forward(self, tokenizer: Any) -> Optional[Tuple[List[int], str]]:
        """The string the grammar forces next, if any."""
        s = self.matcher.find_jump_forward_string()
        return ([], s) if s else None

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        """The forced string, and no state (-1)."""
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int], next_state: int) -> None:
        """Rolls back to the common prefix of the old and new token ids,
        then accepts the new ones."""
        k = 0
        for i, old in enumerate(old_output_ids):
            if i < len(new_output_ids) and old == new_output_ids[i]:
                k = i + 1
            else:
                break
        if k < len(old_output_ids):
            self.matcher.rollback(len(old_output_ids) - k)
        for i in range(k, len(new_output_ids)):
            if not self.matcher.accept_token(new_output_ids[i]):
                raise ValueError(f"Token not accepted during retokenization: {new_output_ids[i]} at position {i}")

    def __repr__(self) -> str:
        return f"ZapspecGrammar(key_string={self.key_string!r}, accepted={len(self.accepted_tokens)})"


class ZapspecGrammarBackend(BaseGrammarBackend):  # type: ignore[misc, valid-type]
    """SGLang's ``BaseGrammarBackend`` on one ``zapspec.GrammarCompiler``
    (cached) built from the served tokenizer."""

    def __init__(
        self,
        tokenizer: Any,
        vocab_size: int,
        model_eos_token_ids: Optional[List[int]] = None,
        any_whitespace: bool = True,
        max_whitespace_cnt: Optional[int] = None,
    ):
        if _HAVE_SGLANG:
            super().__init__()
        self.tokenizer_info = zapspec.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=model_eos_token_ids
        )
        self.grammar_compiler = zapspec.GrammarCompiler(self.tokenizer_info)
        self.vocab_size = vocab_size
        self.override_stop_tokens = None
        self.any_whitespace = any_whitespace
        self.max_whitespace_cnt = max_whitespace_cnt

    def _compile(self, what: str, key_string: str, compile: Any, refused: tuple = ()) -> Any:
        """``compile()`` as a grammar object, or SGLang's
        ``InvalidGrammarObject`` with zapspec's reason and place."""
        try:
            ctx = compile()
        except (zapspec.ZapspecError, *refused) as e:
            msg = refusal_message(what, e)
            logger.error("%s (%s)", msg, key_string[:200])
            return InvalidGrammarObject(msg) if InvalidGrammarObject is not None else None
        return self._from_context(ctx, key_string)

    def _from_context(self, ctx: Any, key_string: str) -> ZapspecGrammar:
        m = zapspec.GrammarMatcher(ctx, max_rollback_tokens=MAX_ROLLBACK_TOKENS, override_stop_tokens=self.override_stop_tokens)
        return ZapspecGrammar(m, self.vocab_size, ctx, self.override_stop_tokens, key_string)

    allocate_vocab_mask = staticmethod(_allocate)
    move_vocab_mask = staticmethod(_move)
    apply_vocab_mask = staticmethod(_apply)

    def dispatch_json(self, key_string: str) -> Any:
        """A JSON Schema (``$$ANY$$``: any JSON, the built-in grammar)."""
        if key_string == "$$ANY$$":
            return self._compile("JSON schema", key_string, self.grammar_compiler.compile_builtin_json_grammar)
        kw: dict = {"any_whitespace": self.any_whitespace}
        if self.max_whitespace_cnt is not None:
            kw["max_whitespace_cnt"] = self.max_whitespace_cnt
        return self._compile(
            "JSON schema",
            key_string,
            lambda: self.grammar_compiler.compile_json_schema(key_string, **kw),
            (UnicodeDecodeError,),
        )

    def dispatch_ebnf(self, key_string: str) -> Any:
        """A GBNF / XGrammar EBNF grammar."""
        return self._compile("grammar", key_string, lambda: self.grammar_compiler.compile_grammar(key_string))

    def dispatch_regex(self, key_string: str) -> Any:
        """A regex (XGrammar's dialect)."""
        return self._compile("regex", key_string, lambda: self.grammar_compiler.compile_regex(key_string))

    def dispatch_structural_tag(self, key_string: str) -> Any:
        """A structural tag: XGrammar's format, or SGLang's legacy
        ``{"structures": [...], "triggers": [...]}``."""

        def compile() -> Any:
            tag = json.loads(key_string)
            if isinstance(tag, dict) and "structures" in tag and "triggers" in tag:
                items = [
                    zapspec.StructuralTagItem(begin=s["begin"], schema=json.dumps(s.get("schema") or {}), end=s["end"])
                    for s in tag["structures"]
                ]
                new = zapspec.StructuralTag.from_legacy_structural_tag(items, tag["triggers"])
                new.format.at_least_one = tag.get("at_least_one", False)
                return self.grammar_compiler.compile_structural_tag(new)
            return self.grammar_compiler.compile_structural_tag(key_string)

        return self._compile("structural tag", key_string, compile, (json.JSONDecodeError, KeyError, TypeError))

    def reset(self) -> None:
        """Drops SGLang's cache and the compiler's."""
        if _HAVE_SGLANG:
            super().reset()
        self.grammar_compiler.clear_cache()
