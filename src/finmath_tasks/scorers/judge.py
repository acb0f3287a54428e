"""An LLM judge of equivalence on the ``grader`` model role, read strictly.

A benchmark that accepts a model's answer when a judge says it is equivalent to
the gold solution passes its own prompt (the prompt must ask for a reply whose
last line is ``Yes`` or ``No``). The judge runs on Inspect's ``grader`` role
(``--model-role grader=openai/gpt-4o``) at temperature 0.

- The reply is read strictly (:func:`parse_yes_no`): its last non-empty line
  must be Yes or No (optionally ``Verdict:``/``Answer:``/``Output:`` before it,
  emphasis and a final full stop allowed). Anything else is ``unparseable``:
  the caller leaves the sample unscored with the reply as the reason, never
  silently wrong.
- Without a ``grader`` role the judge is ``skipped`` (a model never judges its
  own answers here); the caller records that in the score so it shows in the
  results.
- A failed model call is ``error`` with the exception; it never raises.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Literal

from inspect_ai.model import GenerateConfig, get_model

logger = logging.getLogger(__name__)

GRADER_ROLE = "grader"
MAX_REPLY_CHARS = 2000
"""How much of the judge's reply a score keeps."""

JudgeStatus = Literal["yes", "no", "unparseable", "skipped", "error"]

_PREFIX_RE = re.compile(
    r"^(?:final\s+)?(?:verdict|answer|output|judgement|judgment)\s*[:=-]\s*", re.I
)


@dataclass(frozen=True)
class JudgeVerdict:
    status: JudgeStatus
    reply: str = ""
    grader_model: str | None = None
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


def grader_role_bound() -> bool:
    """Whether the eval was given a ``grader`` model role."""
    from inspect_ai.model import model_roles

    return GRADER_ROLE in model_roles()


async def judge_equivalence(prompt: str, max_tokens: int = 1024) -> JudgeVerdict:
    """Ask the grader role ``prompt``; never raises."""
    if not grader_role_bound():
        return JudgeVerdict(
            "skipped",
            detail=f"no {GRADER_ROLE!r} model role (pass --model-role {GRADER_ROLE}=<model>)",
        )
    grader: str | None = None
    try:
        model = get_model(role=GRADER_ROLE)
        grader = str(model)
        result = await model.generate(
            prompt, config=GenerateConfig(temperature=0.0, max_tokens=max_tokens)
        )
        reply = result.completion
    except Exception as e:
        return JudgeVerdict(
            "error", grader_model=grader, detail=f"{type(e).__name__}: {e}"[:MAX_REPLY_CHARS]
        )
    kept = reply[-MAX_REPLY_CHARS:]
    verdict = parse_yes_no(reply)
    if verdict is None:
        return JudgeVerdict(
            "unparseable",
            kept,
            grader,
            f"the judge's reply does not end with Yes or No: {reply.strip()[-200:]!r}",
        )
    return JudgeVerdict("yes" if verdict else "no", kept, grader, "")
