"""Tool-calling formats of model families as structural tags (XGrammar's
``xgrammar.builtin_structural_tag``): ``get_model_structural_tag(model,
tools, tool_choice, reasoning, ...)`` returns the ``StructuralTag`` that
constrains a model's output to its own tool-call syntax.

Each family is a few lines of data — its call delimiters, the trigger that
starts a call in free text, an optional section that wraps the calls, its
reasoning delimiters and the strings free text must not contain — in the
table of the Rust crate ``zapspec-structtag`` (``families.json``, read
here as ``FAMILIES``), turned into a structural tag by one builder in Rust
(``zapspec_structtag::tool_calling_format``, which Rust users call
directly). A family of one's own is a function registered with
``register_model_structural_tag``. The delimiters are the ones the
families' chat templates write (and XGrammar's built-in formats use).

What ``tool_choice`` becomes (OpenAI's options):

- ``"auto"``: free text in which calls may appear after their trigger
  (``triggered_tags``); no tools: free text only.
- ``"required"``: at least one call, no text before it.
- a named function (or builtin tool): exactly that call.
- ``"none"``: free text only.
- ``parallel_tool_calls=False``: at most one call (``stop_after_first``).

``reasoning``: ``"enabled"`` (the prompt ends inside an open reasoning
block; the output continues it and closes it), ``"auto"`` (an optional
complete block), ``"disabled"`` (none). Built: Llama 3.x, Qwen 3 (Hermes
``<tool_call>``), EXAONE, DeepSeek-R1 / V3.1 / V3.2 / V4 / V4.1, Kimi-K2,
gpt-oss Harmony (builtin tools too: the other families leave builtin tools
out, as XGrammar's do), and the XML-parameter families Qwen3-Coder /
Qwen3.5, MiMo, MiniMax, GLM-4.7, Kimi-K3 and Cohere. Not built yet (asking
for one raises ``ValueError`` saying what it needs): MiniMax-M3, and Gemma 4
(which XGrammar 0.2.8 does not register either).
"""

import json
from typing import Any, Callable, Dict, List, Literal, Optional, Tuple, Union

from pydantic import TypeAdapter

from . import _zapspec
from .openai_tool_call_schema import (
    AllowedToolChoiceParam,
    BuiltinToolChoiceParam,
    BuiltinToolParam,
    FunctionToolParam,
    NamedToolChoiceParam,
)
from .structural_tag import StructuralTag

_TABLE = json.loads(_zapspec._builtin_families_json())

#: The built families: name → their row (``call``, ``trigger``,
#: ``section``, ``think``, ``excludes``, ...), as in ``families.json``.
FAMILIES: Dict[str, Dict[str, Any]] = _TABLE["families"]

#: Families XGrammar ships that need what zapspec does not build: name →
#: what they need.
NOT_BUILT: Dict[str, str] = _TABLE["not_built"]

_registry: Dict[str, Callable[..., StructuralTag]] = {}


def register_model_structural_tag(name: str):
    """Registers a function building a family's structural tag under
    ``name`` (consulted before the built-in table); it is called as
    ``f(tools, builtin_tools, tool_choice, reasoning, **options)`` with the
    tools normalized and ``tool_choice`` one of ``"auto"``, ``"required"``,
    ``"forced"``."""

    def decorator(func):
        _registry[name] = func
        return func

    return decorator


SimplifiedToolChoice = Literal["auto", "required", "forced"]

# a dict without "type" but with "function" is a function tool (pydantic's
# smart union: the function model's `type` has a default)
_TOOL = TypeAdapter(Union[FunctionToolParam, BuiltinToolParam])


