"""An LLM judge of equivalence on the ``grader`` model role.

A benchmark that accepts a model's answer when a judge says it is equivalent to
the gold solution passes its own prompt and the reader of the reply that its
source uses. The judge runs at temperature 0 on the model
:mod:`finmath_tasks.scorers.grader` resolves: the ``grader`` role
(``--model-role grader=openai/gpt-4o``), else the evaluated model.

Two readers of a reply (a reader returns the verdict, or None with the reason):

- :func:`parse_yes_no`: the last non-empty line must be Yes or No (optionally
  ``Verdict:``/``Answer:``/``Output:`` before it, emphasis and a final full stop
  allowed).
- :func:`json_verdict_reader`: a JSON object (fenced or bare, the last one that
  has the verdict field) whose verdict field is a string; the verdict is True
  when that string contains a given word, case-insensitively (a substring test,
  as a source that checks ``"yes" in output.lower()`` does), False otherwise.
  Further fields can be required (a source that validates the reply against a
  schema rejects a reply without them).

Outcomes (:class:`JudgeVerdict` ``status``):

- ``yes`` / ``no``: the reader gave a verdict.
- ``unparseable``: the reply could not be read; ``detail`` says why.
- ``error``: the model call failed (the exception is in ``detail``); never raises.

What an unreadable reply or a failed call means for the score is the caller's
decision (a benchmark whose source counts them as "not equivalent" does so,
with the reason in the explanation and a flag).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from inspect_ai.model import GenerateConfig

from finmath_tasks.scorers.grader import Grader
from finmath_tasks.scorers.json_answer import extract_json_object

JUDGE_MAX_TOKENS = 1024
"""The judge's generation limit (the dry run counts its output with it)."""
MAX_REPLY_CHARS = 2000
"""How much of the judge's reply a score keeps."""

JudgeStatus = Literal["yes", "no", "unparseable", "error"]
Reader = Callable[[str], tuple[bool | None, str]]
"""Reads a judge's reply: (verdict, "") or (None, why the reply cannot be read)."""

_PREFIX_RE = re.compile(
    r"^(?:final\s+)?(?:verdict|answer|output|judgement|judgment)\s*[:=-]\s*", re.I
)


@dataclass(frozen=True)
class JudgeVerdict:
    status: JudgeStatus
    reply: str = ""
    detail: str = ""

    @property
    def verdict(self) -> bool | None:
        """True for Yes, False for No, None when there is no verdict."""
        return {"yes": True, "no": False}.get(self.status)


def parse_yes_no(reply: str) -> bool | None:
    """The verdict of a reply whose last non-empty line is Yes or No; else None."""
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1].strip("*_` \t")
    last = _PREFIX_RE.sub("", last).strip("*_` \t").rstrip(".").strip("*_` \t").lower()
    if last == "yes":
        return True
    if last == "no":
        return False
    return None


def last_line_reader(reply: str) -> tuple[bool | None, str]:
    """:func:`parse_yes_no` as a :data:`Reader`."""
    verdict = parse_yes_no(reply)
    if verdict is None:
        return None, f"the judge's reply does not end with Yes or No: {reply.strip()[-200:]!r}"
    return verdict, ""


def json_verdict_reader(
    field: str = "output", accept: str = "yes", required: Sequence[str] = ()
) -> Reader:
    """A :data:`Reader`: the JSON object's ``field`` (a string) contains ``accept``?

    Case-insensitive substring test. The reply is unreadable when it holds no
    JSON object with ``field``, when ``field`` is not a string, or when a
    ``required`` field is missing or not a string.
    """
    word = accept.lower()

    def read(reply: str) -> tuple[bool | None, str]:
        found, how = extract_json_object(reply, field)
        if found is None:
            return None, f"{how}: {reply.strip()[-200:]!r}"
        value = found.get(field)
        if not isinstance(value, str):
            return None, f"the judge's {field!r} field is not a string: {value!r}"[:300]
        for name in required:
            if not isinstance(found.get(name), str):
                return None, f"the judge's JSON object has no {name!r} string"
        return word in value.lower(), ""

    return read


async def judge_equivalence(
    prompt: str,
    grader: Grader,
    max_tokens: int = JUDGE_MAX_TOKENS,
    reader: Reader = last_line_reader,
) -> JudgeVerdict:
    """Ask ``grader`` ``prompt`` and read the reply with ``reader``; never raises."""
    try:
        result = await grader.model.generate(
            prompt, config=GenerateConfig(temperature=0.0, max_tokens=max_tokens)
        )
        reply = result.completion
    except Exception as e:
        return JudgeVerdict(
            "error", detail=f"the judge call failed: {type(e).__name__}: {e}"[:MAX_REPLY_CHARS]
        )
    kept = reply[-MAX_REPLY_CHARS:]
    try:
        verdict, why = reader(reply)
    except Exception as e:  # a reader never ends the evaluation either
        verdict, why = None, f"the judge's reply could not be read: {type(e).__name__}: {e}"
    if verdict is None:
        return JudgeVerdict("unparseable", kept, why[:MAX_REPLY_CHARS])
    return JudgeVerdict("yes" if verdict else "no", kept, "")
