"""toyfin's data: four finance questions written for this template and shipped as package
data (``data/demo.json``). There is no paper, no authors' file and no Hub copy, so its
``DataSource`` names the packaged split alone."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

from inspect_ai.dataset import Dataset, Sample

from finmath_tasks.data_source import DataSource, load_split

Split = Literal["demo"]
SYSTEM_PROMPT = (
    "Solve the finance question step by step. End with the line "
    "'Therefore, the answer is <number>.'"
)
FIELDS = ("id", "question", "answer", "topic")


def demo_file() -> Path:
    return Path(str(resources.files(__package__) / "data" / "demo.json"))


SOURCE = DataSource(
    benchmark="toyfin", packaged={"demo": demo_file()}, id_field="id", answers={"demo": True}
)


def record_to_sample(record: dict[str, Any]) -> Sample:
    """One question: its text as the input, its number as the target, its topic kept."""
    missing = [key for key in FIELDS if key not in record]
    if missing:
        raise ValueError(f"record has no {', '.join(missing)}")
    answer = record["answer"]
    if isinstance(answer, bool) or not isinstance(answer, int | float):
        raise ValueError(f"answer {answer!r} is not a number")
    return Sample(
        id=str(record["id"]),
        input=str(record["question"]),
        target=str(answer),
        metadata={"topic": str(record["topic"])},
    )


def load_dataset(split: Split = "demo") -> Dataset:
    return load_split(SOURCE, split, record_to_sample)
