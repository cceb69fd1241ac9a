"""zapspec as vLLM's structured-output backend (vLLM 0.32, V1 engine).

vLLM picks its backend from a fixed list (``StructuredOutputsConfig.backend``
is a ``Literal``; ``vllm/v1/structured_output/__init__.py`` builds the class
by name), so a package cannot add a name. What it can do, without editing
vLLM, is run code in every vLLM process before the first request: the
``vllm.general_plugins`` entry point, which the ``zapspec`` package declares
(``zapspec = "zapspec.contrib.vllm:register"``). The plugin does nothing
unless the switch is on:

    ZAPSPEC_VLLM=1 python -m vllm.entrypoints.openai.api_server --model ...

With the switch on, zapspec serves every request that vLLM would send to its
``xgrammar`` backend (the default ``auto`` and an explicit ``xgrammar``):

* the engine core builds :class:`ZapspecBackend` in place of
  ``XgrammarBackend`` (JSON schemas, ``json_object``, regexes, GBNF / EBNF
  grammars, choices, structural tags: tool calls under strict tool calling
  and ``response_format: structural_tag``);
* the front end validates requests with zapspec
  (:func:`validate_request`, in place of ``validate_xgrammar_grammar``): a
  schema, grammar, regex or tag that zapspec refuses is an HTTP 400 whose
  message carries zapspec's reason and its JSON pointer or position. Under
  ``auto`` it does not fall back to guidance: a vLLM engine has one backend,
  and a request validated for another one would fail at compile time;
* the bitmask of a step with no speculative tokens is filled in one call
  (``zapspec.batch_fill_next_token_bitmask``, GIL released, rows in
  parallel) instead of a Python loop over the requests.

Everything else (speculative tokens, reasoning sections, the mask applied on
the device with vLLM's kernel) is vLLM's own code, calling the
:class:`ZapspecGrammar` methods below. Lark grammars go to ``compile_lark``, as
vLLM's own backend sends them (``zapspec.Grammar.from_lark``: rules,
terminals, ``%import common``, ``%ignore``, ``%json``).

Settings (environment, read when the backend is built):

* ``ZAPSPEC_VLLM_COMPILE_BUDGET_S`` (default 30): the JSON Schema compiler's
  time budget per request (``time_budget_s``); a schema over it is refused
  instead of holding vLLM's compile thread.
* ``ZAPSPEC_VLLM_BATCH_FILL`` (default 1): ``0`` keeps vLLM's per-request
  fill loop (for measuring the batch fill against it).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, List, Optional

import zapspec
from zapspec.contrib import refusal_message

logger = logging.getLogger("zapspec.contrib.vllm")

#: The environment switch that turns the plugin on (``1``, ``true``, ``yes``, ``on``).
SWITCH = "ZAPSPEC_VLLM"

_installed = False


def enabled() -> bool:
    """Whether the :data:`SWITCH` environment variable asks for zapspec."""
    return os.environ.get(SWITCH, "").strip().lower() in ("1", "true", "yes", "on")


def register() -> None:
    """The ``vllm.general_plugins`` entry point: installs the backend when
    :data:`SWITCH` is on, does nothing otherwise."""
    if enabled():
        install()


def install() -> None:
    """Routes vLLM's ``xgrammar`` backend and its front-end validation to
    zapspec in this process (idempotent). The entry point calls it in every
    vLLM process when :data:`SWITCH` is on; call it yourself to turn zapspec
    on in an in-process ``vllm.LLM`` without the environment variable (the
    engine core must run in this process: ``VLLM_ENABLE_V1_MULTIPROCESSING=0``)."""
    global _installed
    if _installed:
        return
    import vllm.v1.structured_output as so
    import vllm.v1.structured_output.backend_xgrammar as bx

    so.XgrammarBackend = ZapspecBackend
    bx.validate_xgrammar_grammar = validate_request
    manager = so.StructuredOutputManager
    if not getattr(manager.grammar_bitmask, "_zapspec", False):
        manager.grammar_bitmask = _batched_grammar_bitmask(manager.grammar_bitmask)
    _installed = True
    # a child of vLLM's logger, so that it prints where vLLM's lines print
    logging.getLogger("vllm.zapspec").info(
        "zapspec %s serves vLLM's xgrammar structured-output backend (pid %d)", zapspec.__version__, os.getpid()
    )


# ---------------------------------------------------------------- front end


_request_error = None


def _client_error(what: str, err: BaseException) -> Exception:
    """A 4xx error for vLLM's front end carrying zapspec's reason and place.
    Not a ``VLLMValidationError``: under ``auto`` that one makes vLLM try
    guidance next, whose compile would then fail inside zapspec's engine."""
    global _request_error
    if _request_error is None:
        from vllm.exceptions import VLLMClientError

        class ZapspecRequestError(VLLMClientError):
            """A constraint zapspec refuses (HTTP 400)."""

        _request_error = ZapspecRequestError
    e = _request_error(refusal_message(what, err))
    e.pointer = getattr(err, "pointer", None)
    e.position = getattr(err, "position", None)
    e.kind = getattr(err, "kind", None)
    return e


