"""Typed stubs of zapspec's extension module (re-exported by ``zapspec``)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

__version__: str

class TokenizerInfo:
    """A model's tokenizer as the grammar engine sees it: the exact bytes of
    every token id, the stop tokens, and the model's vocabulary size (bitmask
    rows cover ``0..vocab_size``; ids past the tokenizer's are never allowed)."""

    def __init__(
        self,
        encoded_vocab: Sequence[Union[str, bytes]],
        vocab_type: Any = ...,
        *,
        vocab_size: Optional[int] = None,
        stop_token_ids: Optional[Union[int, List[int]]] = None,
        add_prefix_space: bool = False,
        special_token_ids: Optional[List[int]] = None,
    ) -> None:
        """From the vocabulary as a list (index = token id), written as
        ``vocab_type`` (``VocabType.RAW`` by default, ``BYTE_FALLBACK``,
        ``BYTE_LEVEL``). Empty entries, ``special_token_ids`` and the stop
        tokens are special (never grammar text). The list and the stop
        tokens may be empty (XGrammar's constructor). Raises
        ``TokenizerError``."""
    @staticmethod
    def from_vocab_and_metadata(encoded_vocab: Sequence[Union[str, bytes]], metadata: str) -> "TokenizerInfo":
        """The list and ``dump_metadata()``'s JSON."""
    def dump_metadata(self) -> str:
        """``{"vocab_type":…,"vocab_size":…,"add_prefix_space":…,"stop_token_ids":[…]}``."""
    def serialize_json(self) -> str: ...
    @staticmethod
    def deserialize_json(json_string: str) -> "TokenizerInfo":
        """``InvalidJSONError``, ``DeserializeFormatError``, ``DeserializeVersionError``."""
    @staticmethod
    def _detect_vocab_type_from_vocab(vocab_dict: Any) -> Optional[Any]: ...
    @property
    def vocab_type(self) -> Any:
        """``zapspec.VocabType``."""
    @property
    def add_prefix_space(self) -> bool: ...
    @property
    def prepend_space_in_tokenization(self) -> bool: ...
    @staticmethod
    def from_huggingface(
        tokenizer: Any, vocab_size: Optional[int] = None, *, stop_token_ids: Optional[Union[int, List[int]]] = None
    ) -> "TokenizerInfo":
        """From a transformers fast tokenizer or a ``tokenizers.Tokenizer``
        (duck-typed). Stop tokens: given, else ``eos_token_id``, else the
        special tokens named like common stop tokens."""
    @staticmethod
    def from_tokenizer_json(
        path: Union[str, PathLike],
        vocab_size: Optional[int] = None,
        *,
        stop_token_ids: Optional[List[int]] = None,
        eos_token: Optional[str] = None,
    ) -> "TokenizerInfo":
        """From a Hugging Face ``tokenizer.json`` file."""
    @staticmethod
    def from_gguf(
        path: Union[str, PathLike], vocab_size: Optional[int] = None, *, stop_token_ids: Optional[List[int]] = None
    ) -> "TokenizerInfo":
        """From the tokenizer in a GGUF model file (byte-level BPE, llama.cpp's layout)."""
    @staticmethod
    def from_tiktoken(
        name: str, vocab_size: Optional[int] = None, *, stop_token_ids: Optional[List[int]] = None
    ) -> "TokenizerInfo":
        """``o200k_base``, ``cl100k_base`` or ``r50k_base`` (built in; no network)."""
    @property
    def vocab_size(self) -> int:
        """The model's vocabulary size."""
    @property
    def tokenizer_vocab_size(self) -> int:
        """Token ids the tokenizer defines."""
    @property
    def stop_token_ids(self) -> List[int]:
        """Tokens that end generation once the grammar accepts."""
    @property
    def special_token_ids(self) -> List[int]:
        """Control tokens and unused ids."""
    @property
    def decoded_vocab(self) -> List[bytes]:
        """The bytes of every token id (special tokens: empty)."""
    @property
    def name(self) -> str:
        """The tokenizer's name."""
    def encode(self, text: str) -> List[int]:
        """The ids of ``text`` with the tokenizer's own encoder."""
    def decode(self, ids: Sequence[int]) -> bytes:
        """The concatenated bytes of ``ids``."""

