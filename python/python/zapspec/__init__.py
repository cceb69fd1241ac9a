"""zapspec: structured decoding from Python.

zapspec's Earley engine (ZapFormat: dependency-pruned Earley parsing with
token-mask caches) behind XGrammar's interface, so that a serving engine
swaps backends by changing an import::

    import zapspec as xgr   # instead of: import xgrammar as xgr

    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=model_vocab_size)
    compiler = xgr.GrammarCompiler(info)
    compiled = compiler.compile_json_schema(schema)   # any_whitespace=True, as XGrammar
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    xgr.apply_token_bitmask_inplace(logits, bitmask)
    matcher.accept_token(next_token)

What is llguidance's rather than XGrammar's: ``GrammarMatcher.validate_tokens``
(how many tokens of a draft the grammar accepts) and
``GrammarMatcher.compute_forced_tokens``. Integrations:
``zapspec.contrib.hf`` (transformers' ``generate``) and
``zapspec.contrib.llama_cpp`` (llama-cpp-python).
"""

from ._zapspec import (
    CompiledGrammar,
    Grammar,
    GrammarCompiler,
    GrammarMatcher,
    TokenizerInfo,
    __version__,
    batch_fill_next_token_bitmask,
    get_serialization_version,
)
from .bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    bitmask_dtype,
    get_bitmask_shape,
    reset_token_bitmask,
)
from . import exception, testing
from ._vocab_type import VocabType
from .errors import (
    DeserializeFormatError,
    DeserializeVersionError,
    InvalidJSONError,
    InvalidStructuralTagError,
    BitmaskError,
    GrammarError,
    InternalError,
    InvalidTokenError,
    LimitExceeded,
    MatcherTerminatedError,
    RollbackError,
    SchemaError,
    TokenizerError,
    ZapspecError,
)
from .matcher import BatchGrammarMatcher
from . import structural_tag
from .structural_tag import StructuralTag, StructuralTagItem


__all__ = [
    "TokenizerInfo",
    "VocabType",
    "Grammar",
    "GrammarCompiler",
    "CompiledGrammar",
    "GrammarMatcher",
    "BatchGrammarMatcher",
    "batch_fill_next_token_bitmask",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "reset_token_bitmask",
    "get_bitmask_shape",
    "bitmask_dtype",
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
    "get_serialization_version",
    "InvalidStructuralTagError",
    "StructuralTag",
    "StructuralTagItem",
    "structural_tag",
    "exception",
    "testing",
    "__version__",
]