def _is_lark(grammar: str) -> bool:
    from vllm.v1.structured_output.utils import grammar_is_likely_lark

    return grammar_is_likely_lark(grammar)


def _legacy_structural_tag(tag: dict) -> Any:
    items = [
        zapspec.StructuralTagItem(begin=s["begin"], schema=json.dumps(s["schema"]), end=s["end"])
        for s in tag["structures"]
    ]
    return items, tag["triggers"]


def validate_request(sampling_params: Any) -> None:
    """Front-end validation of one request's ``structured_outputs`` with
    zapspec (vLLM calls it as ``validate_xgrammar_grammar``). Builds the
    grammar (not the token masks, which the engine core compiles), rewrites
    ``choice`` into a grammar as vLLM's xgrammar path does, and raises a 4xx
    error with zapspec's message and pointer on refusal."""
    from vllm.sampling_params import check_json_nesting
    from vllm.v1.structured_output.utils import choice_as_grammar

    so = sampling_params.structured_outputs
    if so is None:
        return
    if so.regex:  # (a NUL byte was refused by vLLM before any backend's check)
        try:
            zapspec.Grammar.from_regex(so.regex)
        except zapspec.ZapspecError as err:
            raise _client_error("regex", err) from err
    if so.choice:
        grammar = choice_as_grammar(so.choice)
        try:
            zapspec.Grammar.from_ebnf(grammar)
        except zapspec.ZapspecError as err:
            raise _client_error("choice", err) from err
        so.choice = None
        so.grammar = grammar
        return
    if so.json:
        check_json_nesting(so.json)
        try:
            zapspec.Grammar.from_json_schema(so.json)
        except zapspec.ZapspecError as err:
            raise _client_error("JSON schema", err) from err
        return
    if so.grammar:
        try:
            if _is_lark(so.grammar):
                zapspec.Grammar.from_lark(so.grammar)
            else:
                zapspec.Grammar.from_ebnf(so.grammar)
        except zapspec.ZapspecError as err:
            raise _client_error("grammar", err) from err
        return
    if so.structural_tag:
        check_json_nesting(so.structural_tag, structural_tag=True)
        try:
            tag = json.loads(so.structural_tag)
            if isinstance(tag, dict) and "structures" in tag:
                zapspec.Grammar.from_structural_tag(*_legacy_structural_tag(tag))
            else:
                zapspec.Grammar.from_structural_tag(so.structural_tag)
        except (zapspec.ZapspecError, json.JSONDecodeError, KeyError, TypeError) as err:
            raise _client_error("structural tag", err) from err


# ---------------------------------------------------------------- engine core


def _backend_base() -> Any:
    from vllm.v1.structured_output.backend_types import StructuredOutputBackend

    return StructuredOutputBackend


def _grammar_base() -> Any:
    from vllm.v1.structured_output.backend_types import StructuredOutputGrammar

    return StructuredOutputGrammar


try:  # the classes subclass vLLM's ABCs when vLLM is importable
    _BackendBase = _backend_base()
    _GrammarBase = _grammar_base()
