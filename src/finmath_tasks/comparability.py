"""Whether two runs may be compared, and for what: the one rule every table, pair and
resume asks (:func:`comparable`).

A run is known by its identity (:mod:`finmath_tasks.identity`). Two runs are compared
for one of these purposes:

``same``
    Every part of their identities equal (parts named in ``unknown`` and absent from the
    first not compared): the same setting. With Inspect task ids, ``attempt`` (one task
    id: a resumed or retried run) and ``repeat`` (several task ids: independent repeats)
    tell the two kinds of sameness apart.
``paired``
    Two runs of one task on the same data (equal data fingerprints; a task that records
    none is paired on its sample ids, and the verdict says so), compared question by
    question on the samples both scored. Any other setting may differ: that is what a
    paired comparison measures. Runs on different data only when asked
    (``across_data``), and the verdict says so.
``variant``
    An original run (``variant=original``) and a fresh variant of its questions
    (``variant=fresh``, a seed >= 1): their identities differ only in the variant and
    what it changes (:data:`VARIANT_PARTS`), and the data the variant was instantiated
    from has the original run's data fingerprint (the variant's provenance keeps the
    fingerprint of the data it was drawn from: the identity part ``data.origin``). The
    variant and seed are the provenance's (``data.variant``) where the log records them; a
    log whose task arguments name another is refused, with both named.

A verdict that refuses says why; one that accepts may carry a note to print beside the
pair.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from finmath_tasks.identity import Identity, difference
from finmath_tasks.variants import derived_fingerprint, is_fresh

Purpose = Literal["same", "attempt", "repeat", "paired", "variant"]
PURPOSES: tuple[Purpose, ...] = ("same", "attempt", "repeat", "paired", "variant")

VARIANT_PARTS = frozenset(
    {"arg.variant", "arg.variant_seed", "data", "data.origin", "data.variant", "samples"}
)  # fmt: skip
"""The identity parts in which a fresh run may differ from its original run: the variant
and its seed, and what they change (the data fingerprint, the sample ids: a fresh variant
covers the questions it could instantiate)."""


@dataclass(frozen=True)
class Verdict:
    """Whether two runs may be compared for a purpose; ``reason``: why not, or (when they
    may) a note to say beside the comparison ("" when there is nothing to say)."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


def comparable(
    a: Identity,
    b: Identity,
    purpose: Purpose,
    *,
    unknown: Iterable[str] = (),
    task_ids: tuple[str, str] | None = None,
    across_data: bool = False,
) -> Verdict:
    """Whether the runs of identities ``a`` and ``b`` may be compared for ``purpose`` (see
    the module's documentation), and if not, why.

    ``unknown``: for ``same``/``attempt``/``repeat``, parts ``a`` may not know (a run
    planned before it starts); ``task_ids``: the two logs' Inspect task ids (needed by
    ``attempt`` and ``repeat``); ``across_data``: ``paired`` accepts runs on different
    data (with a note). For ``variant``, ``a`` is the original run and ``b`` the fresh
    one.
    """
    if purpose not in PURPOSES:
        raise ValueError(f"unknown purpose {purpose!r}: one of {', '.join(PURPOSES)}")
    if a.get("task") != b.get("task"):
        return Verdict(False, f"different tasks ({_value(a, 'task')}, {_value(b, 'task')})")
    if purpose in ("same", "attempt", "repeat"):
        return _same(a, b, purpose, unknown, task_ids)
    if purpose == "paired":
        return _paired(a, b, across_data)
    return _variant(a, b)


def _value(identity: Identity, name: str) -> object:
    text = identity.get(name)
    return None if text is None else json.loads(text)


def _same(
    a: Identity,
    b: Identity,
    purpose: Purpose,
    unknown: Iterable[str],
    task_ids: tuple[str, str] | None,
) -> Verdict:
    if not a.matches(b, unknown):
        skip = {n for n in unknown if a.get(n) is None}
        parts = [n for n in difference(a, b) if n not in skip]
        return Verdict(False, "other settings: " + ", ".join(parts))
    if purpose == "same":
        return Verdict(True)
    if task_ids is None:
        raise ValueError(f"purpose {purpose!r} needs both logs' task ids")
    one = task_ids[0] == task_ids[1]
    if purpose == "attempt" and not one:
        return Verdict(False, "one setting but other Inspect task ids: repeats, not attempts")
    if purpose == "repeat" and one:
        return Verdict(False, "one Inspect task id: attempts of one run, not repeats")
    return Verdict(True)


