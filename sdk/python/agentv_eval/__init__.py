"""Write agentv code judges in Python.

A code judge is any program that reads one JSON payload on stdin and prints one JSON result on
stdout. This module reads the payload into typed dataclasses, validates and prints the result,
calls the eval's model target through agentv's loopback proxy, and serves agentv's persistent
line protocol, all with the standard library only (Python >= 3.9).

It is one file on purpose: a judge can use it by copying this file next to itself as
``agentv_eval.py``, or by ``pip install ./sdk/python``.

Example::

    from agentv_eval import JudgeResult, run_judge

    def judge(payload, target):
        result = JudgeResult(0.0)
        result.check("42" in payload.answer_text(), "mentions 42")
        if target is not None:
            reply = target.invoke("Is this polite? Answer yes or no.\\n\\n" + payload.answer_text())
            result.check(reply.text.strip().lower().startswith("yes"), "polite")
        result.score = len(result.hits) / 2
        return result

    run_judge(judge)

See docs/judges.md for the payload keys, the result contract, the proxy API and persistent mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import json
import math
import numbers
import os
import socket
import sys
import traceback
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import (
    IO,
    Any,
    BinaryIO,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    NoReturn,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

__version__ = "0.1.0"

__all__ = [
    "PROXY_URL_ENV",
    "PROXY_TOKEN_ENV",
    "JUDGE_PROXY_URL_ENV",
    "JUDGE_PROXY_TOKEN_ENV",
    "PERSISTENT_ENV",
    "PROTOCOL_VERSION",
    "AgentvError",
    "PayloadError",
    "ResultError",
    "TargetError",
    "TargetNotAvailableError",
    "TargetInvocationError",
    "TokenUsage",
    "ToolCall",
    "OutputMessage",
    "TraceEvent",
    "TraceSummary",
    "ExecutionMetrics",
    "TraceTool",
    "TraceStep",
    "Trace",
    "CodeJudgePayload",
    "parse_payload",
    "read_payload",
    "JudgeResult",
    "check_score",
    "InvokeRequest",
    "InvokeResponse",
    "ProxyInfo",
    "TargetClient",
    "extract_json_object",
    "content_text",
    "run_judge",
]

PROXY_URL_ENV = "AGENTV_TARGET_PROXY_URL"
"""Environment variable holding the target proxy's base URL."""
PROXY_TOKEN_ENV = "AGENTV_TARGET_PROXY_TOKEN"
"""Environment variable holding the target proxy's bearer token."""
JUDGE_PROXY_URL_ENV = "AGENTV_JUDGE_PROXY_URL"
"""Older name of PROXY_URL_ENV; agentv exports both."""
JUDGE_PROXY_TOKEN_ENV = "AGENTV_JUDGE_PROXY_TOKEN"
"""Older name of PROXY_TOKEN_ENV; agentv exports both."""
PERSISTENT_ENV = "AGENTV_JUDGE_PERSISTENT"
"""Set to ``1`` by agentv when it wants the judge to serve one JSON line per case."""
PROTOCOL_VERSION = 1
"""Version of the persistent line protocol this module speaks."""

DEFAULT_TIMEOUT = 600.0
"""Seconds a proxy call may take before it fails; agentv's own judge timeout usually hits first."""

_PROXY_ENV_VARS = (PROXY_URL_ENV, PROXY_TOKEN_ENV, JUDGE_PROXY_URL_ENV, JUDGE_PROXY_TOKEN_ENV)

JsonObject = Dict[str, Any]
_T = TypeVar("_T")


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class AgentvError(Exception):
    """Base of every error this module raises on purpose."""