def normalize_tool_choice(
    tools: Optional[List[Union[FunctionToolParam, BuiltinToolParam, dict]]] = None,
    tool_choice: Union[str, dict, None] = "auto",
) -> Tuple[List[FunctionToolParam], List[BuiltinToolParam], SimplifiedToolChoice]:
    """The tools a choice leaves, and the choice as ``auto`` / ``required``
    / ``forced``: ``"none"`` leaves no tool; a named function or builtin
    tool leaves exactly that one (``forced``); ``allowed_tools`` filters
    then applies its mode. ``ValueError`` for a choice the tools cannot
    satisfy."""
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise ValueError("The 'tools' argument must be a list.")
    parsed = [_TOOL.validate_python(t) for t in tools]
    functions = [t for t in parsed if isinstance(t, FunctionToolParam)]
    builtins = [t for t in parsed if isinstance(t, BuiltinToolParam)]
    choice: Any = "auto" if tool_choice is None else tool_choice
    if isinstance(choice, dict):
        if choice.get("type") == "allowed_tools":
            choice = AllowedToolChoiceParam.model_validate(choice)
        elif choice.get("type") == "function":
            choice = NamedToolChoiceParam.model_validate(choice)
        else:
            choice = BuiltinToolChoiceParam.model_validate(choice)
    if isinstance(choice, AllowedToolChoiceParam):
        names = {r.function.name for r in choice.allowed_tools.tools if r.type == "function" and r.function}
        kinds = {r.type for r in choice.allowed_tools.tools if r.type != "function"}
        missing = names - {t.function.name for t in functions}
        if missing:
            raise ValueError(f"Allowed function tools are not found in the tools list: {missing}.")
        functions = [t for t in functions if t.function.name in names]
        builtins = [t for t in builtins if t.type in kinds]
        missing_kinds = kinds - {t.type for t in builtins}
        if missing_kinds:
            raise ValueError(f"Allowed builtin tools are not found in the tools list: {missing_kinds}.")
        simplified: SimplifiedToolChoice = choice.allowed_tools.mode
    elif isinstance(choice, NamedToolChoiceParam):
        functions = [t for t in functions if t.function.name == choice.function.name]
        if not functions:
            raise ValueError(
                f"The tool with name '{choice.function.name}' is not found in the tools list."
            )
        builtins, simplified = [], "forced"
    elif isinstance(choice, BuiltinToolChoiceParam):
        builtins = [t for t in builtins if t.type == choice.type]
        if len(builtins) != 1:
            raise ValueError(f"The builtin tool choice must match exactly one tool of type {choice.type!r}.")
        functions, simplified = [], "forced"
    elif choice == "none":
        functions, builtins, simplified = [], [], "auto"
    elif choice in ("auto", "required"):
        simplified = choice
    else:
        raise ValueError(f"Unknown tool_choice: {choice!r}.")
    if simplified == "required" and not (functions or builtins):
        raise ValueError(
            "The 'tools' list is empty, which is not allowed when 'tool_choice' is 'required'."
        )
    if simplified == "forced" and len(functions) + len(builtins) != 1:
        raise ValueError("Forced tool choice must resolve to exactly one tool.")
    return functions, builtins, simplified


def _parameters(tool: Union[FunctionToolParam, BuiltinToolParam]) -> Union[bool, Dict[str, Any]]:
    """A tool's arguments' schema; ``True`` (any JSON) when it has none or
    is not strict."""
    if isinstance(tool, FunctionToolParam):
        f = tool.function
        if f.strict is False or f.parameters is None:
            return True
        return f.parameters
    return True if tool.parameters is None else tool.parameters


def _name(tool: Union[FunctionToolParam, BuiltinToolParam]) -> str:
    return tool.function.name if isinstance(tool, FunctionToolParam) else (tool.name or tool.type)