class Grammar:
    """A grammar before it meets a tokenizer; ``str(g)`` is its GBNF."""

    @staticmethod
    def from_json_schema(
        schema: Union[str, dict, bool, Any],
        *,
        any_whitespace: bool = False,
        indent: Optional[int] = None,
        separators: Optional[Tuple[str, str]] = None,
        strict_mode: bool = True,
        max_whitespace_cnt: Optional[int] = None,
        any_order: bool = False,
        one_of: str = "require_disjoint",
        lenient_formats: bool = False,
        unknown_formats: str = "annotation",
        unknown_keywords: str = "ignore",
        openapi_nullable: bool = False,
        intersections: bool = True,
        string_blocks: bool = True,
        max_branches: int = 256,
        max_nonterminals: int = 200_000,
        max_counted_items: int = 2048,
        max_regex_repeat: int = ...,
        max_depth: int = 512,
        max_json_depth: int = 2048,
        max_indent_depth: int = 32,
        max_unique_values: int = 16,
        max_unique_states: int = 4096,
        max_any_order_properties: int = 8,
        time_budget_s: float = 60.0,
    ) -> "Grammar":
        """JSON documents valid under ``schema`` (str, dict, or Pydantic model
        class). ``any_whitespace=True`` (default, as XGrammar) allows any
        whitespace and ignores ``indent`` and ``separators``; with
        ``any_whitespace=False``, ``separators=None`` means ``(", ", ": ")``
        on one line, and ``indent=n`` lays values out exactly as
        ``json.dumps(indent=n, separators=…)`` (``(",", ": ")`` by default),
        nested at most ``max_indent_depth`` levels. ``strict_mode`` closes objects that
        declare ``properties`` or ``patternProperties`` and say nothing of
        ``additionalProperties``; ``{"type": "object"}`` is any object.
        ``one_of="as_any_of"`` (default) compiles overlapping ``oneOf`` as
        ``anyOf``; ``"require_disjoint"`` refuses it. A schema that cannot
        be enforced raises ``SchemaError`` (``pointer``, ``kind``); a bound,
        ``LimitExceeded``."""
    @staticmethod
    def from_lark(
        lark_string: str,
        *,
        tokenizer_info: Optional["TokenizerInfo"] = None,
        named_grammars: Optional[Dict[str, Union["Grammar", str]]] = None,
    ) -> "Grammar": ...
    @staticmethod
    def from_ebnf(ebnf_string: str, *, root_rule_name: str = "root") -> "Grammar":
        """GBNF (llama.cpp's format) with ``/regex/`` terminals; ``GrammarError`` with ``position``."""
    @staticmethod
    def from_regex(regex_string: str, *, print_converted_ebnf: bool = False, annex_b: bool = False) -> "Grammar":
        """Strings fully matched by the regex (ECMAScript syntax, as XGrammar:
        ``a{,3}`` and ``[]`` are refused; ``annex_b=True`` reads them as
        ECMAScript's Annex B does, literal text and a class matching nothing)."""
    @staticmethod
    def from_structural_tag(*args: Any, **kwargs: Any) -> "Grammar":
        """A structural tag (``zapspec.structural_tag.StructuralTag``, its
        JSON text or a ``dict``; deprecated: ``(tags, triggers)``)."""
        ...
    @staticmethod
    def builtin_json_grammar() -> "Grammar":
        """A JSON object or array, whitespace inside but not around it."""
    def serialize_json(self) -> str: ...
    @staticmethod
    def deserialize_json(json_string: str) -> "Grammar": ...

class CompiledGrammar:
    """A grammar compiled for a tokenizer: immutable, shared by matchers on any thread."""

    @property
    def grammar(self) -> Grammar: ...
    @property
    def tokenizer_info(self) -> TokenizerInfo: ...
    @property
    def memory_size_bytes(self) -> int:
        """Estimated bytes held apart from the compiler's shared caches."""

class GrammarCompiler:
    """Compiles grammars for one tokenizer; one engine (token trie, mask
    caches) shared by everything it compiles; compiled grammars cached by
    source text and options. Compiling releases the GIL."""

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        *,
        max_threads: int = 8,
        cache_enabled: bool = True,
        cache_limit_bytes: int = -1,
        index_cache_bytes: Optional[int] = None,
    ) -> None: ...
    def compile_json_schema(self, schema: Union[str, dict, bool, Any], **kwargs: Any) -> CompiledGrammar:
        """``Grammar.from_json_schema(schema, **kwargs)``, compiled (cached)."""
    def compile_grammar(self, grammar: Union[Grammar, str], *, root_rule_name: str = "root") -> CompiledGrammar:
        """A ``Grammar`` or GBNF text, compiled."""
    def compile_regex(self, regex: str) -> CompiledGrammar: ...
    def compile_lark(
        self, lark_string: str, *, named_grammars: Optional[Dict[str, Union["Grammar", str]]] = None
    ) -> CompiledGrammar: ...
    def compile_structural_tag(self, *args: Any, **kwargs: Any) -> CompiledGrammar: ...
    def compile_builtin_json_grammar(self) -> CompiledGrammar: ...
    def clear_cache(self) -> None: ...
    def get_cache_size_bytes(self) -> int: ...
    @property
    def cache_limit_bytes(self) -> int: ...
    @property
    def tokenizer_info(self) -> TokenizerInfo: ...
    def serialize_json(self) -> str: ...
    @staticmethod
    def deserialize_json(json_str: str, tokenizer_info: TokenizerInfo) -> "CompiledGrammar":
        """Compiles the serialized grammar again for ``tokenizer_info``."""