def _fingerprint(identity: Identity, name: str = "data") -> str | None:
    value = _value(identity, name)
    return None if value is None else str(value)


def _paired(a: Identity, b: Identity, across_data: bool) -> Verdict:
    fa, fb = _fingerprint(a), _fingerprint(b)
    if fa is not None and fa == fb:
        return Verdict(True)
    if fa is None and fb is None:
        return Verdict(True, "neither log records its data fingerprint: paired on sample ids only")
    said = f"data {_short(fa)} and data {_short(fb)}"
    if across_data:
        return Verdict(True, f"DIFFERENT DATA (paired on request, --pair-across-data): {said}")
    if _is_fresh(a) != _is_fresh(b):
        return Verdict(
            False,
            f"an original run and a fresh variant ({said}): compared in the memorisation gap only",
        )
    return Verdict(False, f"different data ({said})")


def _short(fingerprint: str | None) -> str:
    return "not recorded" if fingerprint is None else fingerprint[:8]


def _argued(identity: Identity) -> tuple[str, int] | None:
    """(variant, seed) as the run's task arguments name them; None for another task."""
    args = identity.args()
    if "variant" not in args:
        return None
    try:
        return str(args["variant"]), int(args.get("variant_seed") or 0)
    except (TypeError, ValueError, OverflowError):  # an edited log's Infinity or "x"
        return None


def _recorded(identity: Identity) -> tuple[str, int] | None:
    """(variant, seed) as the run's data provenance records them (``data.variant``); None
    where it records none (the original questions, or a log older than the record)."""
    value = _value(identity, "data.variant")
    if not isinstance(value, dict) or not isinstance(value.get("seed"), int):
        return None
    return str(value.get("name")), int(value["seed"])


def variant_of(identity: Identity) -> tuple[str, int] | None:
    """(variant, seed) of a run of a task with variants, read from its data provenance
    where it records them (the questions the run was given), else from its task
    arguments; None for another task."""
    return _recorded(identity) or _argued(identity)


def variant_contradiction(identity: Identity) -> str | None:
    """Why a run's task arguments contradict the variant its data provenance records (an
    edited log, or arguments rewritten after the run); None when they agree."""
    recorded, argued = _recorded(identity), _argued(identity)
    if recorded is None or recorded == argued:
        return None
    said = "none" if argued is None else f"variant={argued[0]} variant_seed={argued[1]}"
    return (
        f"task arguments ({said}) contradict its data provenance "
        f"(variant {recorded[0]}, seed {recorded[1]})"
    )


def _is_fresh(identity: Identity) -> bool:
    found = variant_of(identity)
    return found is not None and is_fresh(*found)


def origin(identity: Identity) -> str | None:
    """The fingerprint of the data a run's questions come from: a fresh variant's
    original data (recorded in its provenance; for a log that does not record it, the
    original whose derived fingerprint is the variant's cannot be named: None), else the
    run's own data."""
    if not _is_fresh(identity):
        return _fingerprint(identity)
    return _fingerprint(identity, "data.origin")


def _variant(original: Identity, fresh: Identity) -> Verdict:
    for run, identity in (("original", original), ("fresh", fresh)):
        contradiction = variant_contradiction(identity)
        if contradiction is not None:
            return Verdict(False, f"the {run} run's {contradiction}")
    which = variant_of(original)
    if which is None or is_fresh(*which):
        return Verdict(False, "the first run is not a run on the original questions")
    found = variant_of(fresh)
    if found is None or not is_fresh(*found):
        return Verdict(False, "the second run is not a fresh variant (variant=fresh, seed >= 1)")
    other = [n for n in difference(original, fresh) if n not in VARIANT_PARTS]
    if other:
        return Verdict(False, "other settings besides the variant: " + ", ".join(other))
    mine = _fingerprint(original)
    drawn_from = origin(fresh)
    if (
        drawn_from is None
        and mine is not None
        and derived_fingerprint(mine, found[1]) == _fingerprint(fresh)
    ):
        # a log that does not record its variant's origin: its fingerprint is derived
        # from the origin's and the seed
        drawn_from = mine
    if mine is None and drawn_from is None:
        return Verdict(True, "neither log records its data fingerprint: paired on sample ids only")
    if drawn_from != mine:
        return Verdict(
            False,
            f"the fresh variant was instantiated from data {_short(drawn_from)}, the "
            f"original run read data {_short(mine)}: not the same questions",
        )
    return Verdict(True)
