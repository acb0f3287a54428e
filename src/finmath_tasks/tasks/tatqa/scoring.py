"""TAT-QA's official exact match and F1 (``tatqa_eval.py``/``tatqa_metric.py`` of
NExTplusplus/TAT-QA), reimplemented from its definition, quirks included.

How the official evaluation compares a prediction with a gold answer:

1. The gold answers: the list of spans (span, multi-span), ``str(answer)``
   (arithmetic), ``str(int(answer))`` (count).
2. Both sides become ONE string (:func:`answer_string`): the items are sorted as
   strings; an item that reads as a number (its first word, cleaned of ``$ € £ ¥ % ( ) ,
   [ ] ' "``, is a float, and a second word, if any, is a scale word) becomes
   ``'%.4f' % value``, where value is the number with its own scale word, parentheses
   (negative) and ``%`` (x0.01) applied (rounded to 4 decimals), and, when the item
   has no ``%``, first rounded to 2 decimals and multiplied by the scale (gold: the
   question's scale; prediction: the predicted scale, "" for our models); other
   items get ``" " + scale`` appended when there is a scale. The items are joined
   with spaces.
3. For a single-item prediction without a predicted scale and without ``%`` that
   reads as a number, the prediction's ``'%.4f' % value`` (unrounded) is a second
   candidate (so 0.125 matches 12.5 percent).
4. Normalisation (DROP): split on spaces; per token: lower case, punctuation removed
   unless the token reads as a number, a number token replaced by ``str`` of its value,
   articles removed, whitespace collapsed.
5. EM: the normalised strings are equal. F1: token-bag F1 of the two strings,
   rounded to 2 decimals. The best (EM, F1) pair over the candidates counts.
6. For arithmetic and count questions F1 is set to EM. An empty prediction scores 0.

The scale words: hundred (x100, accepted by the parser), thousand, million, billion,
percent (x0.01).
"""

from __future__ import annotations

import re
import string
from typing import Any

from inspect_ai.solver import TaskState

from finmath_tasks.solvers.agents import Answer, Check

_EXCLUDE_IN_NUMBER = set("'\"\\$€£¥%(),[]")
_NUM_RE = re.compile(r"([+-]?\d+(\.\d+)?)|([+-]?\.\d+)")
_NEGATIVE_RE = re.compile(r"(\([\d.\s%]+\))")
_PERCENT_RE = re.compile(r"([\d.\s]+%)")
_WORD_SCALE_RE = re.compile(r"([\d.]+\s?[a-zA-Z]+)")
_ARTICLES_RE = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def scale_to_num(scale: str) -> float:
    scale = scale.lower()
    if "hundred" in scale:
        return 100
    if "thousand" in scale:
        return 1000
    if "million" in scale:
        return 1_000_000
    if "billion" in scale:
        return 1_000_000_000
    if "percent" in scale:
        return 0.01
    return 1


def _clean_num(text: str) -> str:
    return "".join(ch for ch in str(text) if ch not in _EXCLUDE_IN_NUMBER)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except (ValueError, OverflowError):
        return None


def is_number(text: str) -> bool:
    words = " ".join(_clean_num(w) for w in text.split()).split()
    if not words:
        return False
    number = _float(words[0])
    if number is None or number != number:  # NaN
        return False
    return not (len(words) >= 2 and scale_to_num(words[1]) == 1)


def _one_number(text: str) -> int | float | None:
    groups = _NUM_RE.findall(_clean_num(text))
    if not groups or groups[0][0] == "":
        return None
    number = groups[0][0]
    return float(number) if "." in number else int(number)


def _word_scale(text: str) -> float:
    match = _WORD_SCALE_RE.search(text)
    return scale_to_num(match.group(0).lower()) if match else 1


def to_number(text: str) -> float | None:
    number = _one_number(text)
    if number is None:
        return None
    negative = -1 if _NEGATIVE_RE.findall(text.strip()) else 1
    percent = 0.01 if _PERCENT_RE.findall(text.strip()) else 1
    return round(number * _word_scale(text) * negative * percent, 4)


def _normalize_token(token: str) -> str:
    token = token.lower()
    if not is_number(token):
        token = "".join(ch for ch in token if ch not in _PUNCTUATION)
    if is_number(token):
        token = str(to_number(token))
    token = _ARTICLES_RE.sub(" ", token)
    return " ".join(token.split())


def normalize_answer(text: str) -> str:
    parts = [_normalize_token(token) for token in text.split(" ")]
    return " ".join(p for p in parts if p.strip()).strip()


def answer_string(answers: list[Any], scale: str) -> str:
    """Step 2 of the module docstring: the items as one string, scale applied."""
    items = []
    for answer in sorted(str(a) for a in answers):
        if is_number(answer):
            value = to_number(answer)
            if value is None:
                items.append(f"{answer} {scale}" if scale else answer)
            elif "%" in answer:
                items.append(f"{value:.4f}")
            else:
                items.append(f"{round(value, 2) * scale_to_num(scale):.4f}")
        else:
            items.append(f"{answer} {scale}" if scale else answer)
    return " ".join(items)


def _f1(predicted: set[str], gold: set[str]) -> float:
    common = len(gold & predicted)
    precision = common / len(predicted) if predicted else 1.0
    recall = common / len(gold) if gold else 1.0
    if precision == 0.0 and recall == 0.0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _em_f1(predicted: str, gold: str) -> tuple[float, float]:
    p, g = normalize_answer(predicted), normalize_answer(gold)
    em = 1.0 if p == g else 0.0
    return em, round(_f1(set(p.split()), set(g.split())), 2)


def gold_answers(answer: Any, answer_type: str) -> list[Any]:
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
    gold_string = answer_string(gold, scale)
    predicted = prediction if isinstance(prediction, list) else [prediction]
    candidates = [answer_string(predicted, pred_scale)]
    if len(predicted) == 1 and not pred_scale:
        single = str(predicted[0])
        if "%" not in single and is_number(single):
            value = to_number(single)
            if value is not None:
                candidates.append(f"{value:.4f}")
    em, f1 = max(_em_f1(c, gold_string) for c in candidates)
    if answer_type in ("arithmetic", "count"):
        f1 = em
    return em, f1


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
    return Check(
        em == 1.0,
        {"em": em, "f1": f1},
        f"{shown!s:.80} (predicted scale {used!r}): em {em}, f1 {f1}",
        {"pred_scale": used},
    )
