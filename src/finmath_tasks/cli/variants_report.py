"""The memorisation gap: a model's score on the original questions minus its score on
their fresh variants, paired on the questions both runs scored.

For each variant seed, :func:`memorisation_gap` pairs the original run with that seed's
run (:func:`finmath_tasks.cli.stats.paired`: the paired difference, original minus
variant, its interval, McNemar's exact p for 0/1 scores, clustered where the task
clusters); over several seeds it gives the mean gap and the spread across
instantiations (the sample standard deviation of the per-seed variant accuracies and
of the per-seed gaps), as GSM-Symbolic and VarBench report it. Questions whose gold is yes
or no (which reciting or guessing scores by chance) are paired apart from the numeric ones
when a run has any: two rows per seed, ``<score> accuracy (numeric)`` and ``(yes/no)``.

:func:`gap_section` is the report's "Memorisation gap" table and the rows of
``gap.csv``: for each original run (``variant=original``, or seed 0), the fresh runs
whose identity differs from it only in the variant (:func:`finmath_tasks.identity.difference`
names no part outside :data:`finmath_tasks.comparability.VARIANT_PARTS`): same model,
task version, other task arguments, generation settings, epochs and limits, and the
variant was instantiated from the original run's data
(:func:`finmath_tasks.comparability.comparable`, purpose ``variant``). A fresh run that
is refused is named in the table's caption with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from statistics import mean, stdev

from finmath_tasks.cli.compare import official_scores
from finmath_tasks.cli.declare import Declaration, Report
from finmath_tasks.cli.runs import Rendered, Run, overlap_note, run_labels
from finmath_tasks.cli.samples import run_samples
from finmath_tasks.cli.stats import Paired, PerSample, paired, per_sample
from finmath_tasks.comparability import comparable, variant_of
from finmath_tasks.variants import is_fresh


@dataclass(frozen=True)
class Gap:
    """Original minus fresh, per seed and over the seeds."""

    per_seed: dict[int, Paired]
    """Seed -> the paired comparison (``a`` original, ``b`` the variant)."""
    mean_gap: float
    spread_variant: float | None
    """Sample standard deviation of the per-seed variant accuracies (None with one seed)."""
    spread_gap: float | None


def memorisation_gap(
    original: PerSample, variants: Mapping[int, PerSample], level: float = 0.95
) -> Gap | None:
    """The gap for each seed whose run shares at least two scored questions with the
    original run, and over those seeds; None when no seed does."""
    per_seed = {}
    for seed in sorted(variants):
        comparison = paired(original, variants[seed], level)
        if comparison is not None:
            per_seed[seed] = comparison
    if not per_seed:
        return None
    gaps = [p.difference for p in per_seed.values()]
    accuracies = [p.b for p in per_seed.values()]
    several = len(per_seed) > 1
    return Gap(
        per_seed=per_seed,
        mean_gap=mean(gaps),
        spread_variant=stdev(accuracies) if several else None,
        spread_gap=stdev(gaps) if several else None,
    )


def gap_rows(gap: Gap) -> list[dict[str, object]]:
    """One table row per seed, then the mean over seeds (for the report's tables)."""
    rows: list[dict[str, object]] = [
        {
            "seed": seed,
            "n": p.n,
            "original": round(p.a, 4),
            "fresh": round(p.b, 4),
            "gap": round(p.difference, 4),
            "interval": (round(p.low, 4), round(p.high, 4)),
            "p_mcnemar": None if p.p_mcnemar is None else round(p.p_mcnemar, 4),
        }
        for seed, p in gap.per_seed.items()
    ]
    rows.append(
        {
            "seed": "mean",
            "gap": round(gap.mean_gap, 4),
            "spread_fresh": None if gap.spread_variant is None else round(gap.spread_variant, 4),
            "spread_gap": None if gap.spread_gap is None else round(gap.spread_gap, 4),
        }
    )
    return rows


# --- the report's section ------------------------------------------------------------------


@dataclass
class GapRow:
    """A row of ``gap.csv``: one seed's paired comparison with the original run, or
    (``seed`` "mean") the mean gap over the seeds and the spread across instantiations."""

    task: str
    metric: str
    log_original: str
    seed: str
    log_fresh: str = ""
    model: str = ""
    run_original: str = ""
    """What tells the original run apart from the task's other runs (as the table names it)."""
    run_fresh: str = ""
    n: int | None = None
    original: float | None = None
    fresh: float | None = None
    gap: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_mcnemar: float | None = None
    spread_fresh: float | None = None
    spread_gap: float | None = None
    note: str = ""


CSV_GAP = [f.name for f in fields(GapRow)]
"""``n``: the questions both runs scored (the note gives each run's count when fewer);
``original``, ``fresh``: their accuracies on those questions; ``gap``: original minus
fresh, ``ci_low``/``ci_high`` its interval, ``p_mcnemar`` McNemar's exact p (0/1 scores);
the ``mean`` row: the mean gap over the seeds and the sample standard deviations of the
per-seed fresh accuracies (``spread_fresh``) and gaps (``spread_gap``)."""


def _variant(run: Run) -> tuple[str, int] | None:
    """(variant, seed) of a run of a task with variants; None for another task."""
    return None if run.identity is None else variant_of(run.identity)


def _is_fresh(found: tuple[str, int] | None) -> bool:
    return found is not None and is_fresh(*found)


def fresh_partners(
    original: Run, runs: Sequence[Run], refused: list[str] | None = None
) -> dict[int, list[Run]]:
    """Seed -> the fresh runs that may be set against ``original``
    (:func:`finmath_tasks.comparability.comparable`, purpose ``variant``: identities that
    differ in the variant alone, the variant drawn from the original run's data), latest
    first. ``refused`` gets a line for each fresh run of the original's setting that is
    not its variant (drawn from other data)."""
    found: dict[int, list[Run]] = {}
    if original.identity is None:
        return found
    for run in sorted(runs, key=lambda r: r.created, reverse=True):
        which = _variant(run)
        if run.identity is None or not _is_fresh(which):
            continue
        assert which is not None
        verdict = comparable(original.identity, run.identity, "variant")
        if verdict.ok:
            found.setdefault(which[1], []).append(run)
        elif refused is not None and not verdict.reason.startswith("other settings"):
            refused.append(
                f"{run.name} (fresh seed {which[1]}) is not set against {original.name}: "
                f"{verdict.reason}"
            )
    return found


def gap_section(
    declaration: Declaration | None, runs: Sequence[Run]
) -> tuple[list[GapRow], Rendered | None, list[str]]:
    """The gap rows of one task's runs, their table (None when no fresh run is paired
    with an original run) and notes for the section: each fresh run refused, with the
    reason, when no row is left to carry them in the table's caption."""
    report = declaration.report if declaration is not None else Report()
    originals = [
        r for r in runs if (v := _variant(r)) is not None and not _is_fresh(v) and r.identity
    ]
    # the fresh runs, found once: each original is set against these, not against every run
    fresh = [r for r in runs if r.identity is not None and _is_fresh(_variant(r))]
    rows: list[GapRow] = []
    refused: list[str] = []
    for score in official_scores(declaration, runs):
        for original in sorted(originals, key=lambda r: r.created):
            partners = {
                seed: [r for r in found if score in r.scores]
                for seed, found in fresh_partners(original, fresh, refused).items()
            }
            chosen = {seed: found[0] for seed, found in partners.items() if found}
            if score not in original.scores or not chosen:
                continue
            rows += _score_rows(original, chosen, partners, score, report)
    labels = run_labels(runs)
    for row in rows:
        row.run_original = labels.get(row.log_original, row.log_original)
        row.run_fresh = labels.get(row.log_fresh, "") if row.log_fresh else ""
    notes = list(dict.fromkeys(refused))
    table = gap_table(rows, report.interval.level, notes, runs[0].task if runs else "")
    if table is None and notes:
        task = runs[0].task
        return (
            rows,
            None,
            [f"Memorisation gap ({task}): no fresh run is paired: " + "; ".join(notes)],
        )
    return rows, table, []


YES_NO = ("yes", "no")
"""Golds that reciting (or guessing) scores by chance: their gap is reported apart."""


def yes_no_ids(run: Run) -> set[str]:
    """The samples of a run whose gold is yes or no."""

    found = set()
    for sample in run_samples(run):
        target = sample.target if isinstance(sample.target, str) else " ".join(sample.target)
        if target.strip().lower() in YES_NO:
            found.add(str(sample.id))
    return found


def _only(values: PerSample, keep: set[str], inside: bool) -> PerSample:
    ids = [sid for sid in values.values if (sid in keep) == inside]
    return PerSample({s: values.values[s] for s in ids}, {s: values.clusters[s] for s in ids})


def _score_rows(
    original: Run,
    chosen: Mapping[int, Run],
    partners: Mapping[int, Sequence[Run]],
    score: str,
    report: Report,
) -> list[GapRow]:
    try:
        base = per_sample(original, score, report.cluster)
        fresh = {seed: per_sample(run, score, report.cluster) for seed, run in chosen.items()}
        yes_no = yes_no_ids(original).union(*(yes_no_ids(run) for run in chosen.values()))
    except Exception:  # a log whose samples cannot be read
        return []
    if not yes_no:
        return _kind_rows(original, chosen, partners, score, report, base, fresh, "")
    rows = []
    for inside, kind in ((False, " (numeric)"), (True, " (yes/no)")):
        rows += _kind_rows(
            original, chosen, partners, score, report, _only(base, yes_no, inside),
            {seed: _only(f, yes_no, inside) for seed, f in fresh.items()}, kind,
        )  # fmt: skip
    return rows


def _kind_rows(
    original: Run,
    chosen: Mapping[int, Run],
    partners: Mapping[int, Sequence[Run]],
    score: str,
    report: Report,
    base: PerSample,
    fresh: Mapping[int, PerSample],
    kind: str,
) -> list[GapRow]:
    """The rows of one kind of question (numeric or yes/no answers; ``kind`` "": all)."""
    gap = memorisation_gap(base, fresh, report.interval.level)
    if gap is None:
        return []
    metric = f"{score} accuracy{kind}"
    rows: list[GapRow] = []
    for seed, p in gap.per_seed.items():
        run = chosen[seed]
        notes = [
            overlap_note(original, base, run, fresh[seed], p.n, ("original", "fresh")),
            interval_note(p),
        ]
        others = len(partners[seed]) - 1
        if others:
            notes.append(f"the latest of {others + 1} runs of seed {seed}")
        rows.append(
            GapRow(
                task=original.task,
                metric=metric,
                log_original=original.name,
                seed=str(seed),
                log_fresh=run.name,
                model=original.model,
                n=p.n,
                original=p.a,
                fresh=p.b,
                gap=p.difference,
                ci_low=p.low,
                ci_high=p.high,
                p_mcnemar=p.p_mcnemar,
                note="; ".join(n for n in notes if n),
            )
        )
    rows.append(
        GapRow(
            task=original.task,
            metric=metric,
            log_original=original.name,
            seed="mean",
            model=original.model,
            gap=gap.mean_gap,
            spread_fresh=gap.spread_variant,
            spread_gap=gap.spread_gap,
            note=f"over {len(gap.per_seed)} seed(s)",
        )
    )
    return rows


def interval_note(p: Paired) -> str:
    """How a seed's interval was made and over which unit, as the paired table says it."""
    if p.interval == "tango":
        why = (
            "no question differs"
            if p.difference == 0 and p.stderr == 0
            else "every question that differs moves the same way (stderr 0)"
        )
        return f"{why}: Tango's score interval for paired proportions, over the {p.n} questions"
    if p.clusters:
        return (
            f"t interval with {p.clusters - 1} degrees of freedom, stderr clustered by "
            f"{p.clusters} documents"
        )
    return f"normal interval, paired stderr over the {p.n} questions (not clustered)"


def _points(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value * 100:+.1f}" if sign else f"{value * 100:.1f}"


def gap_table(
    rows: Sequence[GapRow], level: float = 0.95, refused: Sequence[str] = (), task: str = ""
) -> Rendered | None:
    """The gap rows as a table; ``refused``: fresh runs not set against an original run,
    each with the reason (said in the caption); None when there is no row (the refusals
    are then the section's note, :func:`gap_section`)."""
    if not rows:
        return None
    body: list[list[str]] = []
    for r in rows:
        interval = (
            f"[{r.ci_low * 100:+.1f}, {r.ci_high * 100:+.1f}]"
            if r.ci_low is not None and r.ci_high is not None
            else "–"
        )
        body.append(
            [
                r.metric,
                r.model,
                r.run_original or r.log_original,
                r.seed,
                r.run_fresh or "–",
                "–" if r.n is None else str(r.n),
                _points(r.original),
                _points(r.fresh),
                _points(r.gap, sign=True),
                interval,
                "–" if r.p_mcnemar is None else f"{r.p_mcnemar:.3g}",
                _points(r.spread_fresh),
                _points(r.spread_gap),
                r.note,
            ]
        )
    header = ["metric", "model", "original run", "seed", "fresh run", "n (both scored)", "original",
              "fresh", "gap (points)", f"{round(level * 100)}% interval", "McNemar exact p",
              "sd of fresh (points)", "sd of gap (points)", "note"]  # fmt: skip
    caption = (
        "The memorisation gap: an original run's accuracy minus that of its fresh variants "
        "(-T variant=fresh -T variant_seed=N), paired on the questions both scored (a fresh "
        "variant covers the questions it could instantiate; n says how many). A fresh run "
        "is paired with an original run only when their identities differ in the variant "
        "alone (same model, task version, other arguments, generation settings and epochs) "
        "and the variant was instantiated from the data the original run read. "
        "Per seed: the paired difference with its interval and McNemar's exact p (as in the "
        "paired table; the unit is the question, its score the mean over its epochs): a "
        "normal interval on the paired stderr, or, where the task's questions share "
        "documents, t with clusters - 1 degrees of freedom on the stderr clustered by "
        "document, and Tango's score interval for paired proportions where that stderr is "
        "0; each row's note says which. The mean row: the mean gap over the seeds and the standard "
        "deviation across instantiations of the fresh accuracy and of the gap (with two "
        "seeds or more). A gap whose interval contains 0 does not show memorisation."
    )
    if refused:
        caption += " Not paired: " + "; ".join(refused) + "."
    logs = {r.run_original: r.log_original for r in rows if r.run_original}
    logs.update({r.run_fresh: r.log_fresh for r in rows if r.run_fresh})
    return Rendered(f"Memorisation gap ({rows[0].task})", header, body, caption, logs=logs)
