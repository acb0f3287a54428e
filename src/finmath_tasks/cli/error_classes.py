"""The report's error classes: why each run's wrong answers are wrong, and what changed
between two paired runs.

Every scored sample that is not correct carries, per score, the class its task's scorer
gave it (``error_class`` in the score's metadata; :mod:`finmath_tasks.scorers.error_classes`,
docs/error_classes.md). From the samples of each log this module makes:

- per task and score, a table with one column per run of the task (a run with no wrong
  answer too: correct 100%), each named by what tells it apart (model, the arguments that
  differ such as ``variant=fresh variant_seed=1``, epochs, repeat; the log file in the
  legend and the HTML tooltip): each class's count and share of the run's n (the samples
  with a value for that score, epochs counted apart), the correct ones in a row of their
  own; ``error_classes.csv`` (one row per run, score and class: ``count``, ``share``,
  ``n``);
- a plot per task and score (with matplotlib): the runs' shares side by side per class;
- per paired comparison the report already makes (``paired.csv``: two runs of one task
  on the same data; ``gap.csv``: an original run and a fresh variant), on the samples
  both scored, a transitions table for the score it pairs on (the official one): per
  class how many samples had it in each run, how many were fixed (the class in the
  first run, correct in the second), appeared (correct in the first, the class in the
  second), and moved to or came from another class; its caption says which samples and
  epochs it counts (a sample's epoch e in one run against its epoch e in the other: an
  epoch or a sample only one run scored is left out, and counted in the caption);
  ``error_transitions.csv``: every (from, to) pair with its count, unchanged ones too,
  for every score both runs classify.

The same pass over a log reads each wrong score's cause (``error_cause``,
:mod:`finmath_tasks.scorers.causes`): per task and score, a causes table with a column per
run and, where the task's folder maps the causes onto its paper's error categories
(``PAPER_CATEGORIES`` in ``tasks/<name>/causes.py``: its paper's error analysis), a column
naming the category; per pair, a transitions table by cause; ``error_causes.csv``
(``task, log, run, score, error_cause, paper_category, count, share, n``) and
``error_cause_transitions.csv`` (as ``error_transitions.csv``, ``from_cause``/``to_cause``).
A wrong answer without a cause (a log written before them) is ``no cause``.

The pairs are the report's own (its rows name the two logs): whatever rule decides which
runs are comparable decides here too.

Which scores are classified is decided per task, not per run: a score whose samples carry
classes in any run of the task, so a run with no wrong answer still has its column and its
pairs their transitions; where no run of the task has a wrong answer, the task's main score
(the first its tables show). ``execution_rate`` and the flip counts carry no classes. A sample that is
not correct and carries no class (a log of a task version before error classes, or a
fractional value without one) counts as ``unclassified``.
"""

from __future__ import annotations

import importlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from finmath_tasks.cli.compare import write_csv
from finmath_tasks.cli.markup import file_name
from finmath_tasks.cli.runs import Rendered, Run, Section, latest_runs, run_labels
from finmath_tasks.cli.samples import run_samples
from finmath_tasks.scorers.causes import CAUSES, ERROR_CAUSE_KEY
from finmath_tasks.scorers.error_classes import ERROR_CLASS_KEY

CORRECT = "correct"
UNCLASSIFIED = "unclassified"
CSV_CLASSES = ["task", "log", "run", "score", "error_class", "count", "share", "n"]
CSV_TRANSITIONS = ["task", "score", "log_a", "log_b", "run_a", "run_b", "n", "epochs", "only_a",
                   "only_b", "from_class", "to_class", "count"]  # fmt: skip
"""``n``: the sample-epochs both runs scored (those counted), ``epochs`` which epochs they
are; ``only_a``/``only_b``: the sample-epochs one run scored and the other did not (left
out)."""
CACHE_KEY = "error_classes"
"""Where a run's classes are kept once read (``Run.per_sample``, the report's cache)."""
NO_CAUSE = "no cause"
"""A wrong answer without a cause (a log written before the causes)."""
CAUSES_CACHE_KEY = "error_causes"
"""Where the same read keeps the run's causes (:func:`sample_causes`)."""

