"""Structural tags: XGrammar's format for tool calls, reasoning sections and
free text mixed with structured regions, as pydantic models at XGrammar's
names (``xgrammar.structural_tag``).

A structural tag is a tree of formats; ``StructuralTag(format=...)`` is the
whole, the JSON an engine receives as ``response_format: {"type":
"structural_tag", "format": {...}}``. Compile it with
``Grammar.from_structural_tag`` or ``GrammarCompiler.compile_structural_tag``
(both also take the JSON text or a ``dict``). The compiler is zapspec's
(crate ``zapspec-structtag``): free text until a trigger is one lazily
built automaton in the Earley engine, JSON bodies are zapspec's JSON Schema
compiler with XGrammar's defaults (any whitespace, ``strict_mode``).

Token-level formats (``token``, ``exclude_token``, ``any_tokens``,
``token_triggered_tags``, ``token_dispatch``, token begins and ends),
``any_text`` budgets (``max_tokens``, ``max_chars``), the XML parameter
styles and ``JSONSchemaFormat.excludes`` parse here but the compiler
refuses them with ``InvalidStructuralTagError`` (kind ``"unsupported"``).
"""

import json
import warnings
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, Type, Union, get_args

from pydantic import BaseModel, Field

_COUNT = Field(default=None, ge=0, le=2_147_483_647)


class ConstStringFormat(BaseModel):
    """Exactly ``value``."""

    type: Literal["const_string"] = "const_string"
    value: str


class JSONSchemaFormat(BaseModel):
    """A JSON document valid under ``json_schema``."""

    type: Literal["json_schema"] = "json_schema"
    json_schema: Union[bool, Dict[str, Any]]
    style: Literal[
        "json",
        "qwen_xml",
        "minimax_xml",
        "minimax_m3_xml",
        "deepseek_xml",
        "glm_xml",
        "cohere_xml",
        "kimi_k3_xml",
        "deepseek_v4_1_xml",
    ] = "json"
    any_order: bool = False
    max_whitespace_cnt: Optional[int] = None
    excludes: List[str] = []


class QwenXMLParameterFormat(BaseModel):
    """Qwen's XML parameters (``<parameter=name>value</parameter>``)."""

    type: Literal["qwen_xml_parameter"] = "qwen_xml_parameter"
    json_schema: Union[bool, Dict[str, Any]]


class AnyTextFormat(BaseModel):
    """Any text without the ``excludes`` (nor the enclosing tag's end)."""

    type: Literal["any_text"] = "any_text"
    excludes: List[str] = []
    max_tokens: Optional[int] = _COUNT
    max_chars: Optional[int] = _COUNT


class GrammarFormat(BaseModel):
    """Text of an EBNF (GBNF) grammar, from its ``root`` rule."""

    type: Literal["grammar"] = "grammar"
    grammar: str


class RegexFormat(BaseModel):
    """Text fully matched by an ECMAScript regex."""

    type: Literal["regex"] = "regex"
    pattern: str


class TokenFormat(BaseModel):
    """One token, by id or text (refused by zapspec's compiler)."""

    type: Literal["token"] = "token"
    token: Union[int, str]


class ExcludeTokenFormat(BaseModel):
    """One token not in ``exclude_tokens`` (refused by zapspec's compiler)."""

    type: Literal["exclude_token"] = "exclude_token"
    exclude_tokens: List[Union[int, str]] = []


class AnyTokensFormat(BaseModel):
    """Tokens not in ``exclude_tokens`` (refused by zapspec's compiler)."""

    type: Literal["any_tokens"] = "any_tokens"
    exclude_tokens: List[Union[int, str]] = []
    max_tokens: Optional[int] = _COUNT


class SequenceFormat(BaseModel):
    """The elements in order."""

    type: Literal["sequence"] = "sequence"
    elements: List["Format"]


class OrFormat(BaseModel):
    """One of the elements."""

    type: Literal["or"] = "or"
    elements: List["Format"]


class TagFormat(BaseModel):
    """``begin + content + end``; free text inside stops at ``end``."""

    type: Literal["tag"] = "tag"
    begin: Union[str, TokenFormat]
    content: "Format"
    end: Union[str, List[str], TokenFormat]


class TriggeredTagsFormat(BaseModel):
    """Free text; where a trigger appears, one of the tags whose begin starts
    with it; then free text again (``stop_after_first``: done after one;
    ``at_least_one``: a tag first)."""

    type: Literal["triggered_tags"] = "triggered_tags"
    triggers: List[str]
    tags: List[TagFormat]
    at_least_one: bool = False
    stop_after_first: bool = False
    excludes: List[str] = []


class TokenTriggeredTagsFormat(BaseModel):
    """``triggered_tags`` on tokens (refused by zapspec's compiler)."""

    type: Literal["token_triggered_tags"] = "token_triggered_tags"
    trigger_tokens: List[Union[int, str]]
    tags: List[TagFormat]
    exclude_tokens: List[Union[int, str]] = []
    at_least_one: bool = False
    stop_after_first: bool = False


class TagsWithSeparatorFormat(BaseModel):
    """Tags separated by ``separator`` and nothing else."""

    type: Literal["tags_with_separator"] = "tags_with_separator"
    tags: List[TagFormat]
    separator: str
    at_least_one: bool = False
    stop_after_first: bool = False


class OptionalFormat(BaseModel):
    """The content, or nothing."""

    type: Literal["optional"] = "optional"
    content: "Format"


class PlusFormat(BaseModel):
    """The content, one or more times."""

    type: Literal["plus"] = "plus"
    content: "Format"


class StarFormat(BaseModel):
    """The content, any number of times."""

    type: Literal["star"] = "star"
    content: "Format"