def get_model_structural_tag(
    model: str,
    tools: Optional[List[Union[FunctionToolParam, BuiltinToolParam, dict]]] = None,
    tool_choice: Union[str, dict, None] = "auto",
    reasoning: Union[bool, Literal["enabled", "disabled", "auto"]] = "enabled",
    force_reasoning: bool = False,
    any_order: bool = False,
    exclude_special_tokens: bool = True,
    max_whitespace_cnt: Optional[int] = None,
    parallel_tool_calls: bool = True,
) -> StructuralTag:
    """The structural tag of ``model``'s tool-call format (a key of
    ``FAMILIES``) for these tools and this choice (module docs). Tools are
    Chat Completions function tools (``{"type": "function", "function":
    {"name", "parameters"}}``) or builtin tools (``{"type", "name",
    "parameters"}``). ``any_order`` and ``max_whitespace_cnt`` apply to
    every tool's arguments; ``exclude_special_tokens=False`` lets free text
    contain the family's special strings. ``force_reasoning`` is accepted
    and ignored (XGrammar deprecated it). ``ValueError`` for an unknown
    family, one not built, or a choice the tools cannot satisfy."""
    if model not in _registry:
        _zapspec._builtin_check_family(model)  # before the tools are read
    functions, builtins, choice = normalize_tool_choice(tools, tool_choice)
    if isinstance(reasoning, bool):
        reasoning = "enabled" if reasoning else "disabled"
    if reasoning not in ("enabled", "disabled", "auto"):
        raise ValueError(
            "The 'reasoning' argument must be a bool or one of: 'enabled', 'disabled', 'auto'."
        )
    if not isinstance(parallel_tool_calls, bool):
        raise ValueError("The 'parallel_tool_calls' argument must be a bool.")
    options = dict(
        any_order=any_order,
        exclude_special_tokens=exclude_special_tokens,
        max_whitespace_cnt=max_whitespace_cnt,
        parallel_tool_calls=parallel_tool_calls,
    )
    if model in _registry:
        return _registry[model](functions, builtins, choice, reasoning, **options)
    all_tools = [*functions, *builtins]
    pairs = [(_name(t), json.dumps(_parameters(t)), isinstance(t, BuiltinToolParam)) for t in all_tools]
    named = _name(all_tools[0]) if choice == "forced" else None
    text = _zapspec._builtin_structural_tag_json(
        model,
        pairs,
        "named" if choice == "forced" else choice,
        named,
        reasoning,
        parallel_tool_calls,
        any_order,
        exclude_special_tokens,
        max_whitespace_cnt,
    )
    return StructuralTag.model_validate_json(text)


def _family_function(model: str):
    def build(
        tools=None,
        builtin_tools=None,
        tool_choice="auto",
        reasoning="enabled",
        any_order=False,
        exclude_special_tokens=True,
        max_whitespace_cnt=None,
        parallel_tool_calls=True,
        **_: Any,
    ) -> StructuralTag:
        choice: Any = tool_choice
        all_tools = list(tools or []) + list(builtin_tools or [])
        if tool_choice == "forced":
            if not all_tools:
                raise ValueError("Forced tool choice must resolve to exactly one tool.")
            t = all_tools[0]
            all_tools = [t]
            choice = (
                {"type": "function", "function": {"name": t.function.name}}
                if isinstance(t, FunctionToolParam)
                else {"type": t.type}
            )
        return get_model_structural_tag(
            model,
            all_tools,
            choice,
            reasoning,
            any_order=any_order,
            exclude_special_tokens=exclude_special_tokens,
            max_whitespace_cnt=max_whitespace_cnt,
            parallel_tool_calls=parallel_tool_calls,
        )

    build.__name__ = f"get_{model}_structural_tag"
    build.__doc__ = f"The {model!r} family's structural tag (``get_model_structural_tag``)."
    return build


get_llama_structural_tag = _family_function("llama")
get_qwen_3_structural_tag = _family_function("qwen_3")
get_exaone_structural_tag = _family_function("exaone")
get_deepseek_v3_1_structural_tag = _family_function("deepseek_v3_1")
get_kimi_structural_tag = _family_function("kimi")
get_qwen_3_5_structural_tag = _family_function("qwen_3_5")
get_qwen_3_coder_structural_tag = _family_function("qwen_3_coder")
get_mimo_structural_tag = _family_function("mimo")
get_minimax_structural_tag = _family_function("minimax")
# not built here: importable, and calling it raises ValueError naming what
# the family needs
get_minimax_m3_structural_tag = _family_function("minimax_m3")
get_glm_4_7_structural_tag = _family_function("glm_4_7")
get_deepseek_r1_structural_tag = _family_function("deepseek_r1")
get_deepseek_v3_2_structural_tag = _family_function("deepseek_v3_2")
get_deepseek_v4_structural_tag = _family_function("deepseek_v4")
get_deepseek_v4_1_structural_tag = _family_function("deepseek_v4_1")
get_kimi_k3_structural_tag = _family_function("kimi_k3")
get_cohere_structural_tag = _family_function("cohere")
get_harmony_structural_tag = _family_function("harmony")

__all__ = [
    "FAMILIES",
    "NOT_BUILT",
    "get_model_structural_tag",
    "normalize_tool_choice",
    "register_model_structural_tag",
    "get_llama_structural_tag",
    "get_qwen_3_structural_tag",
    "get_exaone_structural_tag",
    "get_deepseek_v3_1_structural_tag",
    "get_kimi_structural_tag",
]
