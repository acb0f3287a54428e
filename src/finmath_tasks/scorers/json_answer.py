"""A JSON object with a required field, read out of a model's free-text reply.

Models asked for JSON wrap it in a fenced block (```json ... ```), put prose
around it, or emit it bare. :func:`extract_json_object` finds every JSON
object in the reply (fenced blocks first, then bare objects found by decoding
from each ``{``), and returns the last one that has the required key. It reads
JSON only (no ``eval``), bounds its work on enormous replies, and never raises:
a reply without such an object gives ``None`` and the reason.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_SCAN_CHARS = 60_000
"""Only the reply's tail is searched (a final answer comes last)."""
MAX_CANDIDATES = 400
"""At most this many ``{`` positions are tried as the start of an object."""

_FENCE_RE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def _objects_in(text: str) -> list[dict[str, Any]]:
    """Top-level JSON objects in ``text``, in order (objects nested in another are skipped)."""
    found: list[dict[str, Any]] = []
    position = 0
    tried = 0
    while tried < MAX_CANDIDATES:
        start = text.find("{", position)
        if start < 0:
            break
        tried += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            position = start + 1
            continue
        if isinstance(value, dict):
            found.append(value)
        position = max(end, start + 1)
    return found


def extract_json_object(text: Any, required_key: str) -> tuple[dict[str, Any] | None, str]:
    """The last JSON object in ``text`` that has ``required_key``, and how it was found.

    Returns ``(object, "fenced"|"bare")`` or ``(None, reason)``. Never raises.
    """
    try:
        if not isinstance(text, str) or not text.strip():
            return None, "empty reply"
        tail = text[-MAX_SCAN_CHARS:]
        fenced = [m.group(1) for m in _FENCE_RE.finditer(tail)]
        for origin, pieces in (("fenced", fenced), ("bare", [tail])):
            objects = [o for piece in pieces for o in _objects_in(piece) if required_key in o]
            if objects:
                return objects[-1], origin
        return None, f"no JSON object with a {required_key!r} field in the reply"
    except Exception as e:  # never raise on a model's reply
        return None, f"JSON extraction failed: {type(e).__name__}: {e}"[:300]
