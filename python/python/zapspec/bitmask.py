"""Token bitmasks in XGrammar's and llguidance's layout.

A bitmask is ``int32`` of shape ``(batch, ceil(vocab_size / 32))``; bit
``i % 32`` of word ``i // 32`` of a row is set when token ``i`` is allowed.
"""

import math
import sys
import warnings
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from . import _zapspec
from .errors import BitmaskError

__all__ = [
    "bitmask_dtype",
    "get_bitmask_shape",
    "allocate_token_bitmask",
    "reset_token_bitmask",
    "apply_token_bitmask_inplace",
]

#: The dtype of bitmasks (numpy's; ``torch.int32`` for tensors).
bitmask_dtype = np.int32


def get_bitmask_shape(batch_size: int, vocab_size: int) -> Tuple[int, int]:
    """``(batch_size, ceil(vocab_size / 32))``."""
    return (batch_size, math.ceil(vocab_size / 32))


def _use_torch(framework: Optional[str]) -> bool:
    if framework is None:
        # torch only when the caller already uses it: importing it costs
        # seconds, and numpy is the only dependency
        return "torch" in sys.modules
    if framework not in ("numpy", "torch"):
        raise ValueError(f"framework must be 'numpy', 'torch' or None, not {framework!r}")
    return framework == "torch"


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, framework: Optional[str] = None) -> Any:
    """A bitmask of ``batch_size`` rows with every token allowed (all bits
    set), on the CPU. ``framework``: ``"numpy"``, ``"torch"``, or ``None``
    for a ``torch.Tensor`` when torch is already imported (as XGrammar
    returns) and a numpy array otherwise."""
    shape = get_bitmask_shape(batch_size, vocab_size)
    if _use_torch(framework):
        import torch

        return torch.full(shape, -1, dtype=torch.int32)
    return np.full(shape, -1, dtype=np.int32)


def reset_token_bitmask(bitmask: Any) -> None:
    """Sets every bit (every token allowed)."""
    bitmask.fill(-1) if isinstance(bitmask, np.ndarray) else bitmask.fill_(-1)


def _rows(indices: Optional[Sequence[int]], n: int) -> List[int]:
    return list(range(n)) if indices is None else [int(i) for i in indices]


def apply_token_bitmask_inplace(
    logits: Any,
    bitmask: Any,
    *,
    vocab_size: Optional[int] = None,
    indices: Optional[Sequence[int]] = None,
) -> None:
    """Sets ``logits[r, j] = -inf`` wherever bit ``j`` of ``bitmask[r]`` is 0.

    ``logits``: ``(batch, V)`` or ``(V,)``, a numpy array or a torch tensor
    (any device; a CPU bitmask is moved to the logits' device). Only
    ``j < vocab_size`` is touched (default ``min(V, 32 * bitmask columns)``:
    padded logits past the bitmask stay as they are). ``indices``: the rows
    to mask (default all; then the batch sizes must match). A bitmask
    narrower than the logits without ``vocab_size`` leaves the logits past
    it unmasked, with a ``UserWarning`` (as XGrammar: padded ids there could
    be sampled).
    """
    width = getattr(logits, "shape", (0,))[-1]
    covered = 32 * getattr(bitmask, "shape", (0,))[-1]
    if vocab_size is None and width > covered:
        warnings.warn(
            f"the bitmask covers {covered} tokens but the logits have {width}: logits past "
            f"{covered} are left unmasked (pass vocab_size, or allocate the bitmask for the model's vocabulary)",
            UserWarning,
            stacklevel=2,
        )
    if isinstance(logits, np.ndarray):
        _apply_numpy(logits, bitmask, vocab_size, indices)
    elif hasattr(logits, "masked_fill_"):
        _apply_torch(logits, bitmask, vocab_size, indices)
    else:
        raise BitmaskError(
            f"logits must be a numpy array or a torch tensor, not {type(logits).__name__}", kind="bitmask"
        )


def _apply_numpy(logits: np.ndarray, bitmask: Any, vocab_size: Optional[int], indices: Optional[Sequence[int]]) -> None:
    if not isinstance(bitmask, np.ndarray):
        bitmask = bitmask.cpu().numpy() if hasattr(bitmask, "cpu") else np.asarray(bitmask)
    if (
        logits.dtype == np.float32
        and logits.ndim in (1, 2)
        and logits.flags.writeable
        and bitmask.dtype == np.int32
        and bitmask.flags.c_contiguous
        and (vocab_size is None or vocab_size >= min(logits.shape[-1], 32 * bitmask.shape[-1]))
    ):
        _zapspec._apply_token_bitmask_f32(logits, bitmask, None if indices is None else list(indices))
        return
    if bitmask.dtype != np.int32:
        raise BitmaskError(f"the bitmask must have dtype int32, not {bitmask.dtype}", kind="bitmask")
    l2 = logits.reshape(1, -1) if logits.ndim == 1 else logits
    b2 = bitmask.reshape(1, -1) if bitmask.ndim == 1 else bitmask
    n = min(l2.shape[1], 32 * b2.shape[1]) if vocab_size is None else vocab_size
    rows = _rows(indices, l2.shape[0])
    if indices is None and l2.shape[0] != b2.shape[0]:
        raise BitmaskError(f"{l2.shape[0]} logit rows but {b2.shape[0]} bitmask rows", kind="bitmask")
    for r in rows:
        bits = np.unpackbits(np.ascontiguousarray(b2[r]).view(np.uint8), bitorder="little")[:n].astype(bool)
        l2[r, :n][~bits] = -np.inf


def _apply_torch(logits: Any, bitmask: Any, vocab_size: Optional[int], indices: Optional[Sequence[int]]) -> None:
    import torch

    if isinstance(bitmask, np.ndarray):
        bitmask = torch.from_numpy(bitmask)
    if bitmask.dtype != torch.int32:
        raise BitmaskError(f"the bitmask must have dtype int32, not {bitmask.dtype}", kind="bitmask")
    bitmask = bitmask.to(logits.device, non_blocking=True)
    l2 = logits.view(1, -1) if logits.dim() == 1 else logits
    b2 = bitmask.view(1, -1) if bitmask.dim() == 1 else bitmask
    n = min(l2.shape[1], 32 * b2.shape[1]) if vocab_size is None else vocab_size
    if indices is None and l2.shape[0] != b2.shape[0]:
        raise BitmaskError(f"{l2.shape[0]} logit rows but {b2.shape[0]} bitmask rows", kind="bitmask")
    rows = torch.tensor(_rows(indices, l2.shape[0]), device=logits.device, dtype=torch.long)
    shifts = torch.arange(32, device=logits.device, dtype=torch.int32)
    bits = ((b2.index_select(0, rows).unsqueeze(-1) >> shifts) & 1).bool().flatten(1)[:, :n]
    sub = l2.index_select(0, rows)
    sub[:, :n].masked_fill_(~bits, float("-inf"))
    l2.index_copy_(0, rows, sub)