class RepeatFormat(BaseModel):
    """The content ``min`` to ``max`` times (``max=-1``: unbounded)."""

    type: Literal["repeat"] = "repeat"
    min: int
    max: int
    content: "Format"


class DispatchFormat(BaseModel):
    """Free text; where a rule's pattern appears, its format follows."""

    type: Literal["dispatch"] = "dispatch"
    rules: List[Tuple[str, "Format"]]
    loop: bool = True
    excludes: List[str] = []


class TokenDispatchFormat(BaseModel):
    """``dispatch`` on tokens (refused by zapspec's compiler)."""

    type: Literal["token_dispatch"] = "token_dispatch"
    rules: List[Tuple[Union[int, str], "Format"]]
    loop: bool = True
    exclude_tokens: List[Union[int, str]] = []


Format = Annotated[
    Union[
        ConstStringFormat,
        JSONSchemaFormat,
        QwenXMLParameterFormat,
        AnyTextFormat,
        GrammarFormat,
        RegexFormat,
        TokenFormat,
        ExcludeTokenFormat,
        AnyTokensFormat,
        SequenceFormat,
        OrFormat,
        TagFormat,
        TriggeredTagsFormat,
        TokenTriggeredTagsFormat,
        TagsWithSeparatorFormat,
        OptionalFormat,
        PlusFormat,
        StarFormat,
        RepeatFormat,
        DispatchFormat,
        TokenDispatchFormat,
    ],
    Field(discriminator="type"),
]

# the recursive models name "Format" before it exists: resolve it now
for _m in get_args(get_args(Format)[0]):
    _m.model_rebuild()


class StructuralTagItem(BaseModel):
    """Deprecated (XGrammar's first form): a tag ``begin + JSON + end``,
    used with a list of triggers."""

    begin: str
    schema_: Union[str, Type[BaseModel], Dict[str, Any]] = Field(alias="schema")
    end: str


def _schema_of(s: Union[str, Type[BaseModel], Dict[str, Any]]) -> Any:
    if isinstance(s, str):
        return json.loads(s)
    if isinstance(s, type) and issubclass(s, BaseModel):
        return s.model_json_schema()
    return s


class StructuralTag(BaseModel):
    """A whole structural tag: ``{"type": "structural_tag", "format": ...}``."""

    type: Literal["structural_tag"] = "structural_tag"
    format: Format

    @staticmethod
    def from_legacy_structural_tag(
        tags: List[StructuralTagItem], triggers: List[str]
    ) -> "StructuralTag":
        """The deprecated form as a ``triggered_tags`` format."""
        return StructuralTag(
            format=TriggeredTagsFormat(
                triggers=list(triggers),
                tags=[
                    TagFormat(
                        begin=t.begin,
                        content=JSONSchemaFormat(json_schema=_schema_of(t.schema_)),
                        end=t.end,
                    )
                    for t in tags
                ],
            )
        )

    @staticmethod
    def from_json(json_str: Union[str, Dict[str, Any]]) -> "StructuralTag":
        """A structural tag from its JSON text or ``dict``."""
        if isinstance(json_str, str):
            return StructuralTag.model_validate_json(json_str)
        if isinstance(json_str, dict):
            return StructuralTag.model_validate(json_str)
        raise ValueError("Invalid JSON string or dictionary")


def _structural_tag_json(*args: Any, **kwargs: Any) -> str:
    """The JSON text the compiler reads, from what ``from_structural_tag``
    and ``compile_structural_tag`` take: one ``StructuralTag``, ``str`` or
    ``dict`` (``structural_tag=``), or the deprecated ``(tags, triggers)``."""
    if len(args) + len(kwargs) == 2:
        tags = kwargs.pop("tags", None)
        triggers = kwargs.pop("triggers", None)
        rest = list(args)
        if tags is None:
            tags = rest.pop(0)
        if triggers is None:
            triggers = rest.pop(0)
        if kwargs or rest:
            raise TypeError("expected (tags, triggers) or one structural tag")
        warnings.warn(
            "from_structural_tag(tags, triggers) is deprecated: build a StructuralTag",
            DeprecationWarning,
            stacklevel=3,
        )
        return StructuralTag.from_legacy_structural_tag(tags, triggers).model_dump_json(
            by_alias=True
        )
    if len(args) + len(kwargs) != 1:
        raise TypeError("expected (tags, triggers) or one structural tag")
    tag = args[0] if args else kwargs.get("structural_tag")
    if tag is None and not args:
        raise TypeError(f"unexpected keyword argument {next(iter(kwargs))!r}")
    if isinstance(tag, StructuralTag):
        return tag.model_dump_json(by_alias=True)
    if isinstance(tag, BaseModel):
        return StructuralTag(format=tag).model_dump_json(by_alias=True)
    if isinstance(tag, str):
        return tag
    if isinstance(tag, dict):
        return json.dumps(tag)
    raise TypeError(
        f"a structural tag is a StructuralTag, a JSON str or a dict, not {type(tag).__name__}"
    )


__all__ = [
    "ConstStringFormat",
    "JSONSchemaFormat",
    "QwenXMLParameterFormat",
    "AnyTextFormat",
    "GrammarFormat",
    "RegexFormat",
    "TokenFormat",
    "ExcludeTokenFormat",
    "AnyTokensFormat",
    "SequenceFormat",
    "OrFormat",
    "TagFormat",
    "TriggeredTagsFormat",
    "TokenTriggeredTagsFormat",
    "TagsWithSeparatorFormat",
    "OptionalFormat",
    "PlusFormat",
    "StarFormat",
    "RepeatFormat",
    "DispatchFormat",
    "TokenDispatchFormat",
    "Format",
    "StructuralTagItem",
    "StructuralTag",
]