except ImportError:  # documentation builds, tests without vLLM
    _BackendBase = object
    _GrammarBase = object


@dataclass
class ZapspecGrammar(_GrammarBase):  # type: ignore[misc, valid-type]
    """One request's grammar state: a ``zapspec.GrammarMatcher`` behind
    vLLM's ``StructuredOutputGrammar`` interface."""

    vocab_size: int
    matcher: Any = field(hash=False)
    ctx: Any = field(hash=False)
    num_processed_tokens: int = field(default=0, repr=False, hash=False, init=False)
    _is_terminated: bool = field(default=False, repr=False, hash=False)

    def accept_tokens(self, request_id: str, tokens: List[int]) -> bool:
        """Advances the matcher; ``False`` on the first refused token (tokens
        after termination are ignored, as in vLLM's xgrammar backend)."""
        if self._is_terminated:
            return True
        for token in tokens:
            if not self.matcher.accept_token(token):
                logger.error("zapspec refused token %s for request %s", token, request_id)
                return False
            self.num_processed_tokens += 1
            self._is_terminated = self.matcher.is_terminated()
            if self._is_terminated:
                break
        return True

    def validate_tokens(self, tokens: List[int]) -> List[int]:
        """The longest accepted prefix of ``tokens`` (speculative drafts),
        in one call; the matcher's state is unchanged."""
        if self._is_terminated or not tokens:
            return []
        n = self.matcher.validate_tokens(tokens)
        return list(tokens[:n])

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last ``num_tokens`` accepted tokens."""
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens
        self._is_terminated = self.matcher.is_terminated()

    def fill_bitmask(self, bitmask: Any, idx: int) -> None:
        """Writes the next-token mask into row ``idx`` of vLLM's int32 bitmask."""
        self.matcher.fill_next_token_bitmask(bitmask, idx)

    def is_terminated(self) -> bool:
        """Whether a stop token ended the grammar."""
        return self._is_terminated

    def reset(self) -> None:
        """Back to the grammar's start."""
        self.matcher.reset()
        self.num_processed_tokens = 0
        self._is_terminated = False


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        v = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not v > 0:
        raise ValueError(f"{name} must be positive, not {raw!r}")
    return v


