"""`GrammarMatcher.apply_phi_bias_inplace`: the OneStep-Cheap correction of
one row of logits, checked against a brute force written with the public
API (fork, accept, fill a bitmask per candidate)."""

import math

import numpy as np
import pytest

import zapspec
from zapspec.testing import _get_masked_tokens_from_bitmask

VOCAB = ["a", "b", "ab", "{", "}", '"', "x", "xy", "</s>"]
STOP = 8


def matcher(ebnf):
    tok = zapspec.TokenizerInfo(VOCAB, stop_token_ids=[STOP])
    compiled = zapspec.GrammarCompiler(tok).compile_grammar(ebnf)
    return zapspec.GrammarMatcher(compiled), tok


def allowed(m, tok):
    bm = zapspec.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(bm)
    return set(_get_masked_tokens_from_bitmask(bm, tok.vocab_size)) ^ set(range(tok.vocab_size))


def brute_force(m, tok, logits):
    """log p(y) + log Φ̂(y) for each allowed y, Φ̂(y) the softmax mass of
    the tokens allowed after y (stop tokens: Φ = 1)."""
    p = np.exp(logits - logits.max())
    p = p / p.sum()
    out = np.full(len(logits), -np.inf)
    for y in allowed(m, tok):
        if y == STOP:
            out[y] = math.log(p[y])
            continue
        f = m.fork()
        assert f.accept_token(y)
        nxt = allowed(f, tok) if not f.is_terminated() else set()
        mass = sum(p[t] for t in nxt)
        out[y] = math.log(p[y]) + (math.log(mass) if mass > 0 else -np.inf)
    return out


GRAMMARS = [
    'root ::= "a" "b" | "ab" "x" | "x" "y"+',
    'root ::= ("a" | "b")* "x"',
    'root ::= "{" ("\\"" [ab]* "\\"")? "}"',
]


@pytest.mark.parametrize("ebnf", GRAMMARS)
@pytest.mark.parametrize("seed", range(5))
def test_exact_correction_matches_brute_force(ebnf, seed):
    rng = np.random.default_rng(seed)
    m, tok = matcher(ebnf)
    for _ in range(4):
        logits = rng.normal(size=tok.vocab_size).astype(np.float32) * 2
        want = brute_force(m, tok, logits.astype(np.float64))
        got = logits.copy()
        bound = m.apply_phi_bias_inplace(got, epsilon=None)
        assert bound == 0.0
        finite = np.isfinite(want)
        assert (np.isfinite(got) == finite).all(), (got, want)
        # equal up to one constant per row (the softmax cancels it)
        shift = (got[finite] - want[finite]).mean()
        np.testing.assert_allclose(got[finite] - shift, want[finite], atol=1e-4)
        # walk on along the corrected argmax
        y = int(np.argmax(got))
        if not m.accept_token(y) or m.is_terminated():
            break


def test_bounded_cut_reports_its_bound_and_errors_are_the_packages():
    m, tok = matcher('root ::= [ab]* "x"')
    logits = np.zeros(tok.vocab_size, dtype=np.float32)
    assert 0.0 <= m.apply_phi_bias_inplace(logits.copy(), epsilon=0.1) <= 0.1
    with pytest.raises(zapspec.ZapspecError):
        m.apply_phi_bias_inplace(np.zeros(3, dtype=np.float32))
    with pytest.raises(zapspec.ZapspecError):
        m.apply_phi_bias_inplace(logits.copy(), epsilon=2.0)
    # the matcher is usable after an error
    assert m.accept_token(0)


def test_a_matcher_keeps_its_estimator_but_each_call_is_its_own():
    # the estimator and buffers a matcher keeps between calls change
    # nothing: each row (and its TV bound) equals a fresh fork's, whatever
    # epsilon the calls before it used
    m, tok = matcher('root ::= [ab]* "x"')
    rng = np.random.default_rng(7)
    for eps in [0.1, None, 0.1, 1e-3, None, 0.5]:
        logits = (rng.normal(size=tok.vocab_size) * 2).astype(np.float32)
        want, got = logits.copy(), logits.copy()
        bw = m.fork().apply_phi_bias_inplace(want, epsilon=eps)
        bg = m.apply_phi_bias_inplace(got, epsilon=eps)
        np.testing.assert_array_equal(got, want)
        assert bg == bw
        assert m.accept_token(int(np.argmax(np.where(np.isfinite(got), got, -np.inf))))


def test_processors_apply_the_correction():
    from zapspec.contrib.llama_cpp import LogitsProcessor

    tok = zapspec.TokenizerInfo(VOCAB, stop_token_ids=[STOP])
    compiled = zapspec.GrammarCompiler(tok).compile_grammar(GRAMMARS[0])
    rng = np.random.default_rng(0)
    logits = rng.normal(size=tok.vocab_size).astype(np.float32)
    plain, phi = LogitsProcessor(compiled), LogitsProcessor(compiled, phi_epsilon=0.0)
    a, b = plain([1, 2], logits.copy()), phi([1, 2], logits.copy())
    # Φ̂ only removes: a token the mask allows but after which no token can
    # follow (here "x": no token continues `"y"+`) gets Φ̂ = 0
    assert (np.isfinite(b) <= np.isfinite(a)).all() and np.isfinite(b).sum() < np.isfinite(a).sum()
    m, _ = matcher(GRAMMARS[0])
    want = brute_force(m, tok, logits.astype(np.float64))
    fin = np.isfinite(want)
    np.testing.assert_allclose(b[fin] - (b[fin] - want[fin]).mean(), want[fin], atol=1e-4)
    assert phi.phi_tv_bounds == [0.0]
    torch = pytest.importorskip("torch")
    from zapspec.contrib.hf import LogitsProcessor as HfProcessor

    scores = torch.tensor(np.stack([logits, logits]))
    out = HfProcessor(compiled, phi_epsilon=0.0)(torch.zeros((2, 3), dtype=torch.long), scores.clone())
    np.testing.assert_allclose(out[0].numpy()[fin], b[fin], rtol=1e-5, atol=1e-4)
