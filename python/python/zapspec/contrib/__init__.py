"""Integrations of zapspec with inference engines, one small module each:
``zapspec.contrib.hf`` (transformers' ``generate``),
``zapspec.contrib.llama_cpp`` (llama-cpp-python), ``zapspec.contrib.vllm``
and ``zapspec.contrib.sglang`` (serving engines' grammar backends). No
engine is imported until its module is."""


def refusal_message(what: str, err: BaseException) -> str:
    """``zapspec refused the {what} at {place}: {reason}``, the place being
    the error's JSON pointer or (line, column) when it has one: what the
    serving backends put in the error their engine shows the client."""
    pointer = getattr(err, "pointer", None)
    position = getattr(err, "position", None)
    if pointer is not None:
        where = f" at {pointer or '/'}"
    elif position is not None:
        where = f" at line {position[0]}, column {position[1]}"
    else:
        where = ""
    return f"zapspec refused the {what}{where}: {getattr(err, 'message', None) or err}"
