"""A llama-cpp-python logits processor that constrains generation to a
zapspec grammar.

::

    from llama_cpp import Llama, LogitsProcessorList
    import zapspec
    from zapspec.contrib.llama_cpp import LogitsProcessor

    llm = Llama(model_path="model.gguf")
    info = zapspec.TokenizerInfo.from_gguf("model.gguf", vocab_size=llm.n_vocab())
    compiled = zapspec.GrammarCompiler(info).compile_json_schema(schema)
    out = llm.create_completion(prompt, logits_processor=LogitsProcessorList([LogitsProcessor(compiled)]))

One processor per generation (it follows one sequence). llama-cpp-python
calls it with every token so far and the next token's logits (float32,
``(n_vocab,)``); it accepts the tokens generated since its last call, fills
the bitmask and masks the logits in place. Once the grammar accepts, only
the stop tokens and the grammar's continuations remain; after a stop token
the logits pass through unchanged.

``phi_epsilon`` (default ``None``: off) switches on the future-validity
correction: the logits are masked and each allowed token's raised by
``log Φ̂`` (``GrammarMatcher.apply_phi_bias_inplace``, OneStep-Cheap with
the TV bound ``phi_epsilon``; ``0.0`` scores every candidate). A bias
correction towards the model conditioned on validity, as good as its
estimator; the bounds reported per position are in ``phi_tv_bounds``.
"""

from typing import Any, List, Optional, Union

import numpy as np

from .. import CompiledGrammar, GrammarMatcher, allocate_token_bitmask, apply_token_bitmask_inplace

__all__ = ["LogitsProcessor"]


class LogitsProcessor:
    """``processor(input_ids, scores) -> scores`` for llama-cpp-python's
    ``logits_processor``."""

    def __init__(
        self,
        compiled_grammar: CompiledGrammar,
        *,
        override_stop_tokens: Optional[Union[int, List[int]]] = None,
        phi_epsilon: Optional[float] = None,
    ) -> None:
        self.matcher = GrammarMatcher(compiled_grammar, override_stop_tokens=override_stop_tokens)
        self.phi_epsilon = phi_epsilon
        self.phi_tv_bounds: List[float] = []
        self.vocab_size = compiled_grammar.tokenizer_info.vocab_size
        self._bitmask = allocate_token_bitmask(1, self.vocab_size, framework="numpy")
        self._row = self._bitmask[0]
        self._seen: Optional[int] = None

    def __call__(self, input_ids: Any, scores: np.ndarray) -> np.ndarray:
        n = len(input_ids)
        if self._seen is None:
            self._seen = n  # the prompt
        else:
            for t in input_ids[self._seen : n]:
                if not self.matcher.accept_token(int(t)):
                    raise RuntimeError(f"token {int(t)} was sampled against the grammar's mask")
            self._seen = n
        if self.matcher.is_terminated():
            return scores
        if self.phi_epsilon is not None:
            row = np.ascontiguousarray(scores, dtype=np.float32)
            eps = self.phi_epsilon if self.phi_epsilon > 0 else None
            self.phi_tv_bounds.append(self.matcher.apply_phi_bias_inplace(row, epsilon=eps))
            if row is not scores:
                scores[...] = row
            return scores
        self.matcher.fill_next_token_bitmask(self._bitmask)
        apply_token_bitmask_inplace(scores, self._row)
        return scores

    def reset(self) -> None:
        """Ready for a new generation (same grammar)."""
        self.matcher.reset()
        self._seen = None
        self.phi_tv_bounds = []
