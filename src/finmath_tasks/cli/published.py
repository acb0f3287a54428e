"""The papers' published results, declared as data by each benchmark, and matched to runs.

A benchmark folder ``tasks/<name>/`` declares the numbers its paper(s) published in
one or more tab-separated files ``published*.tsv`` (package data). The header and
the meaning of each column:

``table``    the paper's name for the table or figure (``Table 4``)
``model``    the model as the paper prints it (``GPT-4o``)
``setting``  space-separated ``name=value`` task arguments of our task that reproduce
             the cell (``split=test solver=cot``), or ``-`` when no run of ours can
``score``    the scorer in our logs whose metric is comparable (``-`` if none)
``metric``   that scorer's metric (``accuracy``, ``execution_rate``, ...)
``group``    empty for the overall number, else ``key=value`` (``topic=Accounting``)
``value``    the number exactly as printed in the paper
``unit``     ``%``, ``count`` or ``fraction``
``n``        the number of questions behind the cell, where known
``source``   ``<paper file>; <table>; row <label>; column <label>``
``note``     why a cell is uncertain or not reproducible, else empty
``generation`` the generation settings the source states for the cell, space-separated
             ``name=value`` (``temperature``, ``top_p``, ``max_tokens``), or ``unstated``
``grader``   the model that graded or extracted the answers, ``<role>=<model>``
             (``grader=gpt-4o-mini``); ``none`` when no model graded (a fixed comparison,
             a program run); ``unstated``
``data``     the data the cell was computed on: ``name=value`` pairs naming it (``split``,
             ``subset``...) and its ``size`` in questions; or ``unstated``

Lines starting with ``#`` are comments. This module names no benchmark: it reads
the files it finds, matches a run (task, model, task arguments) to the cells it
reproduces, and renders both as Markdown.
"""

from __future__ import annotations

import csv
import importlib
import importlib.resources
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from finmath_tasks.tasks import benchmarks

TASKS_PACKAGE = "finmath_tasks.tasks"
COLUMNS = (
    "table",
    "model",
    "setting",
    "score",
    "metric",
    "group",
    "value",
    "unit",
    "n",
    "source",
    "note",
    "generation",
    "grader",
    "data",
)
UNITS = ("%", "count", "fraction")
NOT_REPRODUCIBLE = "-"
UNSTATED = "unstated"
NO_GRADER = "none"
GENERATION = ("temperature", "top_p", "max_tokens")
"""Generation settings a source may state (compared with the run's generation config)."""


class PublishedError(ValueError):
    """A ``published*.tsv`` file that does not follow the schema (names file and line)."""


@dataclass(frozen=True)
class Published:
    """One published number."""

    benchmark: str
    table: str
    model: str
    setting: Mapping[str, str] | None
    """Task arguments reproducing the cell; None when no run of ours can."""
    score: str
    metric: str
    group: tuple[str, str] | None
    printed: str
    """The value as printed in the paper."""
    unit: str
    n: int | None
    source: str
    note: str = ""
    location: str = ""
    """``<file>:<line>`` of the row, for messages."""
    generation: Mapping[str, str] | None = None
    """The generation settings the source states (None: unstated)."""
    grader: Mapping[str, str] | None = None
    """Model role -> the model that graded the answers; {} when no model did; None: unstated."""
    data: Mapping[str, str] | None = None
    """The data the cell was computed on (``split``, ``size``...); None: unstated."""

    @property
    def data_size(self) -> int | None:
        """The questions of the data the cell was computed on, where stated."""
        size = (self.data or {}).get("size", "")
        return int(size) if size.isdigit() else None

    @property
    def value(self) -> float:
        return float(self.printed)

    @property
    def fraction(self) -> float | None:
        """The value as a fraction (a rate), or None for counts."""
        if self.unit == "%":
            return self.value / 100
        if self.unit == "fraction":
            return self.value
        return None

    @property
    def paper(self) -> str:
        return self.source.split(";", 1)[0].strip()

    def setting_text(self) -> str:
        if self.setting is None:
            return NOT_REPRODUCIBLE
        return " ".join(f"{k}={v}" for k, v in self.setting.items())

    def group_text(self) -> str:
        return f"{self.group[0]}={self.group[1]}" if self.group else ""


