"""OpenAI-style tool definitions and tool choices (Chat Completions'
shapes), as pydantic models at XGrammar's names
(``xgrammar.openai_tool_call_schema``): what
``zapspec.builtin_structural_tag.get_model_structural_tag`` reads."""

from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel


class FunctionDefinition(BaseModel):
    """A function the model may call: its name and its parameters' JSON
    Schema (``None``, or ``strict=False``: any JSON arguments)."""

    name: str
    description: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None
    strict: Optional[bool] = None


class FunctionToolParam(BaseModel):
    """``{"type": "function", "function": {...}}``."""

    type: Literal["function"] = "function"
    function: FunctionDefinition


class BuiltinToolParam(BaseModel):
    """A provider's builtin tool: its ``type``, the ``name`` the model writes
    (``type`` when absent) and its arguments' schema."""

    type: str
    name: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None


ToolParam = Union[FunctionToolParam, BuiltinToolParam]


class NamedToolChoiceFunction(BaseModel):
    name: str


class NamedToolChoiceParam(BaseModel):
    """Force one function: ``{"type": "function", "function": {"name": ...}}``."""

    type: Literal["function"] = "function"
    function: NamedToolChoiceFunction


class BuiltinToolChoiceParam(BaseModel):
    """Force one builtin tool, by ``type``."""

    type: str
    name: Optional[str] = None


class AllowedToolRef(BaseModel):
    type: str
    function: Optional[NamedToolChoiceFunction] = None
    name: Optional[str] = None


class AllowedToolsParam(BaseModel):
    mode: Literal["auto", "required"]
    tools: List[AllowedToolRef]


class AllowedToolChoiceParam(BaseModel):
    """Limit the tools, then apply ``mode``."""

    type: Literal["allowed_tools"] = "allowed_tools"
    allowed_tools: AllowedToolsParam


ToolChoiceOptionParam = Union[
    Literal["none", "auto", "required"],
    AllowedToolChoiceParam,
    NamedToolChoiceParam,
    BuiltinToolChoiceParam,
]

__all__ = [
    "FunctionDefinition",
    "FunctionToolParam",
    "BuiltinToolParam",
    "ToolParam",
    "NamedToolChoiceFunction",
    "NamedToolChoiceParam",
    "BuiltinToolChoiceParam",
    "AllowedToolRef",
    "AllowedToolsParam",
    "AllowedToolChoiceParam",
    "ToolChoiceOptionParam",
]
