"""TAT-QA's official exact match and F1 (``tatqa_eval.py``/``tatqa_metric.py`` of
NExTplusplus/TAT-QA), reimplemented from its definition, quirks included.

How the official evaluation compares a prediction with a gold answer:

1. The gold answers: the list of spans (span, multi-span), ``str(answer)``
   (arithmetic), ``str(int(answer))`` (count).
2. Both sides become ONE string (:func:`answer_string`): the items are sorted as
   strings; an item that reads as a number (see "Reading a number" below) becomes
   ``'%.4f' % value``, where value is the number with its own scale word, parentheses
   (negative) and ``%`` (x0.01) applied (rounded to 4 decimals), and, when the item
   has no ``%``, first rounded to 2 decimals and multiplied by the scale (gold: the
   question's scale; prediction: the predicted scale, "" for our models); other
   items get ``" " + scale`` appended when there is a scale. The items are joined
   with spaces.
3. For a single-item prediction without a predicted scale and without ``%`` that
   reads as a number, the prediction's ``'%.4f' % value`` (unrounded) is a second
   candidate (so 0.125 matches 12.5 percent).
4. Normalisation (DROP's): split on single spaces; per token: lower case; ASCII
   punctuation removed unless the token reads as a number; a token that (then) reads
   as a number replaced by ``str`` of its value (``"1,234"`` -> ``"1234"``,
   ``"1.50"`` -> ``"1.5"``); the articles a/an/the removed as words; whitespace
   collapsed; empty tokens dropped.
5. EM: the normalised strings are equal. F1: F1 of the two strings' token SETS
   (repeated tokens count once), rounded to 2 decimals. The best (EM, F1) pair over
   the candidates counts.
6. For arithmetic and count questions F1 is set to EM. An empty prediction scores 0.

Reading a number (the parser's quirks, all kept):

- "Is it a number?" looks at words: with the symbols ``$ € £ ¥ % ( ) , [ ] ' " \\``
  deleted, the first word must be a Python float other than NaN (so ``inf`` and
  ``1e5`` qualify), and a second word, if any, must contain a scale word.
- The value is the first numeric literal (``[+-]digits[.digits]``) of the item with
  those symbols deleted: an int without a point, a float with one. When that first
  literal has no digit before its point (``.5``, ``-.5%``) there is no value at all,
  and neither is there one without digits (``inf``); such an item counts as text,
  and in normalisation becomes the token ``None``.
- The scale word is the first run of ASCII letters that follows a run of digits and
  points, directly or after one whitespace character; it counts if it CONTAINS a
  scale word (``millions``). A scale word after a closing parenthesis is therefore
  missed (``$(1234.5) million`` is -1234.5).
- Negative: somewhere a parenthesis holds only digits, points, whitespace and ``%``
  (``(1,234.5)`` is not negative: the comma).
- Percent (x0.01): somewhere a ``%`` directly follows a digit, point or whitespace
  (leading whitespace of the item aside).
- value = literal x scale word, negated, x0.01, rounded to 4 decimals; an int
  stays an int when nothing makes it a float.

The scale words, first match wins: hundred (x100, accepted by the parser), thousand,
million, billion, percent (x0.01).
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Any

from inspect_ai.solver import TaskState

from finmath_tasks.scorers.error_classes import ERROR_CLASS_KEY
from finmath_tasks.solvers.agents import Answer, Check
from finmath_tasks.solvers.agents.scoring import as_text
from finmath_tasks.tasks.tatqa.error_classes import official_classes

# The scale words with their factors, in the order they are looked for.
_SCALES: tuple[tuple[str, int | float], ...] = (
    ("hundred", 100),
    ("thousand", 1_000),
    ("million", 1_000_000),
    ("billion", 1_000_000_000),
    ("percent", 0.01),
)
# Symbols deleted before a number is read.
_DROP_SYMBOLS = str.maketrans("", "", "$€£¥%()[],'\"\\")
_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)
_LITERAL = re.compile(r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)")
_SCALE_WORD = re.compile(r"[\d.]\s?([A-Za-z]+)")
_PARENTHESISED = re.compile(r"\((?:[\d.%]|\s)+\)")
_PERCENT_SIGN = re.compile(r"[\d.\s]%")
_ARTICLE = re.compile(r"\b(?:the|an|a)\b")


def scale_factor(word: str) -> int | float:
    """The factor of the first scale word ``word`` contains, else 1."""
    lowered = word.lower()
    return next((factor for name, factor in _SCALES if name in lowered), 1)


def is_number(text: str) -> bool:
    """Whether the official parser takes ``text`` for a number (module docstring)."""
    words = text.translate(_DROP_SYMBOLS).split()
    if not words:
        return False
    try:
        first = float(words[0])
    except ValueError:
        return False
    if math.isnan(first):
        return False
    return len(words) == 1 or scale_factor(words[1]) != 1


@dataclass(frozen=True)
class _NumberReading:
    """What the official parser reads from one item (module docstring)."""

    literal: str | None
    factor: int | float
    negative: bool
    percent: bool

    @classmethod
    def of(cls, text: str) -> _NumberReading:
        found = _LITERAL.search(text.translate(_DROP_SYMBOLS))
        literal = None
        if found is not None and not found.group().lstrip("+-").startswith("."):
            literal = found.group()
        word = _SCALE_WORD.search(text)
        return cls(
            literal=literal,
            factor=scale_factor(word.group(1)) if word else 1,
            negative=_PARENTHESISED.search(text) is not None,
            percent=_PERCENT_SIGN.search(text.strip()) is not None,
        )

    @property
    def value(self) -> int | float | None:
        if self.literal is None:
            return None
        try:
            number: int | float = float(self.literal) if "." in self.literal else int(self.literal)
            float(number)  # the comparison writes it as a float
        except (ValueError, OverflowError):  # digits beyond Python's int or float range
            return None
        number = number * self.factor
        if self.negative:
            number = -number
        if self.percent:
            number = number * 0.01
        return round(number, 4)


def to_number(text: str) -> int | float | None:
    """The value the official parser reads from ``text`` (None: no value)."""
    return _NumberReading.of(text).value


def _numeric_value(text: str) -> int | float | None:
    """The value of an item that reads as a number; None for text."""
    return to_number(text) if is_number(text) else None


def _normal_token(token: str) -> str:
    token = token.lower()
    if not is_number(token):
        token = token.translate(_DROP_PUNCTUATION)
        if not is_number(token):
            return " ".join(_ARTICLE.sub(" ", token).split())
    return str(to_number(token))


def normalize_answer(text: str) -> str:
    """Step 4 of the module docstring."""
    return " ".join(filter(None, map(_normal_token, text.split(" "))))


def answer_string(answers: list[Any], scale: str) -> str:
    """Step 2 of the module docstring: the items as one string, scale applied."""

    def written(item: str) -> str:
        value = _numeric_value(item)
        if value is None:
            return f"{item} {scale}" if scale else item
        if "%" in item:
            return f"{value:.4f}"
        return f"{round(value, 2) * scale_factor(scale):.4f}"

    return " ".join(written(item) for item in sorted(map(str, answers)))


def _set_f1(predicted: set[str], gold: set[str]) -> float:
    if not predicted or not gold:
        return 1.0 if predicted == gold else 0.0
    shared = len(predicted & gold)
    if not shared:
        return 0.0
    precision, recall = shared / len(predicted), shared / len(gold)
    return 2 * precision * recall / (precision + recall)


def _compare(candidate: str, gold: str) -> tuple[float, float]:
    """(EM, F1) of one candidate string against the normalised gold string."""
    predicted = normalize_answer(candidate)
    return (
        float(predicted == gold),
        round(_set_f1(set(predicted.split()), set(gold.split())), 2),
    )


def gold_answers(answer: Any, answer_type: str) -> list[Any]:
    """Step 1 of the module docstring."""
    if answer_type in ("span", "multi-span"):
        return list(answer) if isinstance(answer, list) else [answer]
    if answer_type == "count":
        return [str(int(float(answer)))]
    return [str(answer)]


def em_f1(
    prediction: Answer,
    *,
    answer: Any,
    answer_type: str,
    scale: str,
    pred_scale: str = "",
) -> tuple[float, float]:
    """The official (EM, F1) of ``prediction`` for one question."""
    if not prediction:
        return 0.0, 0.0
    gold = gold_answers(answer, answer_type)
    if not gold:
        return 0.0, 0.0
    normal_gold = normalize_answer(answer_string(gold, scale))
    items = prediction if isinstance(prediction, list) else [prediction]
    candidates = [answer_string(items, pred_scale)]
    if len(items) == 1 and not pred_scale and "%" not in str(items[0]):
        value = _numeric_value(str(items[0]))
        if value is not None:
            candidates.append(f"{value:.4f}")
    em, f1 = max(_compare(candidate, normal_gold) for candidate in candidates)
    return (em, em) if answer_type in ("arithmetic", "count") else (em, f1)


_TRAILING_SCALE_RE = re.compile(
    r"^(.*\S)\s+(thousand|million|billion|percent)\s*\.?$|^(.*\S)\s*(%)\s*\.?$", re.IGNORECASE
)


def split_scale(prediction: Answer) -> tuple[Answer, str]:
    """A model's answer text as the official (answer, scale) pair.

    The official evaluation takes the predicted scale separately; our models write it
    in the answer ("1,496.5 million", "(134) thousand", "(59.9)%"). When every item ends
    with the same scale word (or a % sign: percent), that is the predicted scale and is
    cut off; otherwise the predicted scale is "" and the text is kept.
    """
    if not prediction:
        return prediction, ""
    items = prediction if isinstance(prediction, list) else [prediction]
    parts: list[tuple[str, str]] = []
    for item in items:
        m = _TRAILING_SCALE_RE.match(str(item).strip())
        if m is None:
            return prediction, ""
        text, word = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), "percent")
        parts.append((text, word.lower()))
    scales = {word for _, word in parts}
    if len(scales) != 1:
        return prediction, ""
    stripped = [text for text, _ in parts]
    return (stripped if isinstance(prediction, list) else stripped[0]), scales.pop()


def official_check(answer: Answer, state: TaskState) -> Check:
    """The agents' check for ``subset=all``: official EM (primary) and F1.

    The answer is scored as written (predicted scale "") and, when it ends with a scale
    word, also as (text without the word, that scale) (:func:`split_scale`); the better
    reading counts. The two differ only where the official parser misses a scale word
    ("(134) thousand"), or where a gold span itself holds the word with no scale.
    """
    metadata = state.metadata or {}
    gold_answer = metadata.get("answer")
    answer_type = str(metadata.get("answer_type", ""))
    scale = str(metadata.get("scale") or "")
    readings = [(answer, "")]
    stripped, pred_scale = split_scale(answer)
    if pred_scale:
        readings.append((stripped, pred_scale))
    (em, f1), used = max(
        (em_f1(text, answer=gold_answer, answer_type=answer_type, scale=scale, pred_scale=p), p)
        for text, p in readings
    )
    shown = answer if isinstance(answer, str) else repr(answer)
    classes: dict[str, str] = {}
    if as_text(answer).strip() and (em < 1 or f1 < 1):
        relabelled, _ = em_f1(
            stripped if pred_scale else answer,
            answer=gold_answer,
            answer_type=answer_type,
            scale=scale,
            pred_scale=scale,
        )
        classes = official_classes(
            answer,
            em=em,
            f1=f1,
            relabelled_em=relabelled if scale else 0.0,
            answer_type=answer_type,
            predicted=_official_value(answer),
            gold=_gold_value(gold_answer, answer_type, scale),
        )
    return Check(
        em == 1.0,
        {"em": em, "f1": f1},
        f"{shown!s:.80} (predicted scale {used!r}): em {em}, f1 {f1}",
        {"pred_scale": used, **({ERROR_CLASS_KEY: classes} if classes else {})},
    )


def _official_value(answer: Answer) -> float | None:
    """A one-item answer's value as the official parser reads it (scale word, %, parentheses)."""
    items = answer if isinstance(answer, list) else [answer]
    if len(items) != 1:
        return None
    value = _numeric_value(str(items[0]))
    return float(value) if value is not None else None


def _gold_value(answer: Any, answer_type: str, scale: str) -> float | None:
    """The gold's value as the official comparison writes it (its scale applied)."""
    try:
        items = gold_answers(answer, answer_type)
    except (TypeError, ValueError):
        return None
    if len(items) != 1:
        return None
    item = str(items[0])
    value = _numeric_value(item)
    if value is None:
        return None
    return float(value) if "%" in item else round(value, 2) * scale_factor(scale)