class GrammarMatcher:
    """One sequence's parser state (XGrammar's semantics)."""

    def __init__(
        self,
        compiled_grammar: CompiledGrammar,
        *,
        override_stop_tokens: Optional[Union[int, List[int]]] = None,
        terminate_without_stop_token: bool = False,
        max_rollback_tokens: int = -1,
        default_temperature: Optional[float] = None,
    ) -> None:
        """``terminate_without_stop_token``: the sequence ends when the
        grammar completes. ``max_rollback_tokens`` is ignored (rollback is
        unbounded, as XGrammar)."""
    def traverse_draft_tree(
        self,
        retrieve_next_token: Any,
        retrieve_next_sibling: Any,
        draft_tokens: Any,
        token_bitmask: Any,
        time_threshold: float = -1.0,
        temperatures: Any = None,
    ) -> bool:
        """Fills the row of every draft tree node the grammar reaches (others
        all-zero); ``False`` when ``time_threshold`` seconds ran out."""
    @property
    def temperature(self) -> Optional[float]: ...
    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0, *, debug_print: bool = False) -> bool:
        """Writes the next token's mask into row ``index`` (int32 numpy array
        or CPU torch tensor, ``ceil(vocab_size/32)`` words per row). Returns
        whether some token is banned. ``MatcherTerminatedError`` after a stop
        token; ``BitmaskError`` for a bad array."""
    def apply_phi_bias_inplace(self, logits: np.ndarray, *, epsilon: Optional[float] = 1e-3) -> float:
        """Masks a float32 row of raw logits and raises each allowed token's by
        ``log Φ̂`` (OneStep-Cheap, the future-validity correction); returns the
        position's TV bound of the cut (0.0 when exact, ``epsilon=None``)."""
    def accept_token(self, token_id: int, *, debug_print: bool = False) -> bool:
        """Advance by one token; ``False`` (state unchanged) when refused.
        ``InvalidTokenError`` for an id outside the vocabulary."""
    def accept_string(self, input_str: Union[str, bytes], *, debug_print: bool = False) -> bool:
        """Advance by a string as one step."""
    def rollback(self, num_tokens: int = 1) -> None:
        """Undo tokens; ``RollbackError`` past the start or ``max_rollback_tokens``."""
    def is_terminated(self) -> bool: ...
    def _debug_print_internal_state(self) -> str:
        """Termination, the tokens that can be rolled back and the Earley chart, as text."""
    def is_completed(self) -> bool: ...
    def is_accepting(self) -> bool: ...
    def reset(self) -> None: ...
    def fork(self) -> "GrammarMatcher": ...
    def find_jump_forward_string(self) -> str:
        """The text every continuation starts with."""
    def compute_forced_tokens(self) -> List[int]:
        """The jump-forward string as tokens, minus the last (which could merge)."""
    def validate_tokens(self, token_ids: Sequence[int]) -> int:
        """How many tokens of a draft, from the start, the grammar accepts."""
    @property
    def num_tokens(self) -> int: ...
    @property
    def stop_token_ids(self) -> List[int]: ...
    @property
    def max_rollback_tokens(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...
    def _engine_mask_words(self) -> List[int]: ...
    def _time_fills(self, repeats: int) -> Tuple[List[int], List[int]]: ...

def batch_fill_next_token_bitmask(
    matchers: Sequence[GrammarMatcher],
    bitmask: Any,
    indices: Optional[Sequence[int]] = None,
    max_threads: Optional[int] = None,
) -> List[bool]:
    """Row ``indices[i]`` (default ``i``) ← ``matchers[i]``'s mask, with the GIL
    released; equal to a loop of ``fill_next_token_bitmask``. ``max_threads``:
    every row on a pool of that many threads; ``None``: rows on the calling
    thread for the first 100 µs (cached masks are cheaper to fill than to
    hand over), the rest on a pool of the machine's cores."""

def _apply_token_bitmask_f32(logits: np.ndarray, bitmask: np.ndarray, indices: Optional[List[int]] = None) -> None: ...
def _builtin_families_json() -> str: ...
def _builtin_check_family(family: str) -> None: ...
def _regex_to_gbnf(regex: str, annex_b: bool = False) -> str: ...
def _allow_empty_rule_ids(grammar: Grammar) -> List[int]: ...
def _number_range_regex(
    start: Optional[float] = None,
    end: Optional[float] = None,
    exclusive_start: bool = False,
    exclusive_end: bool = False,
    integer: bool = False,
) -> str: ...
def get_serialization_version() -> str:
    """The version written by every ``serialize_json``: ``"zapspec-v1"``."""
def _builtin_structural_tag_json(
    family: str,
    tools: List[Tuple[str, str, bool]],
    choice: str,
    named: Optional[str],
    reasoning: str,
    parallel_tool_calls: bool,
    any_order: bool,
    exclude_special_tokens: bool,
    max_whitespace_cnt: Optional[int],
) -> str: ...