def _pairs(text: str, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in text.split():
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise PublishedError(f"{where}: {item!r} is not of the form name=value")
        out[name] = value
    return out


def _stated(text: str, where: str) -> dict[str, str] | None:
    """``name=value`` pairs, or None for ``unstated``."""
    return None if text == UNSTATED else _pairs(text, where)


def parse_published(text: str, benchmark: str, file: str) -> list[Published]:
    """The rows of one ``published*.tsv`` file; :class:`PublishedError` naming file and line."""
    rows: list[Published] = []
    header: list[str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        [cells] = list(csv.reader([line], delimiter="\t", quoting=csv.QUOTE_NONE))
        where = f"{file}:{number}"
        if header is None:
            header = cells
            if tuple(header) != COLUMNS:
                raise PublishedError(
                    f"{where}: the header must be {' '.join(COLUMNS)} (tab-separated), "
                    f"not {' '.join(header)}"
                )
            continue
        if len(cells) < len(COLUMNS):
            cells += [""] * (len(COLUMNS) - len(cells))
        if len(cells) != len(COLUMNS):
            raise PublishedError(f"{where}: {len(cells)} columns, expected {len(COLUMNS)}")
        row = dict(zip(COLUMNS, (c.strip() for c in cells), strict=True))
        for required in (
            "table", "model", "setting", "score", "metric", "value", "source", "generation",
            "grader", "data",
        ):  # fmt: skip
            if not row[required]:
                raise PublishedError(f"{where}: column {required!r} is empty")
        try:
            value = float(row["value"])
        except ValueError:
            raise PublishedError(f"{where}: value {row['value']!r} is not a number") from None
        if not math.isfinite(value):
            raise PublishedError(f"{where}: value {row['value']!r} is not finite")
        if row["unit"] not in UNITS:
            raise PublishedError(f"{where}: unit {row['unit']!r} is not one of {', '.join(UNITS)}")
        n: int | None = None
        if row["n"]:
            if not row["n"].isdigit():
                raise PublishedError(f"{where}: n {row['n']!r} is not a whole number")
            n = int(row["n"])
        group = None
        if row["group"]:
            key, sep, val = row["group"].partition("=")
            if not sep or not key or not val:
                raise PublishedError(f"{where}: group {row['group']!r} is not key=value")
            group = (key, val)
        setting = None if row["setting"] == NOT_REPRODUCIBLE else _pairs(row["setting"], where)
        generation = _stated(row["generation"], f"{where}: generation")
        for key in generation or {}:
            if key not in GENERATION:
                raise PublishedError(
                    f"{where}: generation setting {key!r} is not one of {', '.join(GENERATION)}"
                )
        grader = {} if row["grader"] == NO_GRADER else _stated(row["grader"], f"{where}: grader")
        data = _stated(row["data"], f"{where}: data")
        if data is not None and "size" in data and not data["size"].isdigit():
            raise PublishedError(f"{where}: data size {data['size']!r} is not a whole number")
        rows.append(
            Published(
                benchmark=benchmark,
                table=row["table"],
                model=row["model"],
                setting=setting,
                score=row["score"],
                metric=row["metric"],
                group=group,
                printed=row["value"],
                unit=row["unit"],
                n=n,
                source=row["source"],
                note=row["note"],
                location=where,
                generation=generation,
                grader=grader,
                data=data,
            )
        )
    return rows


def published_files(benchmark: str) -> list[Any]:
    """The ``published*.tsv`` files of ``tasks/<benchmark>`` (package data), sorted by name."""
    try:
        folder = importlib.resources.files(f"{TASKS_PACKAGE}.{benchmark}")
    except ModuleNotFoundError:
        return []
    return sorted(
        (f for f in folder.iterdir() if re.fullmatch(r"published[\w-]*\.tsv", f.name)),
        key=lambda f: f.name,
    )


def load_published(benchmark: str) -> list[Published]:
    """Every published number that ``tasks/<benchmark>`` declares ([] when it declares none)."""
    rows: list[Published] = []
    for file in published_files(benchmark):
        rows += parse_published(
            file.read_text(encoding="utf-8"), benchmark, f"tasks/{benchmark}/{file.name}"
        )
    return rows


def benchmarks_with_published() -> list[str]:
    """Benchmark folders that declare published numbers."""
    return [name for name in benchmarks() if published_files(name)]


# --- model names ----------------------------------------------------------------------------

ALIASES: dict[str, str] = {
    # provider model ids that do not reduce to a paper's name by normalize_model()
    "openai/text-davinci-003": "GPT-3",
    "openai/gpt-3.5-turbo-1106": "GPT-3.5-1106",
    "openai/gpt-3.5-turbo-0613": "GPT-3.5-0613",
    # Llama 2 on the Hub: base and chat models are different rows of the papers
    **{f"meta-llama/Llama-2-{size}b-hf": f"LLaMA2-{size.upper()}B" for size in ("7", "13", "70")},
    **{
        f"meta-llama/Llama-2-{size}b-chat-hf": f"LLaMA2-{size.upper()}B_chat"
        for size in ("7", "13", "70")
    },
    # a leaderboard's names: a Hub id it spells with the owner, and Mistral's API
    # names of the models it lists under their open-weight names
    "microsoft/WizardLM-2-7B": "microsoft_WizardLM-2-7B",
    "mistral/mistral-large-2407": "Mistral-Large-Instruct-2407",
    "mistral/open-mistral-nemo-2407": "Mistral-Nemo-Instruct-2407",
    "mistral/codestral-2405": "Codestral-22B-v0_1",
}
"""Provider model id -> the papers' model name. ``--alias`` adds or overrides entries."""

_SNAPSHOT = re.compile(r"[-_@](20\d\d-?\d\d-?\d\d|latest)$")
_VARIANT = re.compile(r"(instruct|chat|turbo|hf|it)$")


def _base_and_snapshot(name: str) -> tuple[str, str]:
    """The last path part without its snapshot suffix, and the snapshot (``20240620``,
    ``latest`` or "")."""
    base = name.strip().rstrip("/").rsplit("/", 1)[-1]
    found = _SNAPSHOT.search(base)
    if found is None:
        return base, ""
    return base[: found.start()], found.group(1).replace("-", "").lower()


def normalize_model(name: str) -> str:
    """A model name reduced for comparison: the last path part, no snapshot date, no
    punctuation, lower case.

    ``openai/gpt-4o-2024-05-13``, ``mockllm/gpt-4o`` and ``GPT-4o`` all give ``gpt4o``;
    ``together/meta-llama/Meta-Llama-3.1-70B-Instruct`` and a leaderboard's
    ``Meta-Llama-3_1-70B-Instruct`` give ``llama3170binstruct`` (see :func:`loose_model`
    for the variant suffix). A ``-preview`` stays: ``o1-preview`` is not ``o1``.
    """
    base, _ = _base_and_snapshot(name)
    base = base.lower().removeprefix("meta-")
    return re.sub(r"[^a-z0-9]", "", base)


def model_snapshot(name: str) -> str:
    """The snapshot a model name pins (``claude-3-5-sonnet-20240620``: ``20240620``), or ""."""
    return _base_and_snapshot(name)[1]


def loose_model(name: str) -> str:
    """:func:`normalize_model` without a trailing variant word (instruct, chat, turbo, hf, it).

    Tried only when no paper name matches exactly, and one way only: a run's
    ``Qwen2-72B-Instruct`` may be a paper's ``Qwen2-72B`` (papers drop the suffix), but a
    run's base model ``Qwen2-72B`` is never a paper's ``Qwen2-72B-Instruct``."""
    base = normalize_model(name)
    for _ in range(2):
        base = _VARIANT.sub("", base)
    return base


def _is_chat(name: str) -> bool:
    """Whether a model name marks a chat-tuned variant (``...-chat-hf``, ``..._chat``)."""
    return re.search(r"chat", _base_and_snapshot(name)[0], re.IGNORECASE) is not None


@dataclass
class ModelNames:
    """Maps the models of runs to the papers' model names (aliases first, then normalisation).

    Two different models never share a paper's row: a paper's name that pins a snapshot
    (``claude-3-5-sonnet-20240620``) matches only runs of that snapshot (not
    ``...-20241022`` nor ``...-latest``); a name without one (``GPT-4o``) stands for
    the model under that name, whichever dated snapshot a run records. A base model
    never matches an instruct or chat row (see :func:`loose_model`).
    """

    aliases: dict[str, str] = field(default_factory=lambda: dict(ALIASES))
    _found: dict[tuple[str, tuple[str, ...]], list[str]] = field(
        default_factory=dict, repr=False, compare=False
    )
    """paper_names' answers, by model and names known (a report asks once per run)."""

    def add(self, pairs: Iterable[str]) -> None:
        """Add ``mine=Paper name`` pairs (the ``--alias`` option); ValueError on a bad one."""
        self._found.clear()
        for pair in pairs:
            mine, sep, paper = pair.partition("=")
            if not sep or not mine.strip() or not paper.strip():
                raise ValueError(f"--alias {pair!r} is not of the form MODEL=PAPER_NAME")
            self.aliases[mine.strip()] = paper.strip()

    def paper_names(self, model: str, known: Iterable[str]) -> list[str]:
        """The papers' names (among ``known``) that ``model`` stands for."""
        known = list(dict.fromkeys(known))
        key = (model, tuple(known))
        if key not in self._found:
            self._found[key] = self._paper_names(model, known)
        return list(self._found[key])

    def _paper_names(self, model: str, known: list[str]) -> list[str]:
        aliased = self.aliases.get(model)
        if aliased is None:
            # a run's model may be recorded with a provider prefix the alias lacks, or not
            short = model.split("/", 1)[1] if "/" in model else model
            aliased = self.aliases.get(short)
        if aliased is None:
            # or under another provider (mockllm/gpt-3.5-turbo-1106, azure/...): the last part
            last = model.rsplit("/", 1)[-1].lower()
            by_last = {k.rsplit("/", 1)[-1].lower(): v for k, v in self.aliases.items()}
            aliased = by_last.get(last)
        # an alias names another paper's row: the model's own name may still be this one's
        for target in [aliased, model] if aliased is not None else [model]:
            found = self._matches(target, known)
            if found:
                return found
        return []

    @staticmethod
    def _matches(target: str, known: list[str]) -> list[str]:
        snapshot = model_snapshot(target)
        # a paper's pinned snapshot must be the run's
        candidates = [k for k in known if model_snapshot(k) in ("", snapshot)]
        wanted = normalize_model(target)
        exact = [k for k in candidates if normalize_model(k) == wanted]
        if exact:
            return exact
        loose = loose_model(target)
        found = [k for k in candidates if normalize_model(k) == loose]
        if _is_chat(target) and any(_is_chat(k) for k in known):
            # a paper that marks chat models (LLaMA2-70B_chat) keeps them apart from the
            # base model's row: a chat run never meets an unmarked row there
            found = [k for k in found if _is_chat(k)]
        # a loose match must be unambiguous (one model, however many spellings)
        return found if len({normalize_model(k) for k in found}) == 1 else []


# --- matching a run ---------------------------------------------------------------------------

SPLIT = "split"


@dataclass(frozen=True)
class Match:
    """A published cell that a run reproduces (or reproduces on another split)."""

    cell: Published
    split_differs: str = ""
    """Non-empty when the run's split is not the published one: ``published on test, run on validation``."""
    differs: tuple[str, ...] = ()
    """The stated parts of the setting in which the run differs from the cell, one note each
    (an extractor, the scoring, a generation setting the run left to the provider, epochs)."""


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) and len(a) == 1:
        a = a[0]
    if isinstance(b, list | tuple) and len(b) == 1:
        b = b[0]
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return str(a).strip().lower() == str(b).strip().lower()
    try:
        return math.isclose(float(a), float(b))
    except (TypeError, ValueError):
        return str(a).strip().lower() == str(b).strip().lower()


def matching_cells(
    cells: Sequence[Published],
    model: str,
    args: Mapping[str, Any],
    names: ModelNames,
    defaults: Mapping[str, Any] | None = None,
    *,
    compared: Iterable[str] = (),
    noted: Mapping[str, str] | Callable[[Published], Mapping[str, str]] | None = None,
    generation: Mapping[str, Any] | None = None,
    default_generation: Mapping[str, Any] | None = None,
    epochs: int = 1,
) -> list[Match]:
    """The published cells whose model and whole setting a run matches.

    The setting is every argument a cell lists and every argument in ``compared`` (the
    task arguments that change what is evaluated): a cell that does not list one stands
    for the task's default (``defaults``), and a run that does not record one ran with
    it. A difference in an argument of ``noted`` (argument -> a note, ``{have}`` and
    ``{wanted}`` replaced; or a function of the cell giving that mapping) is said in the
    match's ``differs``; any other difference means another experiment: no match.

    Generation settings (``generation``: the run's): a cell meets the run only when every
    setting its source states (``cell.generation``) is the run's; a stated one the run left
    to the provider is noted. A setting the source leaves unstated is noted when the run's
    differs from the task's default (``default_generation``). A run of several ``epochs``
    is noted (its accuracy is a mean over epochs; the papers ran each question once).

    The split is matched apart: a run on another split still matches, flagged
    ``split_differs`` (a paper's test split may be one users cannot score), unless the
    same number (model, score, metric, group and other settings) is also published on
    the run's split: then only that one is the run's comparison.
    """
    defaults = defaults or {}
    generation = generation or {}
    default_generation = default_generation or {}
    compared = list(compared)
    paper = set(names.paper_names(model, (c.model for c in cells)))
    out: list[Match] = []
    for cell in cells:
        if cell.setting is None or cell.model not in paper:
            continue
        noted_here = (noted(cell) if callable(noted) else noted) or {}
        split_note = ""
        notes: list[str] = []
        ok = True
        for key in dict.fromkeys([*cell.setting, *compared]):
            if key in cell.setting:
                wanted: Any = cell.setting[key]
            elif key in defaults:
                wanted = defaults[key]
            else:
                continue
            have = args.get(key, defaults.get(key))
            if key == SPLIT:
                if have is not None and not _same(have, wanted):
                    split_note = f"published on {wanted}, run on {have}"
                continue
            if have is not None and _same(have, wanted):
                continue
            if wanted is None and have is None:
                continue
            if key in noted_here:
                notes.append(
                    noted_here[key].replace("{have}", str(have)).replace("{wanted}", str(wanted))
                )
                continue
            ok = False
            break
        if not ok:
            continue
        found = generation_notes(cell, generation, default_generation)
        if found is None:
            continue
        notes += found
        if epochs != 1:
            notes.append(f"mean over {epochs} epochs (the paper ran each question once)")
        out.append(Match(cell, split_note, tuple(notes)))
    # a number published on the run's own split is the comparison: the same number on
    # another split (a test leaderboard beside a validation run) is left out
    own = {_same_number(m.cell) for m in out if not m.split_differs}
    return [m for m in out if not m.split_differs or _same_number(m.cell) not in own]


def generation_notes(
    cell: Published, generation: Mapping[str, Any], default_generation: Mapping[str, Any]
) -> list[str] | None:
    """The notes on a run's generation settings beside ``cell``; None when a setting the
    cell's source states differs (the run meets no such cell)."""
    stated = cell.generation or {}
    unset: list[str] = []
    unstated: list[str] = []
    for key in GENERATION:
        have = generation.get(key)
        if key in stated:
            if have is None:
                unset.append(f"{key}={stated[key]}")
            elif not _same(have, stated[key]):
                return None
            continue
        default = default_generation.get(key)
        if have is not None and (default is None or not _same(have, default)):
            told = "the provider's" if default is None else str(default)
            unstated.append(f"{key}={have} (the task's default: {told})")
    notes = []
    if unset:
        notes.append(f"the source sets {' '.join(unset)}; this run left it to the provider")
    if unstated:
        notes.append(f"{', '.join(unstated)}: a setting the source does not state")
    return notes


def _same_number(cell: Published) -> tuple[Any, ...]:
    """A cell's identity but for its split: model, score, metric, group, other settings."""
    setting = tuple(sorted((k, v) for k, v in (cell.setting or {}).items() if k != SPLIT))
    return (cell.model, cell.score, cell.metric, cell.group, setting)


def group_metric_candidates(cell: Published, prefixes: Sequence[str] = ()) -> list[str]:
    """Metric names under which a run may log the cell's group (old and current naming)."""
    if cell.group is None:
        return [cell.metric]
    key, value = cell.group
    names = [f"{key}={value}", f"{cell.metric}[{key}={value}]"]
    names += [f"{p}{value}" for p in prefixes]
    names += [f"grouped_{value}", f"{cell.metric}_{key}_{value}", f"{cell.metric}_by_{key}_{value}"]
    return list(dict.fromkeys(names))


# --- Markdown ---------------------------------------------------------------------------------


def published_markdown(cells: Sequence[Published], title: str = "") -> str:
    """The cells as Markdown: one table per (paper, table); a row per model and setting,
    a column per metric and group, each value as printed."""
    lines: list[str] = [f"# {title}", ""] if title else []
    by_table: dict[tuple[str, str], list[Published]] = {}
    for cell in cells:
        by_table.setdefault((cell.paper, cell.table), []).append(cell)
    for (paper, table), members in by_table.items():
        columns = list(dict.fromkeys(_column(c) for c in members))
        rows = list(dict.fromkeys((c.model, c.setting_text()) for c in members))
        values: dict[tuple[tuple[str, str], str], Published] = {}
        for c in members:
            values[((c.model, c.setting_text()), _column(c))] = c
        units = sorted({c.unit for c in members})
        ns = sorted({c.n for c in members if c.n is not None})
        lines += [f"## {paper}, {table}", ""]
        about = [f"Values as printed ({', '.join(units)})."]
        if ns:
            about.append(f"n = {', '.join(str(n) for n in ns)}.")
        for what, texts in (
            ("Generation", [_stated_text(c.generation) for c in members]),
            ("Grader", [_grader_text(c.grader) for c in members]),
            ("Data", [_stated_text(c.data) for c in members]),
        ):
            about.append(f"{what}: {'; '.join(dict.fromkeys(texts))}.")
        uncertain = [c for c in members if c.note]
        lines += [" ".join(about), ""]
        lines.append("| model | setting (-T) | " + " | ".join(columns) + " |")
        lines.append("|---|---|" + "|".join("---" for _ in columns) + "|")
        for row in rows:
            shown = []
            for column in columns:
                found = values.get((row, column))
                shown.append("–" if found is None else found.printed + ("*" if found.note else ""))
            lines.append(f"| {row[0]} | `{row[1]}` | " + " | ".join(shown) + " |")
        lines.append("")
        if uncertain:
            lines.append("Notes (cells marked *):")
            lines.append("")
            # each note once per table: the note alone when it is every marked cell's,
            # else the columns (and models, when not all of the column's) it is about
            by_note: dict[str, list[Published]] = {}
            for c in uncertain:
                by_note.setdefault(c.note, []).append(c)
            for note, marked in by_note.items():
                if len(by_note) == 1:
                    lines.append(f"- {note}")
                    continue
                where: list[str] = []
                for column in dict.fromkeys(_column(c) for c in marked):
                    models = list(dict.fromkeys(c.model for c in marked if _column(c) == column))
                    every = {c.model for c in members if _column(c) == column}
                    where.append(
                        column if set(models) == every else f"{column} ({', '.join(models)})"
                    )
                lines.append(f"- {'; '.join(where)}: {note}")
            lines.append("")
    return "\n".join(lines)


def _stated_text(pairs: Mapping[str, str] | None) -> str:
    if pairs is None:
        return UNSTATED
    return " ".join(f"{k}={v}" for k, v in pairs.items())


def _grader_text(grader: Mapping[str, str] | None) -> str:
    return "no model (a fixed comparison)" if grader == {} else _stated_text(grader)


def _column(cell: Published) -> str:
    label = cell.metric if cell.score in ("", "-") else f"{cell.score} {cell.metric}"
    return f"{label} [{cell.group_text()}]" if cell.group else label
