"""``relation_of`` (the search for a number computed from two numbers written beside it)
finds, faster, what the search as first written found: the same relation, or none, on
random numbers shaped like the documents' and on every number of TAT-QA's real tables
and sentences."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from finmath_tasks.variants import (
    Relation,
    Written,
    _rounds_to,
    _significant,
    find_numbers,
    relation_of,
)


def reference_relation_of(
    written: Written,
    operands: Sequence[float],
    changing: int,
    min_digits: int = 2,
    exact_digits: int | None = None,
) -> Relation | None:
    """The search as first written (one pair after another), kept to check the faster one."""
    digits = _significant(written)
    exact_digits = min_digits if exact_digits is None else exact_digits
    if digits < min(min_digits, exact_digits):
        return None
    pairs = [(i, j) for i in range(changing) for j in range(len(operands)) if j != i]
    if digits >= exact_digits:
        for i, j in pairs:
            for relation in (Relation("+", i, j), Relation("-", i, j), Relation("-", j, i)):
                result = relation.apply(operands)
                x, y = operands[relation.x], operands[relation.y]
                exactly = result is not None and round(result, 9) == round(written.value, 9)
                if exactly and result not in (x, y):
                    return relation
    if digits < min_digits:
        return None
    rest: list[Relation] = []
    for i, j in pairs:
        if written.percent:
            rest += [Relation("%", i, j), Relation("%", j, i)]
    if digits > min_digits:
        for i, j in pairs:
            if abs(operands[i]) != 1 and abs(operands[j]) != 1:
                rest += [Relation("*", i, j), Relation("/", i, j), Relation("/", j, i)]
    for relation in rest:
        result = relation.apply(operands)
        if result is None or not _rounds_to(result, written):
            continue
        x, y = operands[relation.x], operands[relation.y]
        if round(abs(x), written.decimals) == round(abs(result), written.decimals):
            continue
        if round(abs(y), written.decimals) == round(abs(result), written.decimals):
            continue
        return relation
    return None


def _numbers(rng: random.Random, n: int) -> list[float]:
    pool = [rng.choice([1.0, 0.0, 100.0, 2.0]) for _ in range(2)]
    for _ in range(n):
        kind = rng.random()
        if kind < 0.4:
            pool.append(float(rng.randint(1, 99999)))
        elif kind < 0.7:
            pool.append(round(rng.uniform(0, 500), rng.randint(1, 3)))
        elif kind < 0.85 and pool:
            pool.append(rng.choice(pool))
        else:
            pool.append(float(rng.randint(1, 20)))
    rng.shuffle(pool)
    return pool[:n]


def _written_for(rng: random.Random, values: Sequence[float]) -> Written:
    """A number written from two of ``values`` combined (or at random), at some precision."""
    x, y = rng.choice(values), rng.choice(values)
    ops = [x + y, x - y, y - x, x * y, x / y if y else 1.5, (x - y) / y * 100 if y else 7.0]
    value = rng.choice([*ops, rng.uniform(0, 1000)])
    decimals = rng.choice([0, 1, 2])
    percent = rng.random() < 0.3
    text = f"{abs(value):.{decimals}f}" + ("%" if percent else "")
    [written] = find_numbers(text)
    return written


def test_the_same_relation_as_the_search_as_first_written_on_random_numbers() -> None:
    rng = random.Random(7)
    found = 0
    for _ in range(4000):
        values = _numbers(rng, rng.randint(2, 12))
        written = _written_for(rng, values)
        changing = rng.randint(1, len(values))
        for digits in ((2, None), (3, 1), (2, 3)):
            expected = reference_relation_of(written, values, changing, *digits)
            assert relation_of(written, values, changing, *digits) == expected
            found += expected is not None
    assert found > 1000  # the relations were there to find, not only their absence


@pytest.mark.realdata
def test_the_same_relation_on_every_number_of_tatqas_documents(data_dir: Path) -> None:
    from finmath_tasks.tasks.tatqa.document import Document
    from finmath_tasks.tasks.tatqa.variants import load_dataset

    checked = found = 0
    seen: set[str] = set()
    for sample in load_dataset("dev", str(data_dir)):
        metadata = sample.metadata or {}
        if metadata["document"] in seen:
            continue
        seen.add(metadata["document"])
        document = Document.of(metadata)
        for _name, places in document.groups():
            values = [abs(document.value(p)) for p in places]
            for k, place in enumerate(places[:12]):
                others = values[:k] + values[k + 1 :]
                if not others:
                    continue
                written = document.written(place)
                for changing in {1, min(3, len(others))}:
                    expected = reference_relation_of(written, others, changing, 2, 1)
                    assert relation_of(written, others, changing, 2, 1) == expected
                    checked += 1
                    found += expected is not None
    assert checked > 5000 and found > 100
