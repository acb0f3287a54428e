"""Reading a model's JSON reply: the object it holds, or the reason it holds none."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


class ReplyError(ValueError):
    """The reply is not the JSON asked for; the message says what is wrong."""


def json_object(text: str) -> dict[str, Any]:
    """The JSON object of a reply: the whole reply, a fenced block, or the span from the
    first ``{`` to the last ``}`` (as the reference's extractor does)."""
    if not isinstance(text, str) or not text.strip():
        raise ReplyError("the reply is empty")
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            # strict=False: raw newlines and tabs inside strings (code written into a
            # JSON string by a model) are accepted
            value = json.loads(candidate, strict=False)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ReplyError(f"the reply holds no JSON object: {text.strip()[:120]!r}")


def require(obj: dict[str, Any], field: str, kind: type | tuple[type, ...], what: str = "") -> Any:
    """``obj[field]`` of type ``kind``; a clear error naming the field otherwise."""
    if field not in obj:
        raise ReplyError(f"the reply misses the field {field!r}{what}")
    value = obj[field]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        raise ReplyError(f"the reply's field {field!r}{what} is a {type(value).__name__}")
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)