class PayloadError(AgentvError, ValueError):
    """The payload is not a JSON object of the code-judge shape.

    ``path`` names the offending wire key, e.g. ``output_messages[1].tool_calls[0].tool``.
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"payload key `{path}`: {message}" if path else f"payload: {message}")
        self.path = path


class ResultError(AgentvError, ValueError):
    """A judge result that agentv would reject (score out of range, NaN, bad details, ...)."""


class TargetError(AgentvError):
    """A target proxy call failed.

    ``kind`` says why: ``not_available`` (a URL without a token), ``status`` (the proxy answered
    with an error status; ``status`` and ``message`` hold its code and its ``error`` text),
    ``connection`` (no answer: the proxy is gone or unreachable), ``timeout`` (no answer in
    time) or ``protocol`` (an answer that is not the expected JSON).
    """

    kind = "error"

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        if self.status is not None and self.kind == "status":
            return f"target proxy answered HTTP {self.status}: {self.message}"
        return f"target proxy request failed: {self.message}"

    @property
    def unauthorized(self) -> bool:
        """The token was missing or wrong (HTTP 401)."""
        return self.status == 401

    @property
    def budget_exhausted(self) -> bool:
        """The call budget (``max_calls``) is spent (HTTP 429)."""
        return self.status == 429

    @property
    def proxy_closed(self) -> bool:
        """The proxy has shut down (HTTP 503) or is no longer listening."""
        return self.status == 503 or self.kind == "connection"


class TargetNotAvailableError(TargetError):
    """The proxy URL is set but its token is not, so no call can be authorized."""

    kind = "not_available"

    def __str__(self) -> str:
        return self.message


class TargetInvocationError(TargetError):
    """The proxy refused a call, failed, or could not be reached. See ``kind`` and ``status``."""

    def __init__(self, message: str, status: Optional[int] = None, kind: str = "status") -> None:
        super().__init__(message, status)
        self.kind = kind


# --------------------------------------------------------------------------------------------
# Strict JSON (no NaN, no Infinity, no overflowing numbers), as agentv's own parser reads it
# --------------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _loads(text: str) -> Any:
    value, end = _DECODER.raw_decode(text, _skip_ws(text, 0))
    if _skip_ws(text, end) != len(text):
        raise ValueError(f"trailing characters at position {end}")
    return value


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def extract_json_object(text: str) -> Optional[JsonObject]:
    """Finds the first JSON object in a model reply.

    The whole reply when it is an object; otherwise the first ``{`` from which a complete JSON
    object parses, so objects wrapped in prose or in ```json fences are found, and a ``{`` that
    starts no valid object is skipped. Returns None when there is none. This mirrors agentv's
    own reading of LLM judge replies (``first_json_object`` in agentv-core).
    """
    trimmed = text.strip()
    try:
        whole = _loads(trimmed)
        if isinstance(whole, dict):
            return whole
    except (ValueError, RecursionError):
        pass
    start = trimmed.find("{")
    while start != -1:
        try:
            value, _ = _DECODER.raw_decode(trimmed, start)
            if isinstance(value, dict):
                return value
        except (ValueError, RecursionError):
            pass
        start = trimmed.find("{", start + 1)
    return None


def content_text(content: Any) -> str:
    """Message content as text: strings as they are, content-part lists by their ``text``
    parts joined by newlines, anything else as compact JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, dict) and isinstance(part.get("text"), str) for part in content
    ):
        return "\n".join(part["text"] for part in content)
    return _dumps(content)


# --------------------------------------------------------------------------------------------
# Payload model
# --------------------------------------------------------------------------------------------


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class _Reader:
    """Takes the known keys out of one wire object; what is left over becomes ``extra``.

    JSON null counts as absent everywhere: 4.x sends null for unknown values.
    """

    def __init__(self, obj: Any, path: str) -> None:
        if not isinstance(obj, dict):
            raise PayloadError(f"expected an object, got {_kind(obj)}", path)
        self._rest = dict(obj)
        self._path = path

    def _at(self, key: str) -> str:
        return f"{self._path}.{key}" if self._path else key

    def _take(self, key: str) -> Any:
        return self._rest.pop(key, None)

    def _fail(self, key: str, want: str, value: Any) -> NoReturn:
        raise PayloadError(f"expected {want}, got {_kind(value)}", self._at(key))

    def opt_text(self, key: str) -> Optional[str]:
        value = self._take(key)
        if value is None or isinstance(value, str):
            return value
        self._fail(key, "a string", value)

    def text(self, key: str) -> str:
        value = self.opt_text(key)
        return "" if value is None else value

    def required_text(self, key: str, alias: Optional[str] = None) -> str:
        value = self.opt_text(key)
        if value is None and alias is not None:
            value = self.opt_text(alias)
        if value is None:
            raise PayloadError("required string is missing", self._at(key))
        return value

    def opt_integer(self, key: str) -> Optional[int]:
        value = self._take(key)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        self._fail(key, "an integer", value)

    def integer(self, key: str) -> int:
        value = self.opt_integer(key)
        return 0 if value is None else value

    def opt_number(self, key: str) -> Optional[float]:
        value = self._take(key)
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        self._fail(key, "a number", value)

    def value(self, key: str) -> Any:
        return self._take(key)

    def array(self, key: str) -> List[Any]:
        value = self._take(key)
        if value is None:
            return []
        if isinstance(value, list):
            return value
        self._fail(key, "an array", value)

    def text_list(self, key: str) -> List[str]:
        items = self.array(key)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise PayloadError(f"expected a string, got {_kind(item)}", f"{self._at(key)}[{i}]")
        return items

    def opt_mapping(self, key: str) -> Optional[JsonObject]:
        value = self._take(key)
        if value is None or isinstance(value, dict):
            return value
        self._fail(key, "an object", value)

    def mapping(self, key: str) -> JsonObject:
        value = self.opt_mapping(key)
        return {} if value is None else value

    def count_map(self, key: str) -> Dict[str, int]:
        mapping = self.mapping(key)
        for name, count in mapping.items():
            if not isinstance(count, int) or isinstance(count, bool):
                raise PayloadError(f"expected an integer, got {_kind(count)}", f"{self._at(key)}.{name}")
        return mapping

    def durations_map(self, key: str) -> Dict[str, List[float]]:
        mapping = self.mapping(key)
        out: Dict[str, List[float]] = {}
        for name, values in mapping.items():
            where = f"{self._at(key)}.{name}"
            if not isinstance(values, list):
                raise PayloadError(f"expected an array, got {_kind(values)}", where)
            for i, v in enumerate(values):
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise PayloadError(f"expected a number, got {_kind(v)}", f"{where}[{i}]")
            out[name] = [float(v) for v in values]
        return out

    def nested(self, key: str, parse: Callable[[Any, str], Any]) -> Any:
        value = self._take(key)
        return None if value is None else parse(value, self._at(key))

    def nested_list(self, key: str, parse: Callable[[Any, str], Any]) -> List[Any]:
        where = self._at(key)
        return [parse(item, f"{where}[{i}]") for i, item in enumerate(self.array(key))]

    def extra(self) -> JsonObject:
        return self._rest


@dataclass
class TokenUsage:
    """Tokens a provider reported."""

    input: int = 0
    output: int = 0
    cached: Optional[int] = None
    reasoning: Optional[int] = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "token_usage") -> TokenUsage:
        r = _Reader(obj, path)
        return cls(r.integer("input"), r.integer("output"), r.opt_integer("cached"), r.opt_integer("reasoning"), r.extra())


@dataclass
class ToolCall:
    """One tool invocation inside an output message. ``input`` and ``output`` are the agent's
    data, untouched; ``tool`` is the name exactly as the agent spelled it."""

    tool: str
    input: Any = None
    output: Any = None
    id: Optional[str] = None
    timestamp: Optional[str] = None
    start_time: Optional[str] = None
    end_time: Optional[str] = None
    duration_ms: Optional[float] = None
    status: Optional[str] = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "tool_call") -> ToolCall:
        r = _Reader(obj, path)
        return cls(
            tool=r.required_text("tool", alias="name"),
            input=r.value("input"),
            output=r.value("output"),
            id=r.opt_text("id"),
            timestamp=r.opt_text("timestamp"),
            start_time=r.opt_text("start_time"),
            end_time=r.opt_text("end_time"),
            duration_ms=r.opt_number("duration_ms"),
            status=r.opt_text("status"),
            extra=r.extra(),
        )


@dataclass
class OutputMessage:
    """One message of a transcript. ``content`` (a string, content parts or any JSON value) and
    ``metadata`` are passed through untouched."""

    role: str
    name: Optional[str] = None
    content: Any = None
    tool_calls: List[ToolCall] = field(default_factory=list)
    id: Optional[str] = None
    timestamp: Optional[str] = None
    start_time: Optional[str] = None
    end_time: Optional[str] = None
    duration_ms: Optional[float] = None
    metadata: Optional[JsonObject] = None
    token_usage: Optional[TokenUsage] = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "message") -> OutputMessage:
        r = _Reader(obj, path)
        return cls(
            role=r.required_text("role"),
            name=r.opt_text("name"),
            content=r.value("content"),
            tool_calls=r.nested_list("tool_calls", ToolCall.from_wire),
            id=r.opt_text("id"),
            timestamp=r.opt_text("timestamp"),
            start_time=r.opt_text("start_time"),
            end_time=r.opt_text("end_time"),
            duration_ms=r.opt_number("duration_ms"),
            metadata=r.opt_mapping("metadata"),
            token_usage=r.nested("token_usage", TokenUsage.from_wire),
            extra=r.extra(),
        )

    def text(self) -> Optional[str]:
        """The content as text (see ``content_text``); None when there is no content."""
        return None if self.content is None else content_text(self.content)


def _last_assistant_text(messages: Sequence[OutputMessage]) -> Optional[str]:
    for message in reversed(messages):
        if message.role == "assistant" and message.content is not None:
            return message.text()
    return None


@dataclass
class TraceEvent:
    """One step of the candidate's execution (2.x ``candidate_trace``). ``type`` is one of
    ``model_step``, ``tool_call``, ``tool_result``, ``message``, ``error``."""

    type: str
    timestamp: Optional[str] = None
    id: Optional[str] = None
    name: Optional[str] = None
    input: Any = None
    output: Any = None
    text: Optional[str] = None
    metadata: Optional[JsonObject] = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "event") -> TraceEvent:
        r = _Reader(obj, path)
        return cls(
            type=r.required_text("type"),
            timestamp=r.opt_text("timestamp"),
            id=r.opt_text("id"),
            name=r.opt_text("name"),
            input=r.value("input"),
            output=r.value("output"),
            text=r.opt_text("text"),
            metadata=r.opt_mapping("metadata"),
            extra=r.extra(),
        )


@dataclass
class TraceSummary:
    """Counts over the candidate's trace. 2.x fills ``tool_names`` and ``tool_calls_by_name``;
    4.x fills ``tool_calls`` (calls per name) and ``llm_call_count``. Tool names are map keys
    exactly as the agent called them."""

    event_count: int = 0
    tool_names: List[str] = field(default_factory=list)
    tool_calls_by_name: Dict[str, int] = field(default_factory=dict)
    error_count: int = 0
    tool_calls: Dict[str, int] = field(default_factory=dict)
    tool_durations: Dict[str, List[float]] = field(default_factory=dict)
    llm_call_count: Optional[int] = None
    token_usage: Optional[TokenUsage] = None
    cost_usd: Optional[float] = None
    duration_ms: Optional[float] = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "trace_summary") -> TraceSummary:
        r = _Reader(obj, path)
        return cls(
            event_count=r.integer("event_count"),
            tool_names=r.text_list("tool_names"),
            tool_calls_by_name=r.count_map("tool_calls_by_name"),
            error_count=r.integer("error_count"),
            tool_calls=r.count_map("tool_calls"),
            tool_durations=r.durations_map("tool_durations"),
            llm_call_count=r.opt_integer("llm_call_count"),
            token_usage=r.nested("token_usage", TokenUsage.from_wire),
            cost_usd=r.opt_number("cost_usd"),
            duration_ms=r.opt_number("duration_ms"),
            extra=r.extra(),
        )

    def calls_per_tool(self) -> Dict[str, int]:
        """Calls per tool name, whichever generation filled the summary."""
        return dict(self.tool_calls_by_name or self.tool_calls)


@dataclass
class ExecutionMetrics:
    """What the candidate's run cost (2.x ``execution_metrics``); unknown values are None."""

    token_usage: Optional[TokenUsage] = None
    cost_usd: Optional[float] = None
    duration_ms: Optional[float] = None
    tool_durations: Optional[Dict[str, List[float]]] = None
    tool_call_count: Optional[int] = None
    exploration_ratio: Optional[float] = None
    tokens_per_tool: Optional[float] = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "execution_metrics") -> ExecutionMetrics:
        r = _Reader(obj, path)
        token_usage = r.nested("token_usage", TokenUsage.from_wire)
        cost_usd = r.opt_number("cost_usd")
        duration_ms = r.opt_number("duration_ms")
        has_durations = obj.get("tool_durations") is not None
        durations = r.durations_map("tool_durations")
        return cls(
            token_usage=token_usage,
            cost_usd=cost_usd,
            duration_ms=duration_ms,
            tool_durations=durations if has_durations else None,
            tool_call_count=r.opt_integer("tool_call_count"),
            exploration_ratio=r.opt_number("exploration_ratio"),
            tokens_per_tool=r.opt_number("tokens_per_tool"),
            extra=r.extra(),
        )


@dataclass
class TraceTool:
    """The tool part of a 4.x trace event."""

    name: Optional[str] = None
    call_id: Optional[str] = None
    input: Any = None
    output: Any = None
    status: Optional[str] = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "tool") -> TraceTool:
        r = _Reader(obj, path)
        return cls(r.opt_text("name"), r.opt_text("call_id"), r.value("input"), r.value("output"), r.opt_text("status"), r.extra())


@dataclass
class TraceStep:
    """One event of a 4.x ``trace``: ``message``, ``tool_call``, ``tool_result``,
    ``final_response`` or ``error``."""

    type: str
    event_id: Optional[str] = None
    parent_event_id: Optional[str] = None
    ordinal: Optional[int] = None
    timestamp: Optional[str] = None
    duration_ms: Optional[float] = None
    message: Any = None
    tool: Optional[TraceTool] = None
    metadata: Optional[JsonObject] = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "event") -> TraceStep:
        r = _Reader(obj, path)
        return cls(
            type=r.required_text("type"),
            event_id=r.opt_text("event_id"),
            parent_event_id=r.opt_text("parent_event_id"),
            ordinal=r.opt_integer("ordinal"),
            timestamp=r.opt_text("timestamp"),
            duration_ms=r.opt_number("duration_ms"),
            message=r.value("message"),
            tool=r.nested("tool", TraceTool.from_wire),
            metadata=r.opt_mapping("metadata"),
            extra=r.extra(),
        )


@dataclass
class Trace:
    """The 4.x ``trace`` object: counts, the transcript and its events."""

    event_count: Optional[int] = None
    tool_calls: Dict[str, int] = field(default_factory=dict)
    error_count: Optional[int] = None
    llm_call_count: Optional[int] = None
    tool_durations: Dict[str, List[float]] = field(default_factory=dict)
    messages: List[OutputMessage] = field(default_factory=list)
    events: List[TraceStep] = field(default_factory=list)
    token_usage: Optional[TokenUsage] = None
    cost_usd: Optional[float] = None
    duration_ms: Optional[float] = None
    start_time: Optional[str] = None
    end_time: Optional[str] = None
    metadata: Optional[JsonObject] = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "trace") -> Trace:
        r = _Reader(obj, path)
        return cls(
            event_count=r.opt_integer("event_count"),
            tool_calls=r.count_map("tool_calls"),
            error_count=r.opt_integer("error_count"),
            llm_call_count=r.opt_integer("llm_call_count"),
            tool_durations=r.durations_map("tool_durations"),
            messages=r.nested_list("messages", OutputMessage.from_wire),
            events=r.nested_list("events", TraceStep.from_wire),
            token_usage=r.nested("token_usage", TokenUsage.from_wire),
            cost_usd=r.opt_number("cost_usd"),
            duration_ms=r.opt_number("duration_ms"),
            start_time=r.opt_text("start_time"),
            end_time=r.opt_text("end_time"),
            metadata=r.opt_mapping("metadata"),
            extra=r.extra(),
        )


@dataclass
class CodeJudgePayload:
    """Everything a code judge knows about one graded case.

    agentv sends both key generations (docs/architecture.md#code-judge-contract): the 2.x keys (``eval_id`` ...
    ``execution_metrics``) and the 4.x keys (``criteria`` ... ``workspace_path``); a payload from
    another runtime may carry only one set. Absent or null keys read as empty strings, empty
    lists, empty objects or None. Keys this module does not know are kept in ``extra``.
    User data (message content, tool inputs and outputs, ``config``, ``metadata``, tool names)
    is exactly as sent.
    """

    # 2.x keys
    eval_id: str = ""
    question: str = ""
    expected_outcome: str = ""
    expected_messages: List[Any] = field(default_factory=list)
    reference_answer: str = ""
    candidate_answer: str = ""
    output_messages: List[OutputMessage] = field(default_factory=list)
    guideline_files: List[str] = field(default_factory=list)
    input_files: List[str] = field(default_factory=list)
    input_messages: List[Any] = field(default_factory=list)
    trace_summary: Optional[TraceSummary] = None
    candidate_trace: List[TraceEvent] = field(default_factory=list)
    execution_metrics: Optional[ExecutionMetrics] = None
    config: JsonObject = field(default_factory=dict)
    # 4.x keys
    criteria: str = ""
    expected_output: List[Any] = field(default_factory=list)
    output: Optional[str] = None
    output_path: Optional[str] = None
    messages: List[OutputMessage] = field(default_factory=list)
    input: List[Any] = field(default_factory=list)
    metadata: JsonObject = field(default_factory=dict)
    trace: Optional[Trace] = None
    token_usage: Optional[TokenUsage] = None
    cost_usd: Optional[float] = None
    duration_ms: Optional[float] = None
    start_time: Optional[str] = None
    end_time: Optional[str] = None
    file_changes: Optional[str] = None
    workspace_path: Optional[str] = None
    # anything else
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any) -> CodeJudgePayload:
        r = _Reader(obj, "")
        return cls(
            eval_id=r.text("eval_id"),
            question=r.text("question"),
            expected_outcome=r.text("expected_outcome"),
            expected_messages=r.array("expected_messages"),
            reference_answer=r.text("reference_answer"),
            candidate_answer=r.text("candidate_answer"),
            output_messages=r.nested_list("output_messages", OutputMessage.from_wire),
            guideline_files=r.text_list("guideline_files"),
            input_files=r.text_list("input_files"),
            input_messages=r.array("input_messages"),
            trace_summary=r.nested("trace_summary", TraceSummary.from_wire),
            candidate_trace=r.nested_list("candidate_trace", TraceEvent.from_wire),
            execution_metrics=r.nested("execution_metrics", ExecutionMetrics.from_wire),
            config=r.mapping("config"),
            criteria=r.text("criteria"),
            expected_output=r.array("expected_output"),
            output=r.opt_text("output"),
            output_path=r.opt_text("output_path"),
            messages=r.nested_list("messages", OutputMessage.from_wire),
            input=r.array("input"),
            metadata=r.mapping("metadata"),
            trace=r.nested("trace", Trace.from_wire),
            token_usage=r.nested("token_usage", TokenUsage.from_wire),
            cost_usd=r.opt_number("cost_usd"),
            duration_ms=r.opt_number("duration_ms"),
            start_time=r.opt_text("start_time"),
            end_time=r.opt_text("end_time"),
            file_changes=r.opt_text("file_changes"),
            workspace_path=r.opt_text("workspace_path"),
            extra=r.extra(),
        )

    def answer_text(self) -> str:
        """The candidate's answer, whichever generation sent it: ``candidate_answer``, else
        ``output``, else the JSON string stored at ``output_path`` (4.x moves answers over
        50 000 characters there), else the last assistant message."""
        if self.candidate_answer:
            return self.candidate_answer
        if self.output is not None:
            return self.output
        if self.output_path:
            try:
                with open(self.output_path, encoding="utf-8") as f:
                    stored = json.load(f)
            except (OSError, ValueError) as e:
                raise PayloadError(f"cannot read the answer from {self.output_path}: {e}", "output_path") from e
            return stored if isinstance(stored, str) else _dumps(stored)
        return _last_assistant_text(self.output_messages or self.messages) or ""

    def criteria_text(self) -> str:
        """What a good answer achieves: ``expected_outcome`` (2.x), else ``criteria`` (4.x)."""
        return self.expected_outcome or self.criteria


def parse_payload(text: Union[str, bytes]) -> CodeJudgePayload:
    """Parses a payload from its JSON text (bytes must be UTF-8; a BOM is ignored)."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise PayloadError(f"not valid UTF-8 (byte {e.start})") from e
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        value = _loads(text)
    except (ValueError, RecursionError) as e:
        raise PayloadError(f"not valid JSON: {e}") from e
    if not isinstance(value, dict):
        raise PayloadError(f"expected a JSON object, got {_kind(value)}")
    return CodeJudgePayload.from_wire(value)


def read_payload(stream: Optional[BinaryIO] = None) -> CodeJudgePayload:
    """Reads all of stdin (or ``stream``) and parses it as the payload."""
    source: BinaryIO = stream if stream is not None else sys.stdin.buffer
    return parse_payload(source.read())


# --------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------


def check_score(score: Any) -> float:
    """Returns ``score`` as a float, or raises ResultError when agentv would reject it.

    agentv treats a code judge score outside [0, 1], NaN or infinite as a grader error rather
    than clamping it (docs/architecture.md#scoring), so a judge learns about the bug instead of hiding it.
    """
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise ResultError(f"score must be a number in [0, 1], got {_kind(score)}: {score!r}")
    value = float(score)
    if math.isnan(value) or math.isinf(value):
        spelled = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        raise ResultError(f"score must be a finite number in [0, 1], got {spelled}")
    if not 0.0 <= value <= 1.0:
        raise ResultError(
            f"score {value} is outside [0, 1]; agentv does not clamp code judge scores, "
            "so scale it in the judge (e.g. passed / total)"
        )
    return value


def _string_list(name: str, items: Any) -> List[str]:
    if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple)):
        raise ResultError(f"{name} must be a list of strings, got {_kind(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise ResultError(f"{name}[{i}] must be a string, got {_kind(item)}")
    return list(items)


_RESULT_KEYS = ("score", "hits", "misses", "reasoning", "details", "assertions", "pass")


@dataclass
class JudgeResult:
    """A judge's verdict on one case: ``{score, hits?, misses?, reasoning?, details?}``.

    ``score`` must be a finite number in [0, 1]: anything else raises ResultError (agentv would
    record a grader error, docs/architecture.md#scoring). ``details`` must be a JSON object; it is kept verbatim
    in the results file.
    """

    score: float
    hits: List[str] = field(default_factory=list)
    misses: List[str] = field(default_factory=list)
    reasoning: Optional[str] = None
    details: Optional[JsonObject] = None

    def __post_init__(self) -> None:
        self.validate()

    def hit(self, text: str) -> JudgeResult:
        """Adds a satisfied expectation."""
        self.hits.append(text)
        return self

    def miss(self, text: str) -> JudgeResult:
        """Adds an unmet expectation."""
        self.misses.append(text)
        return self

    def check(self, passed: bool, text: str) -> bool:
        """Adds ``text`` to hits when ``passed``, else to misses; returns ``passed``."""
        (self.hits if passed else self.misses).append(text)
        return passed

    def detail(self, key: str, value: Any) -> JudgeResult:
        """Adds one ``details`` entry."""
        if self.details is None:
            self.details = {}
        self.details[key] = value
        return self

    def validate(self) -> None:
        """Raises ResultError when agentv would reject this result."""
        self.score = check_score(self.score)
        self.hits = _string_list("hits", self.hits)
        self.misses = _string_list("misses", self.misses)
        if self.reasoning is not None and not isinstance(self.reasoning, str):
            raise ResultError(f"reasoning must be a string, got {_kind(self.reasoning)}")
        if self.details is not None and not isinstance(self.details, Mapping):
            raise ResultError(
                f"details must be a JSON object, got {_kind(self.details)}; "
                'wrap the value, e.g. {"value": ...}'
            )
        if self.details is not None:
            try:
                _dumps(self.details)
            except (TypeError, ValueError) as e:
                raise ResultError(f"details are not valid JSON: {e}") from e

    def to_dict(self) -> JsonObject:
        """The wire form: empty lists and absent values are omitted."""
        self.validate()
        out: JsonObject = {"score": self.score}
        if self.hits:
            out["hits"] = list(self.hits)
        if self.misses:
            out["misses"] = list(self.misses)
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        if self.details is not None:
            out["details"] = dict(self.details)
        return out

    def to_json(self) -> str:
        """One line of compact JSON; raises ResultError when agentv would reject the result."""
        return _dumps(self.to_dict())

    def emit(self, stream: Optional[IO[str]] = None) -> None:
        """Prints the result as one JSON line on stdout (or ``stream``) and flushes."""
        line = self.to_json()
        out = stream if stream is not None else sys.stdout
        out.write(line + "\n")
        out.flush()

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> JudgeResult:
        """Builds a result from a plain dict, validating it.

        Besides the 2.x keys it accepts the 4.x forms: ``assertions`` (``[{text, passed}]``,
        mapped to hits and misses; the score defaults to passed / total) and ``pass`` (a
        boolean: score 1 or 0).
        """
        if not isinstance(obj, Mapping):
            raise ResultError(f"a judge result must be an object, got {_kind(obj)}")
        unknown = [k for k in obj if k not in _RESULT_KEYS]
        if unknown:
            raise ResultError(f"unknown result key `{unknown[0]}`; allowed: {', '.join(_RESULT_KEYS)}")
        hits = _string_list("hits", obj.get("hits") or [])
        misses = _string_list("misses", obj.get("misses") or [])
        score = obj.get("score")
        assertions = obj.get("assertions")
        if assertions is not None:
            if not isinstance(assertions, (list, tuple)):
                raise ResultError(f"assertions must be a list, got {_kind(assertions)}")
            passed = 0
            for i, a in enumerate(assertions):
                if not isinstance(a, Mapping) or not isinstance(a.get("text"), str):
                    raise ResultError(f"assertions[{i}] must be an object with a string `text`")
                ok = bool(a.get("passed"))
                passed += ok
                (hits if ok else misses).append(a["text"])
            if score is None:
                score = passed / len(assertions) if assertions else 0.0
        if "pass" in obj and score is None:
            if not isinstance(obj["pass"], bool):
                raise ResultError(f"pass must be a boolean, got {_kind(obj['pass'])}")
            score = 1.0 if obj["pass"] else 0.0
        if score is None:
            raise ResultError("a judge result needs a `score` (a number in [0, 1])")
        details = obj.get("details")
        return cls(
            score=score,
            hits=hits,
            misses=misses,
            reasoning=obj.get("reasoning"),
            details=details,
        )

    @classmethod
    def failed(cls, message: str) -> JudgeResult:
        """The score-0 result printed when a judge could not grade."""
        return cls(0.0, misses=[message], reasoning=f"Evaluation failed: {message}")


def _coerce_result(value: Any) -> JudgeResult:
    if isinstance(value, JudgeResult):
        value.validate()
        return value
    if isinstance(value, Mapping):
        return JudgeResult.from_dict(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return JudgeResult(float(value))
    raise ResultError(f"the judge returned {_kind(value)}; return a JudgeResult, a dict with a `score`, or a number")


# --------------------------------------------------------------------------------------------
# Target proxy client
# --------------------------------------------------------------------------------------------


@dataclass
class InvokeRequest:
    """One question for the target (``POST /invoke`` body, one item of ``/invokeBatch``)."""

    question: str
    system_prompt: Optional[str] = None
    eval_case_id: Optional[str] = None
    attempt: Optional[int] = None
    target: Optional[str] = None
    """Name of another configured target to route this call to."""

    def to_wire(self) -> JsonObject:
        body: JsonObject = {"question": self.question}
        for key, value in (
            ("systemPrompt", self.system_prompt),
            ("evalCaseId", self.eval_case_id),
            ("attempt", self.attempt),
            ("target", self.target),
        ):
            if value is not None:
                body[key] = value
        return body


@dataclass
class InvokeResponse:
    """The target's answer. In a batch, ``error`` is set on an item whose call failed (the
    other items are unaffected)."""

    output_messages: List[OutputMessage] = field(default_factory=list)
    raw_text: Optional[str] = None
    error: Optional[str] = None
    token_usage: Optional[TokenUsage] = None
    extra: JsonObject = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def text(self) -> str:
        """``raw_text``, else the last assistant message's text, else ``""``."""
        if self.raw_text is not None:
            return self.raw_text
        return _last_assistant_text(self.output_messages) or ""

    def json_object(self) -> Optional[JsonObject]:
        """The first JSON object in the answer text (see ``extract_json_object``)."""
        return extract_json_object(self.text)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "response") -> InvokeResponse:
        r = _Reader(obj, path)
        messages = r.nested_list("outputMessages", OutputMessage.from_wire)
        legacy = r.nested_list("output", OutputMessage.from_wire)  # 4.x proxies name it `output`
        return cls(
            output_messages=messages or legacy,
            raw_text=r.opt_text("rawText"),
            error=r.opt_text("error"),
            token_usage=r.nested("tokenUsage", TokenUsage.from_wire),
            extra=r.extra(),
        )


@dataclass
class ProxyInfo:
    """``GET /info``: the default target, the budget, and the targets a call may name."""

    target_name: str = ""
    max_calls: int = 0
    call_count: int = 0
    available_targets: List[str] = field(default_factory=list)
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Any, path: str = "info") -> ProxyInfo:
        r = _Reader(obj, path)
        return cls(r.text("targetName"), r.integer("maxCalls"), r.integer("callCount"), r.text_list("availableTargets"), r.extra())


RequestLike = Union[str, InvokeRequest, Mapping[str, Any]]


def _as_request(item: RequestLike) -> InvokeRequest:
    if isinstance(item, InvokeRequest):
        return item
    if isinstance(item, str):
        return InvokeRequest(item)
    if isinstance(item, Mapping):
        names = {
            "question": "question",
            "system_prompt": "system_prompt",
            "systemPrompt": "system_prompt",
            "eval_case_id": "eval_case_id",
            "evalCaseId": "eval_case_id",
            "attempt": "attempt",
            "target": "target",
        }
        fields: Dict[str, Any] = {}
        for key, value in item.items():
            if key not in names:
                raise TypeError(f"unknown invoke request key `{key}`")
            fields[names[key]] = value
        if not isinstance(fields.get("question"), str):
            raise TypeError("an invoke request needs a string `question`")
        return InvokeRequest(**fields)
    raise TypeError(f"an invoke request is a string, an InvokeRequest or a dict, got {_kind(item)}")


class TargetClient:
    """Calls the eval's model target (or another configured one) through agentv's loopback
    proxy. The proxy holds the credentials and the call budget; the judge only has a URL and a
    bearer token valid for the current case.

    Create it inside the judge function (``TargetClient.from_env()``), or use the ``target``
    argument ``run_judge`` passes: in persistent mode each case has its own proxy.
    """

    def __init__(self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        # No environment proxies: the target proxy is on loopback, and an HTTP_PROXY variable
        # must not reroute (or leak the token of) these calls.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def __repr__(self) -> str:
        return f"TargetClient(url={self.url!r}, token='***', timeout={self.timeout})"

    @classmethod
    def from_env(
        cls, *, timeout: float = DEFAULT_TIMEOUT, environ: Optional[Mapping[str, str]] = None
    ) -> Optional[TargetClient]:
        """The client for the current case's proxy; None when the evaluator has no ``target``
        block. Raises TargetNotAvailableError when the URL is set without a token."""
        env = os.environ if environ is None else environ
        url = env.get(PROXY_URL_ENV) or env.get(JUDGE_PROXY_URL_ENV)
        token = env.get(PROXY_TOKEN_ENV) or env.get(JUDGE_PROXY_TOKEN_ENV)
        if not url:
            return None
        if not token:
            raise TargetNotAvailableError(
                f"{PROXY_URL_ENV} is set but {PROXY_TOKEN_ENV} is missing; the proxy cannot be used"
            )
        return cls(url, token, timeout=timeout)

    def invoke(
        self,
        question: RequestLike,
        *,
        system_prompt: Optional[str] = None,
        target: Optional[str] = None,
        eval_case_id: Optional[str] = None,
        attempt: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> InvokeResponse:
        """Asks the target one question (a string, an InvokeRequest, or a dict with camelCase
        or snake_case keys). Counts one call against the budget."""
        request = _as_request(question)
        for name, value in (
            ("system_prompt", system_prompt),
            ("target", target),
            ("eval_case_id", eval_case_id),
            ("attempt", attempt),
        ):
            if value is not None:
                setattr(request, name, value)
        answer = self._call("POST", "/invoke", request.to_wire(), timeout)
        return self._parse(answer, InvokeResponse.from_wire)

    def invoke_batch(self, requests: Sequence[RequestLike], *, timeout: Optional[float] = None) -> List[InvokeResponse]:
        """Asks several questions in one call; each counts against the budget, and a batch
        that would pass it is refused whole (TargetInvocationError, status 429). Returns one
        response per request, in order; a failed item has ``error`` set."""
        body = {"requests": [_as_request(r).to_wire() for r in requests]}
        answer = self._call("POST", "/invokeBatch", body, timeout)
        if not isinstance(answer, dict) or not isinstance(answer.get("responses"), list):
            raise TargetInvocationError("unexpected answer: no `responses` array", 200, "protocol")
        responses = answer["responses"]
        if len(responses) != len(body["requests"]):
            raise TargetInvocationError(
                f"unexpected answer: {len(responses)} responses for {len(body['requests'])} requests", 200, "protocol"
            )
        return [self._parse(item, InvokeResponse.from_wire, f"responses[{i}]") for i, item in enumerate(responses)]

    def get_info(self, *, timeout: Optional[float] = None) -> ProxyInfo:
        """The default target's name, the budget, calls so far, and the targets a call may name."""
        return self._parse(self._call("GET", "/info", None, timeout), ProxyInfo.from_wire)

    @staticmethod
    def _parse(answer: Any, parse: Callable[[Any, str], _T], path: str = "answer") -> _T:
        try:
            return parse(answer, path)
        except PayloadError as e:
            raise TargetInvocationError(f"unexpected answer: {e}", 200, "protocol") from e

    def _call(self, method: str, path: str, body: Optional[JsonObject], timeout: Optional[float]) -> Any:
        data = None if body is None else _dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        limit = self.timeout if timeout is None else timeout
        try:
            with self._opener.open(request, timeout=limit) as response:
                status, text = response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode("utf-8", "replace")
            raise TargetInvocationError(_error_message(status, text), status, "status") from None
        except (socket.timeout, TimeoutError) as e:
            raise TargetInvocationError(f"no answer from {self.url}{path} within {limit}s", None, "timeout") from e
        except urllib.error.URLError as e:
            if isinstance(e.reason, (socket.timeout, TimeoutError)):
                raise TargetInvocationError(f"no answer from {self.url}{path} within {limit}s", None, "timeout") from e
            raise TargetInvocationError(f"cannot reach {self.url}{path}: {e.reason}", None, "connection") from e
        except (OSError, ValueError) as e:
            raise TargetInvocationError(f"cannot reach {self.url}{path}: {e}", None, "connection") from e
        try:
            return _loads(text)
        except ValueError:
            raise TargetInvocationError(f"unexpected answer (not JSON): {text[:200]!r}", status, "protocol") from None


def _error_message(status: int, text: str) -> str:
    try:
        body = _loads(text)
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            return str(body["error"])
    except ValueError:
        pass
    return text.strip() or f"HTTP {status}"


# --------------------------------------------------------------------------------------------
# Running a judge: one-shot and persistent
# --------------------------------------------------------------------------------------------

JudgeFn = Callable[..., Any]


def _passes_target(judge: JudgeFn) -> bool:
    """Whether ``judge`` takes a second positional argument (the TargetClient)."""
    try:
        params = list(inspect.signature(judge).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    return sum(1 for p in params if p.kind in positional) >= 2


def _grade(judge: JudgeFn, payload: CodeJudgePayload) -> JudgeResult:
    """Calls the judge for one case (awaiting it when it is async) and validates its result."""
    if _passes_target(judge):
        value = judge(payload, TargetClient.from_env())
    else:
        value = judge(payload)
    if inspect.isawaitable(value):
        value = asyncio.run(_wait(value))
    return _coerce_result(value)


async def _wait(awaitable: Any) -> Any:
    return await awaitable


def _describe(error: BaseException) -> str:
    if isinstance(error, AgentvError):
        return str(error)
    if isinstance(error, SystemExit):
        return f"the judge called exit({error.code})"
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


@contextlib.contextmanager
def _protocol_stdout() -> Iterator[BinaryIO]:
    """Keeps stdout for agentv: yields a private handle on the real stdout, and while inside,
    sends everything else written to stdout (print, child processes, C extensions) to stderr."""
    sys.stdout.flush()
    saved_stdout = sys.stdout
    try:
        private_fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        # No file descriptors (an embedded interpreter): redirect at the Python level only.
        sys.stdout = sys.stderr
        try:
            yield saved_stdout.buffer
        finally:
            sys.stdout = saved_stdout
        return
    channel = os.fdopen(private_fd, "wb", buffering=0)
    sys.stdout = sys.stderr
    try:
        yield channel
    finally:
        sys.stdout = saved_stdout
        with contextlib.suppress(OSError):
            sys.stderr.flush()
            os.dup2(private_fd, 1)
        channel.close()


def _result_line(obj: JsonObject) -> bytes:
    """One protocol line; raises ResultError when the result cannot be sent as UTF-8 JSON."""
    try:
        return (_dumps(obj) + "\n").encode("utf-8")
    except (TypeError, ValueError) as e:  # UnicodeEncodeError is a ValueError
        raise ResultError(f"the result is not valid JSON: {e}") from e


def _error_line(obj: JsonObject) -> bytes:
    """A line that always encodes: messages may carry lone surrogates from odd exceptions."""
    return (_dumps(obj) + "\n").encode("utf-8", "replace")


def _report(error: BaseException) -> str:
    """Logs a judge failure on stderr (with the traceback when it is a bug in the judge)."""
    message = _describe(error)
    if not isinstance(error, (AgentvError, SystemExit)):
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    print(f"judge failed: {message}", file=sys.stderr)
    return message


def _run_once(judge: JudgeFn, stdin: BinaryIO) -> int:
    with _protocol_stdout() as channel:
        try:
            payload = parse_payload(stdin.read())
            line = _result_line(_grade(judge, payload).to_dict())
            code = 0
        except (Exception, SystemExit) as e:  # noqa: BLE001 - every failure becomes a result
            line = _error_line(JudgeResult.failed(_report(e)).to_dict())
            code = 1
        channel.write(line)
        channel.flush()
        return code


@contextlib.contextmanager
def _case_proxy(proxy: Optional[Mapping[str, Any]]) -> Iterator[None]:
    """Points the proxy variables at this case's proxy (or removes them), then restores them,
    so ``TargetClient.from_env()`` and hand-written env lookups see the current case."""
    saved = {name: os.environ.get(name) for name in _PROXY_ENV_VARS}
    for name in _PROXY_ENV_VARS:
        os.environ.pop(name, None)
    if proxy is not None:
        for name in (PROXY_URL_ENV, JUDGE_PROXY_URL_ENV):
            os.environ[name] = proxy["url"]
        for name in (PROXY_TOKEN_ENV, JUDGE_PROXY_TOKEN_ENV):
            os.environ[name] = proxy["token"]
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _parse_request(line: str) -> Tuple[Any, JsonObject, Optional[JsonObject]]:
    """Splits one request line into (id, payload, proxy); raises _BadRequest with the id."""
    try:
        message = _loads(line)
    except (ValueError, RecursionError) as e:
        raise _BadRequest(None, f"request line is not valid JSON: {e}") from e
    if not isinstance(message, dict):
        raise _BadRequest(None, f"request line must be a JSON object, got {_kind(message)}")
    case_id = message.get("id")
    if not isinstance(case_id, (str, int, float)) or isinstance(case_id, bool):
        raise _BadRequest(None, "request line needs an `id` (a string or a number)")
    payload = message.get("payload")
    if not isinstance(payload, dict):
        raise _BadRequest(case_id, f"request `payload` must be a JSON object, got {_kind(payload)}")
    proxy = message.get("proxy")
    if proxy is not None and not (
        isinstance(proxy, dict) and isinstance(proxy.get("url"), str) and isinstance(proxy.get("token"), str)
    ):
        raise _BadRequest(case_id, "request `proxy` must be null or an object with string `url` and `token`")
    return case_id, payload, proxy


class _BadRequest(Exception):
    def __init__(self, case_id: Any, message: str) -> None:
        super().__init__(message)
        self.case_id = case_id


def _serve_case(judge: JudgeFn, line: str) -> bytes:
    try:
        case_id, wire, proxy = _parse_request(line)
    except _BadRequest as e:
        print(f"judge: bad request line: {e}", file=sys.stderr)
        return _error_line({"id": e.case_id, "error": str(e)})
    try:
        with _case_proxy(proxy):
            result = _grade(judge, CodeJudgePayload.from_wire(wire))
            return _result_line({"id": case_id, "result": result.to_dict()})
    except (Exception, SystemExit) as e:  # noqa: BLE001 - a failing case never stops the others
        return _error_line({"id": case_id, "error": _report(e)})


def _serve_persistent(judge: JudgeFn, stdin: BinaryIO) -> int:
    """Serves one request line per case until stdin closes (see docs/judges.md)."""
    saved_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")  # the judge must not eat requests
    try:
        with _protocol_stdout() as channel:
            ready = {"ready": True, "protocol": PROTOCOL_VERSION, "sdk": f"python/{__version__}"}
            channel.write(_result_line(ready))
            channel.flush()
            for raw in stdin:
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    channel.write(_error_line({"id": None, "error": f"request line is not valid UTF-8 (byte {e.start})"}))
                    channel.flush()
                    continue
                if line:
                    channel.write(_serve_case(judge, line))
                    channel.flush()
    finally:
        sys.stdin = saved_stdin
    return 0


def _private_stdin() -> BinaryIO:
    """The protocol's stdin, with fd 0 pointed at /dev/null so child processes cannot read it."""
    try:
        private_fd = os.dup(0)
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.close(null_fd)
        return os.fdopen(private_fd, "rb")
    except OSError:
        return sys.stdin.buffer


def run_judge(judge: JudgeFn) -> NoReturn:
    """Runs a judge function and exits.

    ``judge(payload)`` or ``judge(payload, target)`` (target: a TargetClient for the current
    case's proxy, or None) returns a JudgeResult, a dict ``{score, hits?, misses?, reasoning?,
    details?}`` or a number; it may be async.

    One-shot (the default): reads the payload from stdin, prints the result as one JSON line
    and exits 0. When the judge raises, or its result is invalid, prints a score-0 result whose
    miss and reasoning carry the message, and exits 1 (agentv records a grader error).

    Persistent (``AGENTV_JUDGE_PERSISTENT=1``): announces itself with a ready line, then answers
    one JSON line per request line until stdin closes; an exception becomes an error line and
    the judge keeps serving. See docs/judges.md.

    In both modes stdout belongs to agentv: ``print`` inside the judge goes to stderr.
    """
    try:
        if os.environ.get(PERSISTENT_ENV) == "1":
            code = _serve_persistent(judge, _private_stdin())
        else:
            code = _run_once(judge, sys.stdin.buffer)
    except BrokenPipeError:
        # Nobody reads our stdout any more (agentv stopped, or `| head`): end quietly, and keep
        # the interpreter's final flush from complaining about the same pipe.
        with contextlib.suppress(OSError):
            null_fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null_fd, sys.stdout.fileno())
        code = 1
    sys.exit(code)