SampleKey = tuple[str, int]
"""A sample id and its epoch."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(float(value)):
        return float(value)
    return None


def sample_classes(run: Run) -> dict[str, dict[SampleKey, str]]:
    """Score -> (sample id, epoch) -> its class, ``correct`` or ``unclassified``, for every
    score with a number (read once from the log); :func:`classified_in` says which of them
    carry classes in this run."""
    return _read(run)[0]


def classified_in(run: Run) -> set[str]:
    """The scores of ``run`` whose samples carry at least one error class."""
    return _read(run)[1]


def _read(run: Run) -> tuple[dict[str, dict[SampleKey, str]], set[str]]:
    cached = run.per_sample.get(CACHE_KEY)
    if isinstance(cached, tuple):
        return cached
    found: dict[str, dict[SampleKey, str]] = {}
    classified: set[str] = set()
    causes: dict[str, dict[SampleKey, str]] = {}  # the same pass reads the causes (causes.py)

    for sample in run_samples(run):
        key = (str(sample.id), int(sample.epoch))
        for name, score in (sample.scores or {}).items():
            value = _number(score.value)
            if value is None:
                continue
            cls = (score.metadata or {}).get(ERROR_CLASS_KEY)
            if isinstance(cls, str):
                classified.add(name)
            else:
                cls = CORRECT if value >= 1 else UNCLASSIFIED
            found.setdefault(name, {})[key] = cls
            cause = (score.metadata or {}).get(ERROR_CAUSE_KEY)
            causes.setdefault(name, {})[key] = (
                cause if isinstance(cause, str) else CORRECT if cls == CORRECT else NO_CAUSE
            )
    run.per_sample[CACHE_KEY] = (found, classified)
    run.per_sample[CAUSES_CACHE_KEY] = causes
    return found, classified


def classified_scores(runs: Sequence[Run], main: Sequence[str] = ()) -> list[str]:
    """The scores the error tables of one task's ``runs`` show: those classified in any of
    them (a perfect run's scores carry no class, yet its column and its pairs belong in the
    tables); where none is, ``main`` (the task's main score: every run was right)."""
    found: list[str] = []
    for run in runs:
        try:
            found += sorted(classified_in(run))
        except Exception:  # a log whose samples cannot be read: the report names it elsewhere
            continue
    return list(dict.fromkeys(found)) or list(main)


@dataclass
class ClassRow:
    task: str
    log: str
    run: str
    score: str
    error_class: str
    count: int
    share: float
    n: int


@dataclass
class TransitionRow:
    task: str
    score: str
    log_a: str
    log_b: str
    run_a: str
    run_b: str
    n: int
    epochs: str
    only_a: int
    only_b: int
    from_class: str
    to_class: str
    count: int


def _ordered(classes: Iterable[str]) -> list[str]:
    """Correct first, then the classes by name (``unclassified`` last)."""
    found = set(classes)
    rest = sorted(found - {CORRECT, UNCLASSIFIED})
    return [c for c in [CORRECT] if c in found] + rest + [c for c in [UNCLASSIFIED] if c in found]


def class_rows(
    runs: Sequence[Run], main: Mapping[str, Sequence[str]] | None = None
) -> list[ClassRow]:
    """Per run, score and class: count, share of the run's n and n; the scores of each
    task are :func:`classified_scores` (``main``: task -> its main score)."""
    rows: list[ClassRow] = []
    for task in dict.fromkeys(r.task for r in runs):
        # columns in the order of the runs' settings (not of their logs' times)
        mine = sorted(
            (r for r in runs if r.task == task),
            key=lambda r: (r.model, repr(sorted(r.args.items())), r.label, r.created),
        )
        scores = classified_scores(mine, (main or {}).get(task, ()))
        labels = run_labels(mine)
        for run in mine:
            try:
                per_score = sample_classes(run)
            except Exception:  # a log whose samples cannot be read: named elsewhere
                continue
            for score in [s for s in scores if per_score.get(s)]:
                counts = Counter(per_score[score].values())
                n = sum(counts.values())
                for cls in _ordered(counts):
                    rows.append(
                        ClassRow(task, run.name, labels[run.name], score, cls, counts[cls],
                                 counts[cls] / n, n)
                    )  # fmt: skip
    return rows


def class_tables(rows: Sequence[ClassRow]) -> list[Rendered]:
    """One table per task and score: a row per class, a column per run."""
    tables: list[Rendered] = []
    for (task, score), members in _grouped(rows, lambda r: (r.task, r.score)).items():
        logs = list(dict.fromkeys(r.log for r in members))
        cells = {(r.log, r.error_class): r for r in members}
        names = {r.log: f"{r.run} (n={r.n})" for r in members}
        header = ["error class", *(names[log] for log in logs)]
        body = [
            [cls, *(_count_cell(cells.get((log, cls))) for log in logs)]
            for cls in _ordered(r.error_class for r in members)
        ]
        tables.append(
            Rendered(
                f"{task}: error classes of {score}",
                header,
                body,
                caption="One column per run of the task, named by what tells it apart; count "
                "(share of the run's n: its samples with a value for this score, epochs "
                "counted apart); docs/error_classes.md defines the classes",
                logs={names[log]: log for log in logs},
            )
        )
    return tables


def _count_cell(row: ClassRow | None) -> str:
    return "0" if row is None else f"{row.count} ({row.share * 100:.1f}%)"


def _grouped(rows: Iterable[Any], key: Any) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = {}
    for row in rows:
        out.setdefault(key(row), []).append(row)
    return out


def pairs_of(paired: Iterable[Any], gaps: Iterable[Any]) -> list[tuple[str, str, str, str]]:
    """(task, score, log a, log b) of the report's paired rows and its variant gaps (seed
    rows), each once: the scores the report compares (its official ones)."""
    out: list[tuple[str, str, str, str]] = []
    for row in paired:
        out.append((row.task, _score(row.metric), row.log_a, row.log_b))
    for row in gaps:
        if row.log_fresh and row.seed != "mean":
            out.append((row.task, _score(row.metric), row.log_original, row.log_fresh))
    return list(dict.fromkeys(out))


def _score(metric: str) -> str:
    return metric.removesuffix(" accuracy")


@dataclass(frozen=True)
class Overlap:
    """What a transitions table counts: the sample-epochs both runs scored."""

    n: int
    epochs: str
    """The epochs counted (``1``, ``1, 2``)."""
    only_a: int
    only_b: int


def transitions(
    a: Mapping[SampleKey, str], b: Mapping[SampleKey, str]
) -> tuple[Overlap, Counter[tuple[str, str]]]:
    """On the sample-epochs both runs scored (a sample's epoch e in ``a`` against its epoch
    e in ``b``): what was counted and (class in a, class in b) -> count."""
    common = [k for k in a if k in b]
    epochs = ", ".join(str(e) for e in sorted({e for _, e in common}))
    overlap = Overlap(len(common), epochs, len(a) - len(common), len(b) - len(common))
    return overlap, Counter((a[k], b[k]) for k in common)


def transition_rows(
    runs: Sequence[Run], pairs: Sequence[tuple[str, str, str, str]]
) -> list[TransitionRow]:
    """Every score both runs of each pair classify (not only the one the pair was made
    for): the rows of ``error_transitions.csv``."""
    by_name = {run.name: run for run in runs}
    rows: list[TransitionRow] = []
    labels: dict[str, dict[str, str]] = {}
    scores: dict[str, list[str]] = {}
    for task, log_a, log_b in dict.fromkeys((t, a, b) for t, _, a, b in pairs):
        ra, rb = by_name.get(log_a), by_name.get(log_b)
        if ra is None or rb is None:
            continue
        if task not in labels:
            mine = [r for r in runs if r.task == task]
            labels[task] = run_labels(mine)
            shown = [s for t, s, _, _ in pairs if t == task]
            scores[task] = classified_scores(mine, shown[:1])
        try:
            ca, cb = sample_classes(ra), sample_classes(rb)
        except Exception:  # a log whose samples cannot be read
            continue
        for score in [s for s in scores[task] if ca.get(s) and cb.get(s)]:
            overlap, counts = transitions(ca[score], cb[score])
            for (was, now), count in sorted(counts.items()):
                rows.append(
                    TransitionRow(task, score, log_a, log_b, labels[task][log_a],
                                  labels[task][log_b], overlap.n, overlap.epochs,
                                  overlap.only_a, overlap.only_b, was, now, count)
                )  # fmt: skip
    return rows


def transition_tables(rows: Sequence[TransitionRow]) -> list[Rendered]:
    """Per pair and score: per class, the count in each run, fixed, appeared, and the
    moves between classes; the correct answers in a row of their own (a pair where neither
    run was wrong still has its table)."""
    tables: list[Rendered] = []
    for (task, score, log_a, log_b), members in _grouped(
        rows, lambda r: (r.task, r.score, r.log_a, r.log_b)
    ).items():
        counts = {(r.from_class, r.to_class): r.count for r in members}
        classes = _ordered({r.from_class for r in members} | {r.to_class for r in members})
        body: list[list[str]] = []
        for cls in [CORRECT, *(c for c in classes if c != CORRECT)]:
            in_a = sum(v for (x, _), v in counts.items() if x == cls)
            in_b = sum(v for (_, y), v in counts.items() if y == cls)
            moved_out = sum(v for (x, y), v in counts.items() if x == cls and y != cls)
            moved_in = sum(v for (x, y), v in counts.items() if y == cls and x != cls)
            if cls == CORRECT:  # to another class: it became wrong; from one: fixed
                body.append([cls, str(in_a), str(in_b), "–", "–", str(moved_out), str(moved_in)])
                continue
            fixed = counts.get((cls, CORRECT), 0)
            appeared = counts.get((CORRECT, cls), 0)
            body.append([cls, str(in_a), str(in_b), str(fixed), str(appeared),
                         str(moved_out - fixed), str(moved_in - appeared)])  # fmt: skip
        first = members[0]
        tables.append(
            Rendered(
                f"{task}: error class transitions of {score}, A {first.run_a}, B {first.run_b}",
                [
                    "error class",
                    "in A",
                    "in B",
                    "fixed (A: class, B: correct)",
                    "appeared (A: correct, B: class)",
                    "to another class",
                    "from another class",
                ],
                body,
                caption=_overlap_caption(first),
                logs={first.run_a: log_a, first.run_b: log_b},
            )
        )
    return tables


def _overlap_caption(row: TransitionRow) -> str:
    """Which samples and epochs a transitions table counts, and what it leaves out."""
    epochs = "epoch" + ("s " if "," in row.epochs else " ") + row.epochs
    text = (
        f"A: {row.run_a}; B: {row.run_b}. Counted on the {row.n} sample-epochs both runs "
        f"scored ({epochs}: a sample's epoch in A against the same epoch in B)"
    )
    left = [f"{k} scored by {side} only" for k, side in ((row.only_a, "A"), (row.only_b, "B")) if k]
    if left:
        text += "; left out, as epochs or samples the other run did not score: " + ", ".join(left)
    else:
        text += "; nothing left out"
    return (
        text
        + ". The correct row: to another class = became wrong, from another class = fixed; every (from, to) count is in error_transitions.csv"
    )


def plot_classes(rows: Sequence[ClassRow], out: Path) -> list[tuple[str, str]]:
    """A bar chart per task and score: each class's share, one series per run."""
    from finmath_tasks.cli.plots import SERIES_KEY, _pyplot, drawn_series, palette

    made: list[tuple[str, str]] = []
    for (task, score), members in _grouped(rows, lambda r: (r.task, r.score)).items():
        classes = _ordered(r.error_class for r in members)
        logs = list(dict.fromkeys(r.log for r in members))
        shares = {(r.log, r.error_class): r.share * 100 for r in members}
        labels = {r.log: f"{r.run} (n={r.n})" for r in members}
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(classes) + 3), 4.5), dpi=100)
        width = 0.8 / len(logs)
        for i, (log, colour) in enumerate(zip(logs, palette(len(logs)), strict=True)):
            xs = [j + (i - (len(logs) - 1) / 2) * width for j in range(len(classes))]
            ys = [shares.get((log, c), 0.0) for c in classes]
            ax.bar(xs, ys, width, label=labels[log], color=colour)
        ax.set_xticks(range(len(classes)))
        ax.set_xticklabels(classes, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("share of the run's samples (%)")
        ax.set_title(f"{task}: error classes of {score}", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, axis="y")
        fig.tight_layout()
        name = file_name(task.split("/")[-1], "error_classes", score)
        fig.savefig(out / name, metadata={SERIES_KEY: json.dumps(drawn_series(ax))})
        plt.close(fig)
        made.append((f"{task}: error classes of {score}", name))
    return made


def error_class_sections(
    runs: Sequence[Run],
    paired: Sequence[Any],
    gaps: Sequence[Any],
    out: Path,
    plots: bool,
    main: Mapping[str, Sequence[str]] | None = None,
) -> list[Section]:
    """The report's error-class section per task, its CSVs written to ``out``
    (``error_classes.csv``, ``error_transitions.csv``) and, with ``plots``, its PNGs;
    ``main``: task -> its official scores (the first is shown where no run was wrong)."""
    rows = class_rows(runs, {task: list(scores)[:1] for task, scores in (main or {}).items()})
    pairs = pairs_of(paired, gaps)
    moves = transition_rows(runs, pairs)
    # the tables: the scores the report pairs on (the CSV has every classified score)
    shown = set(pairs)
    write_csv(out / "error_classes.csv", CSV_CLASSES, rows)
    write_csv(out / "error_transitions.csv", CSV_TRANSITIONS, moves)
    # the causes beside the classes, on the same scores and pairs
    shown_scores = {t: list(dict.fromkeys(r.score for r in rows if r.task == t)) for t in
                    dict.fromkeys(r.task for r in rows)}  # fmt: skip
    by_cause = cause_rows(runs, shown_scores)
    cause_moves = cause_transition_rows(runs, pairs)
    write_cause_csvs(out, by_cause, cause_moves)
    sections: list[Section] = []
    for task in dict.fromkeys(r.task for r in rows):
        mine = [r for r in rows if r.task == task]
        section = Section(f"{task}: error classes")
        section.tables += class_tables(mine)
        section.tables += transition_tables(
            [m for m in moves if m.task == task and (task, m.score, m.log_a, m.log_b) in shown]
        )
        section.tables += cause_tables([r for r in by_cause if r.task == task])
        section.tables += cause_transition_tables([m for m in cause_moves if m.task == task])
        if plots:
            # as the declared plots: one series per identity, the latest of its repeats
            # (the tables and the CSV hold every repeat; 2,500 repeats are no chart)
            drawn = {r.name for r in latest_runs([r for r in runs if r.task == task])}
            section.plots = plot_classes([r for r in mine if r.log in drawn], out)
        sections.append(section)
    return sections


# --- the causes (scorers.causes): the same tables by cause, in the papers' terms ---------

CSV_CAUSES = ["task", "log", "run", "score", "error_cause", "paper_category", "count",
              "share", "n"]  # fmt: skip
CSV_CAUSE_TRANSITIONS = [c.replace("_class", "_cause") for c in CSV_TRANSITIONS]
"""The header of ``error_cause_transitions.csv``: the transitions' columns, by cause."""


@dataclass
class CauseRow:
    task: str
    log: str
    run: str
    score: str
    error_cause: str
    paper_category: str
    count: int
    share: float
    n: int


def sample_causes(run: Run) -> dict[str, dict[SampleKey, str]]:
    """Score -> (sample id, epoch) -> its cause, ``correct`` or ``no cause``."""
    _read(run)
    found = run.per_sample.get(CAUSES_CACHE_KEY)
    return found if isinstance(found, dict) else {}


def paper_categories(task: str) -> Mapping[str, str]:
    """The task folder's mapping of causes onto its paper's categories (none: empty)."""
    name = task.split("/")[-1]
    try:
        module = importlib.import_module(f"finmath_tasks.tasks.{name}.causes")
    except ImportError:
        return {}
    found = getattr(module, "PAPER_CATEGORIES", None)
    return found if isinstance(found, Mapping) else {}


def _ordered_causes(causes: Sequence[str] | set[str]) -> list[str]:
    found = set(causes)
    known = [c for c in (CORRECT, *CAUSES) if c in found]
    return known + sorted(found - set(known) - {NO_CAUSE}) + [c for c in [NO_CAUSE] if c in found]


def cause_rows(runs: Sequence[Run], scores: Mapping[str, Sequence[str]]) -> list[CauseRow]:
    """Per run, score (``scores``: task -> the scores its class tables show) and cause."""
    rows: list[CauseRow] = []
    for task in dict.fromkeys(r.task for r in runs):
        mine = sorted(
            (r for r in runs if r.task == task),
            key=lambda r: (r.model, repr(sorted(r.args.items())), r.label, r.created),
        )
        labels = run_labels(mine)
        categories = paper_categories(task)
        per_run = {}
        for run in mine:
            try:
                per_run[run.name] = sample_causes(run)
            except Exception:  # a log whose samples cannot be read: named elsewhere
                continue
        for score in scores.get(task, ()):
            # only the scores whose samples carry causes in some run of the task
            if not any(
                c not in (CORRECT, NO_CAUSE)
                for found in per_run.values()
                for c in found.get(score, {}).values()
            ):
                continue
            for run in mine:
                counts = Counter(per_run.get(run.name, {}).get(score, {}).values())
                n = sum(counts.values())
                for cause in _ordered_causes(set(counts)):
                    rows.append(
                        CauseRow(task, run.name, labels[run.name], score, cause,
                                 categories.get(cause, ""), counts[cause], counts[cause] / n, n)
                    )  # fmt: skip
    return rows


def cause_tables(rows: Sequence[CauseRow]) -> list[Rendered]:
    """One table per task and score: a row per cause, a column per run (and the paper's
    category where the task maps its causes onto one)."""
    tables: list[Rendered] = []
    for (task, score), members in _grouped(rows, lambda r: (r.task, r.score)).items():
        logs = list(dict.fromkeys(r.log for r in members))
        cells = {(r.log, r.error_cause): r for r in members}
        names = {r.log: f"{r.run} (n={r.n})" for r in members}
        categories = paper_categories(task)
        header = ["error cause", *(["paper's category"] if categories else []),
                  *(names[log] for log in logs)]  # fmt: skip
        body = []
        for cause in _ordered_causes({r.error_cause for r in members}):
            shown = [cause, *([categories.get(cause, "–")] if categories else [])]
            for log in logs:
                row = cells.get((log, cause))
                shown.append("0" if row is None else f"{row.count} ({row.share * 100:.1f}%)")
            body.append(shown)
        tables.append(
            Rendered(
                f"{task}: error causes of {score}",
                header,
                body,
                caption="Why each wrong answer is wrong, from evidence (docs/error_classes.md, "
                "Causes): count (share of the run's n); 'unexplained' where the evidence does "
                "not decide"
                + (
                    "; the paper's category maps our causes onto its error analysis"
                    if categories
                    else ""
                ),
                logs={names[log]: log for log in logs},
            )
        )
    return tables


def cause_transition_rows(
    runs: Sequence[Run], pairs: Sequence[tuple[str, str, str, str]]
) -> list[TransitionRow]:
    """The pairs' transitions by cause, on the score each pair was made for."""
    by_name = {run.name: run for run in runs}
    rows: list[TransitionRow] = []
    labels: dict[str, dict[str, str]] = {}
    for task, score, log_a, log_b in pairs:
        ra, rb = by_name.get(log_a), by_name.get(log_b)
        if ra is None or rb is None:
            continue
        if task not in labels:
            labels[task] = run_labels([r for r in runs if r.task == task])
        try:
            ca, cb = sample_causes(ra).get(score), sample_causes(rb).get(score)
        except Exception:
            continue
        if not ca or not cb:
            continue
        if not any(c not in (CORRECT, NO_CAUSE) for c in (*ca.values(), *cb.values())):
            continue  # neither run's scorer gives causes (a benchmark without them)
        overlap, counts = transitions(ca, cb)
        for (was, now), count in sorted(counts.items()):
            rows.append(
                TransitionRow(task, score, log_a, log_b, labels[task][log_a], labels[task][log_b],
                              overlap.n, overlap.epochs, overlap.only_a, overlap.only_b, was, now,
                              count)
            )  # fmt: skip
    return rows


def cause_transition_tables(rows: Sequence[TransitionRow]) -> list[Rendered]:
    """The error-class transitions tables, by cause."""
    tables = []
    for table in transition_tables(rows):
        tables.append(
            replace(
                table,
                title=table.title.replace("error class transitions", "error cause transitions"),
                header=["error cause", *[h.replace("class", "cause") for h in table.header[1:]]],
                caption=table.caption.replace("class", "cause").replace(
                    "error_transitions.csv", "error_cause_transitions.csv"
                ),
            )
        )
    return tables


def write_cause_csvs(out: Path, rows: Sequence[CauseRow], moves: Sequence[TransitionRow]) -> None:
    write_csv(out / "error_causes.csv", CSV_CAUSES, rows)
    write_csv(
        out / "error_cause_transitions.csv", CSV_TRANSITIONS, moves, header=CSV_CAUSE_TRANSITIONS
    )
