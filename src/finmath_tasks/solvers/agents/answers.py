"""Reading the agents' JSON replies (``{"steps": ..., "answer": ...}``); never raises.

The last JSON object of a reply that has the wanted key wins (models restate their
answer after some text, or wrap it in a ```json fence); its answer may be empty (null).
When no such object decodes,
a rule-based fallback reads the answer: ``"answer": <value>`` as text, else the
numeric-answer rules of :func:`finmath_tasks.scorers.extraction.extract_answer`;
the method used is recorded with the answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from finmath_tasks.scorers.extraction import extract_answer

MAX_SCAN_CHARS = 40_000
"""Only the last this many characters of a reply are searched."""
MAX_CANDIDATES = 200
"""At most this many ``{`` positions are tried as the start of a JSON object."""
MAX_ANSWER_CHARS = 2_000

Answer = str | list[str] | None
"""An answer as the model gave it: text, a list of texts (several spans), or none."""

_ANSWER_FIELD = re.compile(r'"answer"\s*:\s*"((?:[^"\\\n]|\\.){0,2000})"', re.IGNORECASE)


@dataclass(frozen=True)
class ParsedReply:
    answer: Answer
    method: str
    """json | json_field | rules:<extraction method> | none"""
    detail: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    """The decoded JSON object (empty without one)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def last_json_object(text: str, key: str) -> dict[str, Any] | None:
    """The last JSON object in ``text`` that has ``key`` (case-insensitive), or None."""
    text = text[-MAX_SCAN_CHARS:]
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"\{", text)][-MAX_CANDIDATES:]
    wanted = key.lower()
    for start in reversed(starts):
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and any(str(k).lower() == wanted for k in value):
            return {str(k).lower(): v for k, v in value.items()}
    return None


def answer_text(value: Any) -> Answer:
    """A JSON answer value as text (numbers as written by ``json``), a list of texts, or None."""
    if value is None or isinstance(value, dict):
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        items = [answer_text(v) for v in value]
        texts = [t for t in items if isinstance(t, str) and t.strip()]
        if not texts:
            return None
        return texts[0] if len(texts) == 1 else texts
    text = str(value).strip()[:MAX_ANSWER_CHARS]
    return text or None


def parse_reply(reply: str, truncated: bool = False) -> ParsedReply:
    """The answer of a ``{"steps": ..., "answer": ...}`` reply; never raises.

    ``truncated``: the model stopped at max_tokens; without a JSON answer the fallback
    then takes no last-number guess (as the numeric scorer does).
    """
    try:
        return _parse_reply(reply or "", truncated)
    except Exception as e:  # a bug of ours is this reply's "no answer", never the eval's end
        return ParsedReply(None, "none", f"reply parser failed: {type(e).__name__}: {e}")


def _parse_reply(reply: str, truncated: bool) -> ParsedReply:
    obj = last_json_object(reply, "answer")
    if obj is not None:
        answer = answer_text(obj.get("answer"))
        detail = "" if answer is not None else "the JSON answer is empty"
        return ParsedReply(answer, "json", detail, obj)
    tail = reply[-MAX_SCAN_CHARS:]
    fields = list(_ANSWER_FIELD.finditer(tail))
    if fields:
        raw = fields[-1].group(1)
        try:
            text = json.loads(f'"{raw}"')
        except ValueError:
            text = raw
        if text.strip():
            return ParsedReply(text.strip(), "json_field", "an unparsable JSON object's answer")
    extraction = extract_answer(reply, truncated=truncated)
    if extraction.number is not None:
        return ParsedReply(extraction.number.text, f"rules:{extraction.method}", extraction.detail)
    return ParsedReply(None, "none", extraction.detail or "no answer found")


def decision(reply: str, choices: tuple[str, ...]) -> tuple[str | None, dict[str, Any]]:
    """The ``"decision"`` of a JSON reply when it is one of ``choices`` (lower case)."""
    try:
        obj = last_json_object(reply or "", "decision")
    except Exception:
        obj = None
    if obj is None:
        return None, {}
    value = str(obj.get("decision", "")).strip().lower()
    return (value if value in choices else None), obj
