"""A transformers logits processor that constrains ``generate`` to a zapspec
grammar.

::

    from transformers import AutoModelForCausalLM, AutoTokenizer
    import zapspec
    from zapspec.contrib.hf import LogitsProcessor

    tok = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name)
    info = zapspec.TokenizerInfo.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiled = zapspec.GrammarCompiler(info).compile_json_schema(schema)
    out = model.generate(**inputs, logits_processor=[LogitsProcessor(compiled)])

One processor per ``generate`` call. Each row of the batch gets its own
matcher on the first call (the prompt); later calls accept each row's new
token, fill the rows' bitmasks in parallel
(``batch_fill_next_token_bitmask``, GIL released) and mask the scores in
place, on the scores' device. A row that has ended (stop token accepted)
is left alone.
"""

from typing import Any, List, Optional, Union

from .. import (
    CompiledGrammar,
    GrammarMatcher,
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    batch_fill_next_token_bitmask,
)

__all__ = ["LogitsProcessor"]


def torch_float32() -> Any:
    import torch

    return torch.float32


def torch_from_numpy(a: Any) -> Any:
    import torch

    return torch.from_numpy(a)


class LogitsProcessor:
    """``processor(input_ids, scores) -> scores`` for transformers'
    ``generate(logits_processor=[...])``."""

    def __init__(
        self,
        compiled_grammar: CompiledGrammar,
        *,
        override_stop_tokens: Optional[Union[int, List[int]]] = None,
        max_threads: Optional[int] = None,
        phi_epsilon: Optional[float] = None,
    ) -> None:
        """``phi_epsilon`` (default ``None``: off): the future-validity
        correction, as in ``zapspec.contrib.llama_cpp.LogitsProcessor``
        (each live row masked and raised by ``log Φ̂`` on the CPU, one
        matcher at a time)."""
        self.phi_epsilon = phi_epsilon
        self.compiled_grammar = compiled_grammar
        self.override_stop_tokens = override_stop_tokens
        self.max_threads = max_threads
        self.vocab_size = compiled_grammar.tokenizer_info.vocab_size
        self.matchers: List[GrammarMatcher] = []
        self._seen: Optional[int] = None
        self._bitmask: Any = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        batch, n = input_ids.shape
        if self._seen is None:
            self.matchers = [
                GrammarMatcher(self.compiled_grammar, override_stop_tokens=self.override_stop_tokens)
                for _ in range(batch)
            ]
            self._bitmask = allocate_token_bitmask(batch, self.vocab_size, framework="torch")
        else:
            new = input_ids[:, self._seen : n].tolist()
            for m, toks in zip(self.matchers, new):
                for t in toks:
                    if not m.is_terminated() and not m.accept_token(t):
                        raise RuntimeError(f"token {t} was sampled against the grammar's mask")
        self._seen = n
        live = [i for i, m in enumerate(self.matchers) if not m.is_terminated()]
        if not live:
            return scores
        if self.phi_epsilon is not None:
            eps = self.phi_epsilon if self.phi_epsilon > 0 else None
            for i in live:
                row = scores[i].detach().to("cpu", dtype=torch_float32()).contiguous().numpy().copy()
                self.matchers[i].apply_phi_bias_inplace(row, epsilon=eps)
                scores[i] = torch_from_numpy(row).to(scores.device, dtype=scores.dtype)
            return scores
        batch_fill_next_token_bitmask(
            [self.matchers[i] for i in live], self._bitmask, indices=live, max_threads=self.max_threads
        )
        apply_token_bitmask_inplace(scores, self._bitmask, indices=live)
        return scores
