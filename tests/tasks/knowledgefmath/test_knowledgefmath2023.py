"""``knowledgefmath2023``: the first release's scoring (3166a77, the paper's Tables 4 and 5).

Expected verdicts are written by hand from the first release's rules (as measured from its
code, and the description in ``scoring2023.py``), beside the camera-ready
release's (``financemath``) for the same reply or program.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.dataset import MemoryDataset, Sample

from eval_helpers import metric, scripted, whole_score
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.numeric import ReadingInput
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.programs import (
    extract_program,
    january_program,
    reference_program,
)
from finmath_tasks.tasks.knowledgefmath.scoring import financemath_compare
from finmath_tasks.tasks.knowledgefmath.scoring2023 import compare_2023, read_reply_2023

BWRAP_OK, BWRAP_REASON = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")


# --- the comparison ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "g", "correct"),
    [
        (100.0, 100.0, True),
        (103.9, 100.0, True),  # within 4%
        (96.1, 100.0, True),
        (104.1, 100.0, False),
        (95.9, 100.0, False),
        (-100.0, 100.0, True),  # opposite sign, |p| within 4% of |g|
        (-103.0, 100.0, True),
        (-105.0, 100.0, False),
        (0.0, -3.0, False),
        (1.0, 100.0, True),  # 100|p| = |g|, |p| <= |g|/50
        (1.03, 100.0, True),  # 100|p| within 4%
        (-1.0, 100.0, True),  # on absolute values
        (10000.0, 100.0, True),  # |p| = 100|g|
        (-10300.0, 100.0, True),
        (0.1, 100.0, False),  # x1000: its guard and tolerance exclude each other
        (100000.0, 100.0, False),
        (0.0001, 100.0, False),  # x1,000,000 likewise
        (1e8, 100.0, False),
        (10.0, 100.0, False),  # x10: never
        (1000.0, 100.0, False),
        (0.0, 0.0, True),
        (1e-9, 0.0, False),
        (math.nan, 5.0, False),
        (math.inf, 5.0, False),
        (-math.inf, -5.0, False),
        (1e308, 1e-308, False),  # overflows to infinity in the rules: no match, no error
    ],
)
def test_comparison_2023(p: float, g: float, correct: bool) -> None:
    assert compare_2023(p, g).correct is correct


def test_the_two_releases_disagree_in_both_directions() -> None:
    # 3% off: 2023 yes, camera-ready no; x1000: 2023 no, camera-ready yes
    assert compare_2023(103.0, 100.0).correct and not financemath_compare(103.0, 100.0).correct
    assert not compare_2023(100000.0, 100.0).correct
    assert financemath_compare(100000.0, 100.0).correct


# --- the CoT reading: float() alone, the last of up to four replies --------------------


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("1234.5", 1234.5),
        (" 7\n", 7.0),
        ("1.234e+03", 1234.0),
        ("-0.5", -0.5),
        ("1_000", 1000.0),  # Python's float() reads it
        ("7 years", None),
        ("approximately 7", None),
        ("12%", None),
        ("$1,234", None),
        ("1,234", None),
        ("7.", 7.0),
        ("The answer is 7", None),
        ("", None),
    ],
)
def test_reply_is_read_with_float_alone(reply: str, value: float | None) -> None:
    reading = read_reply_2023(ReadingInput(output="", reply=reply, replies=(reply,)))
    assert reading is not None and reading.value == value
    assert reading.flags == (() if value is not None else ("not_a_float",))


def test_reading_takes_the_last_of_up_to_four_replies() -> None:
    replies = ("None", "none of them", "42")
    reading = read_reply_2023(ReadingInput(output="", reply="none of them", replies=replies))
    assert reading is not None and (reading.value, reading.reply_index) == (42.0, 2)
    nones = ("None",) * 4
    reading = read_reply_2023(ReadingInput(output="", reply="None", replies=nones))
    assert reading is not None and reading.value is None and reading.reply_index == 3
    assert read_reply_2023(ReadingInput(output="x")) is None  # rules extractor: no reply


# --- the reply shapes the reference reads, through a real eval -------------------------

ReplyFn = Callable[[float], list[str]]
# name -> (the grader's replies, in order; expected 2023 verdict; expected financemath verdict
# or None where it depends on the gold's digits)
REPLY_SHAPES: dict[str, tuple[ReplyFn, bool, bool | None]] = {
    "g": (lambda g: [repr(g)], True, True),
    "g x 100": (lambda g: [repr(g * 100)], True, True),
    "scientific": (lambda g: [f"{g:e}"], True, True),
    "g x 1.03": (lambda g: [repr(g * 1.03)], True, False),
    "g/100": (lambda g: [repr(g / 100)], True, None),
    "-g": (lambda g: [repr(-g)], True, True),
    "g x 1000": (lambda g: [repr(g * 1000)], False, True),
    "g years": (lambda g: [f"{g!r} years"], False, True),
    "approximately g": (lambda g: [f"approximately {g!r}"], False, True),
    "g%": (lambda g: [f"{g!r}%"], False, True),
    "$g with separators": (lambda g: [f"${g:,}"], False, None),
    "g x 1.05": (lambda g: [repr(g * 1.05)], False, False),
    "None": (lambda g: ["None"] * 4, False, False),
    "None, then g": (lambda g: ["None", repr(g)], True, True),
    "None twice, then g": (lambda g: ["None", "none", repr(g)], True, False),
    "None 3 times, then g": (lambda g: ["None", "NONE", "None.", repr(g)], True, False),
}


@pytest.mark.slow
def test_reply_shapes_give_the_first_release_verdicts(tmp_path: Path) -> None:
    task = knowledgefmath(split="demo", solver="cot", extractor="model")
    questions = [s for s in task.dataset if abs(float(s.target)) >= 1][:3]  # type: ignore[arg-type]
    samples, replies = [], []
    for name, (make, _, _) in REPLY_SHAPES.items():
        for q in questions:
            samples.append(q.model_copy(update={"id": f"{q.id}|{name}"}))
            replies += make(float(q.target))  # type: ignore[arg-type]
    task.dataset = MemoryDataset(samples)
    [log] = eval(
        task,
        model=scripted(["... Therefore, the answer is 1."] * len(samples)),
        model_roles={"grader": scripted(replies)},
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
    )
    assert log.status == "success" and log.samples is not None
    assert len(log.samples) == len(samples)
    for sample in log.samples:
        name = str(sample.id).split("|", 1)[1]
        _, january, camera_ready = REPLY_SHAPES[name]
        score = whole_score(sample)
        assert isinstance(score.value, dict)
        assert (score.value["knowledgefmath2023"] == 1.0) is january, (name, score.explanation)
        if camera_ready is not None:
            assert (score.value["financemath"] == 1.0) is camera_ready, (name, score.explanation)
    expected = sum(j for _, j, _ in REPLY_SHAPES.values()) / len(REPLY_SHAPES)
    assert metric(log, "knowledgefmath2023") == pytest.approx(expected)
    not_floats = sum(
        n in ("g years", "approximately g", "g%", "$g with separators") for n in REPLY_SHAPES
    )
    assert metric(log, "knowledgefmath2023", "not_a_float") == not_floats * len(questions)


# --- PoT: the program cuts of both releases ------------------------------------------

ONE_FENCE = "def solution():\n    return 2.5\n```\nThis returns the answer."
FENCE_AT_END = "def solution():\n    return 2.5\n```"
INDENTED_BLOCK = "```python\n    def solution():\n        return 2.5\n```"


def test_program_cuts() -> None:
    # one fence with the signature: the reference runs the whole text (a syntax error)
    assert extract_program(ONE_FENCE) == "def solution():\n    return 2.5"
    assert reference_program(ONE_FENCE) == ONE_FENCE.strip()
    assert january_program(ONE_FENCE) == ONE_FENCE.strip()
    # a fence at the very end: the camera-ready release trims it, the first does not
    assert reference_program(FENCE_AT_END) == "def solution():\n    return 2.5"
    assert january_program(FENCE_AT_END) == FENCE_AT_END
    # an indented block: the camera-ready release strips the first line's indentation
    assert reference_program(INDENTED_BLOCK) == "def solution():\n        return 2.5"
    assert january_program(INDENTED_BLOCK) == "    def solution():\n        return 2.5"
    assert reference_program("```python\nimport argparse\n```") == ""
    assert january_program("```python\nimport argparse\n```") == ""
    assert reference_program("") == ""


# name -> (output, gold program, 2023 correct, financemath correct, financemath executed)
GOLD = "def solution():\n    return 2.5"
INT_GOLD = "def solution():\n    return 175"
POT_SHAPES: dict[str, tuple[str, str, bool, bool, bool]] = {
    "fenced, right": ("```python\ndef solution():\n    return 2.5\n```", GOLD, True, True, True),
    "returns a string": (
        '```python\ndef solution():\n    return "2.5"\n```',
        GOLD,
        True,
        True,
        True,
    ),
    "3% off": ("```python\ndef solution():\n    return 2.575\n```", GOLD, True, False, True),
    "prints": ("```python\ndef solution():\n    print(2.5)\n```", GOLD, False, False, True),
    "one fence, prose after": (ONE_FENCE, GOLD, False, False, False),
    "fence at the end": (FENCE_AT_END, GOLD, False, True, True),
    "indented block": (INDENTED_BLOCK, GOLD, False, True, True),
    "integer gold, right": (
        "```python\ndef solution():\n    return 175\n```",
        INT_GOLD,
        False,
        True,
        True,
    ),
    "integer gold, float": (
        "```python\ndef solution():\n    return 175.0\n```",
        INT_GOLD,
        False,
        True,
        True,
    ),
    "argparse": (
        "```python\nimport argparse\ndef solution():\n    return 2.5\n```",
        GOLD,
        False,
        False,
        False,
    ),
}


@pytest.mark.slow
@needs_bwrap
@pytest.mark.bwrap
def test_program_shapes_give_the_first_release_verdicts(tmp_path: Path) -> None:
    task = knowledgefmath(split="demo", solver="pot")
    samples = [
        Sample(
            id=name,
            input="q",
            target="175.0" if gold == INT_GOLD else "2.5",
            metadata={"question": "q", "tables": [], "topic": "t", "gold_program": gold},
        )
        for name, (_, gold, *_) in POT_SHAPES.items()
    ]
    task.dataset = MemoryDataset(samples)
    outputs = [shape[0] for shape in POT_SHAPES.values()]
    [log] = eval(
        task,
        model=scripted(outputs),
        sandbox="finmath_bwrap",
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
    )
    assert log.status == "success" and log.samples is not None
    for sample in log.samples:
        _, _, january, camera_ready, executed = POT_SHAPES[str(sample.id)]
        score = whole_score(sample)
        assert isinstance(score.value, dict) and score.metadata is not None
        why = (sample.id, score.explanation)
        assert (score.value["knowledgefmath2023"] == 1.0) is january, why
        assert (score.value["financemath"] == 1.0) is camera_ready, why
        assert (score.value["execution_rate"] == 1.0) is executed, why
    scores = {str(s.id): whole_score(s) for s in log.samples}
    # ours runs the program before the lone fence and credits it; the reference does not
    one_fence = scores["one fence, prose after"]
    assert one_fence.value["tolerant"] == 1.0  # type: ignore[index]
    assert one_fence.value["strict_execution_rate"] == 1.0  # type: ignore[index]
    assert "SyntaxError" in one_fence.metadata["program"]["alternatives"]["financemath"]["error"]  # type: ignore[index]
    # the reference's cut failed where the model's program ran: the harness, not the model
    for name in ("one fence, prose after", "argparse"):
        key_scores = {s.id: s.scores for s in log.samples}[name]
        assert key_scores["financemath"].metadata["error_class"] == "harness:program_cut", name  # type: ignore[index]
    assert "integer gold" in (scores["integer gold, right"].explanation or "")
    assert metric(log, "knowledgefmath2023", "integer_gold") == 2


@pytest.mark.slow
@needs_bwrap
@pytest.mark.bwrap
def test_program_repair_makes_every_score_read_our_cut(tmp_path: Path) -> None:
    task = knowledgefmath(split="demo", solver="pot", program_repair=True)
    task.dataset = MemoryDataset(
        [
            Sample(
                id="one fence",
                input="q",
                target="2.5",
                metadata={"question": "q", "tables": [], "topic": "t", "gold_program": GOLD},
            )
        ]
    )
    [log] = eval(
        task,
        model=scripted([ONE_FENCE]),
        sandbox="finmath_bwrap",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success" and log.samples is not None
    score = whole_score(log.samples[0])
    assert score.value == {
        "financemath": 1.0,
        "knowledgefmath2023": 1.0,
        "tolerant": 1.0,
        "execution_rate": 1.0,
        "strict_execution_rate": 1.0,
    }
    assert score.metadata is not None and not score.metadata["program"].get("alternatives")


def test_extractor_messages_user_sends_one_user_message(tmp_path: Path) -> None:
    from inspect_ai.log import resolve_sample_attachments

    from finmath_tasks.tasks.knowledgefmath.scoring import EXTRACTION_INSTRUCTION

    task = knowledgefmath(split="demo", solver="cot", extractor="model", extractor_messages="user")
    task.dataset = task.dataset[:1]
    gold = float(task.dataset[0].target)  # type: ignore[arg-type]
    [log] = eval(
        task,
        model=scripted(["... Therefore, the answer is 1."]),
        model_roles={"grader": scripted([repr(gold)])},
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success" and log.samples is not None
    sample = resolve_sample_attachments(log.samples[0])
    [ask] = [e for e in sample.events if e.event == "model" and e.role == "grader"]
    [message] = ask.input
    assert message.role == "user"
    assert message.text.startswith(EXTRACTION_INSTRUCTION.strip())
    assert "\n\nQuestion: " in message.text and "\nSolution:\n... Therefore" in message.text
    assert (ask.config.temperature, ask.config.max_tokens) == (1.0, 16)
    assert metric(log, "financemath") == 1.0