@dataclass
class ZapspecBackend(_BackendBase):  # type: ignore[misc, valid-type]
    """vLLM's engine-level ``StructuredOutputBackend`` on zapspec: one
    ``zapspec.GrammarCompiler`` (cached, shared by every request) built from
    the served tokenizer, as vLLM's xgrammar backend builds XGrammar's."""

    def __post_init__(self) -> None:
        from vllm.utils.mistral import is_mistral_tokenizer

        cfg = self.vllm_config.structured_outputs_config
        self.disable_any_whitespace = cfg.disable_any_whitespace
        if is_mistral_tokenizer(self.tokenizer):
            self.vocab_size = len(self.tokenizer.vocab)
            info = zapspec.TokenizerInfo(
                encoded_vocab=self.tokenizer.vocab,
                vocab_type=zapspec.VocabType.RAW if self.tokenizer.is_tekken else zapspec.VocabType.BYTE_FALLBACK,
                vocab_size=self.vocab_size,
                stop_token_ids=[self.tokenizer.eos_token_id],
                add_prefix_space=True,
            )
        else:
            info = zapspec.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=self.vocab_size)
        self.tokenizer_info = info
        self.compiler = zapspec.GrammarCompiler(info, max_threads=8, cache_enabled=True)
        self.compile_budget_s = _env_float("ZAPSPEC_VLLM_COMPILE_BUDGET_S", 30.0)
        self.num_speculative_tokens = 0
        if self.vllm_config.speculative_config is not None:
            self.num_speculative_tokens = self.vllm_config.speculative_config.num_speculative_tokens

    def _json(self, schema: str) -> Any:
        kw: dict = {"any_whitespace": not self.disable_any_whitespace, "time_budget_s": self.compile_budget_s}
        if self.disable_any_whitespace:
            kw["separators"] = (",", ":")
        return self.compiler.compile_json_schema(schema, **kw)

    def compile_grammar(self, request_type: Any, grammar_spec: str, stop_token_ids: Optional[set] = None) -> Any:
        """Compiles one request's constraint (vLLM calls it on its compile
        thread; zapspec releases the GIL while compiling)."""
        from vllm.v1.structured_output.backend_types import StructuredOutputOptions as O
        from vllm.v1.structured_output.utils import choice_as_grammar

        if request_type == O.JSON:
            ctx = self._json(grammar_spec)
        elif request_type == O.JSON_OBJECT:
            ctx = self._json('{"type": "object"}')
        elif request_type == O.GRAMMAR:
            if _is_lark(grammar_spec):
                ctx = self.compiler.compile_lark(grammar_spec)
            else:
                ctx = self.compiler.compile_grammar(grammar_spec)
        elif request_type == O.REGEX:
            ctx = self.compiler.compile_regex(grammar_spec)
        elif request_type == O.CHOICE:
            ctx = self.compiler.compile_grammar(choice_as_grammar(json.loads(grammar_spec)))
        elif request_type == O.STRUCTURAL_TAG:
            tag = json.loads(grammar_spec)
            if isinstance(tag, dict) and "structures" in tag:
                ctx = self.compiler.compile_structural_tag(*_legacy_structural_tag(tag))
            else:
                ctx = self.compiler.compile_structural_tag(grammar_spec)
        else:
            raise ValueError(f"zapspec: unsupported structured-output request type {request_type!s}")
        matcher = zapspec.GrammarMatcher(
            ctx,
            override_stop_tokens=list(stop_token_ids) if stop_token_ids else None,
            max_rollback_tokens=self.num_speculative_tokens,
        )
        return ZapspecGrammar(matcher=matcher, vocab_size=self.vocab_size, ctx=ctx)

    def allocate_token_bitmask(self, max_num_seqs: int) -> Any:
        """A CPU int32 torch tensor, ``max_num_seqs`` rows of ``ceil(vocab / 32)``."""
        return zapspec.allocate_token_bitmask(max_num_seqs, self.vocab_size, framework="torch")

    def destroy(self) -> None:
        """Drops the compiler (and its cache)."""
        self.compiler = None


# ---------------------------------------------------------------- batch fill


def _batched_grammar_bitmask(original: Any) -> Any:
    """Wraps ``StructuredOutputManager.grammar_bitmask``: a step with no
    speculative tokens whose grammars are all zapspec's is filled in one
    ``batch_fill_next_token_bitmask`` call; anything else (speculative rows,
    reasoning sections still open, another backend) goes to vLLM's code."""

    def grammar_bitmask(self: Any, requests: Any, structured_output_request_ids: Any, scheduled_spec_decode_tokens: Any):
        if (
            not structured_output_request_ids
            or self.vllm_config.num_speculative_tokens
            or os.environ.get("ZAPSPEC_VLLM_BATCH_FILL", "1") == "0"
            or not isinstance(self.backend, ZapspecBackend)
        ):
            return original(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)
        if self._grammar_bitmask is None:
            self._grammar_bitmask = self.backend.allocate_token_bitmask(self.vllm_config.scheduler_config.max_num_seqs)
        bitmask = self._grammar_bitmask
        matchers, rows = [], []
        for i, req_id in enumerate(structured_output_request_ids):
            request = requests[req_id]
            grammar = request.structured_output_request.grammar
            if not isinstance(grammar, ZapspecGrammar):
                return original(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)
            if self._get_constraint_bounds(request, ()).constraint_start == 0 and not grammar.is_terminated():
                matchers.append(grammar.matcher)
                rows.append(i)
            else:
                bitmask[i].fill_(self._full_mask)
        if matchers:
            zapspec.batch_fill_next_token_bitmask(matchers, bitmask, indices=rows)
        n = len(structured_output_request_ids)
        return (bitmask[:n] if n < bitmask.shape[0] else bitmask).numpy()

    grammar_bitmask._zapspec = True  # type: ignore[attr-defined]
    grammar_bitmask.__doc__ = original.__doc__
    return grammar_bitmask
