"""What a benchmark declares for ``finmath grid`` and ``finmath report``, and how it is found.

A benchmark folder ``tasks/<name>/`` may hold a module ``grid.py`` with two
module-level constants, both plain data built from the classes below:

``GRID``: a :class:`Grid`: the task function and the paper's runs (a Cartesian
product of task-argument values, or an explicit list of argument sets). A
benchmark whose paper has several experiment grids (e.g. a main table and a
sweep) declares ``GRIDS`` instead: a dict name -> :class:`Grid`, all of the same
task, the first the default (``finmath grid <benchmark> --grid <name>``).

``REPORT``: a :class:`Report`: which metrics hold accuracy and its interval,
which metric names carry per-group accuracies (e.g. per topic), and the
paper's tables and plots as :class:`Table` and :class:`Plot` rows.

Optionally ``NEEDS``: a function of a run's task arguments (the task's defaults
filled in) -> what the run needs from the machine or the command line
(:class:`Sandbox`, :class:`Extra`, :class:`Role`); ``finmath grid`` skips a run
whose need is missing and names it. And ``STRATA``: a :class:`Strata`, how
``finmath grid --limit N`` spreads its N samples over the benchmark's kinds of
question (sections, task types, topics).

The command line names no benchmark: it imports ``finmath_tasks.tasks.<name>.grid``
for every benchmark that has one (``finmath_tasks.tasks.benchmarks``, the one list of
them; see :func:`declarations`).
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from inspect_ai import Task
from inspect_ai.util import registry_info

from finmath_tasks.tasks import benchmarks

TASKS_PACKAGE = "finmath_tasks.tasks"
DECLARATION_MODULE = "grid"

ArgValue = str | int | float | bool | None
Where = Mapping[str, ArgValue | Sequence[ArgValue]]
"""Task argument -> the value (or values) a run must have to be in a table or plot."""


@dataclass(frozen=True)
class Grid:
    """The paper's experiment grid: one Inspect task per argument set (and per model)."""

    task: Callable[..., Task]
    """The ``@task`` function."""
    axes: Mapping[str, Sequence[ArgValue]] = field(default_factory=dict)
    """Argument -> values; the runs are the Cartesian product, in this order."""
    runs: Sequence[Mapping[str, ArgValue]] = ()
    """Explicit argument sets, added after the product (for grids that are not products)."""
    description: str = ""

    @property
    def task_name(self) -> str:
        """The registry name, as logs record it (``finmath_tasks/<name>``)."""
        return str(registry_info(self.task).name)

    def arg_sets(self) -> list[dict[str, ArgValue]]:
        """Every run's task arguments, product first, without duplicates."""
        names = list(self.axes)
        product = [
            dict(zip(names, values, strict=True))
            for values in itertools.product(*(self.axes[n] for n in names))
        ]
        candidates = (
            [*product, *(dict(r) for r in self.runs)] if names else [dict(r) for r in self.runs]
        )
        out: list[dict[str, ArgValue]] = []
        for args in candidates or [{}]:
            if args not in out:
                out.append(args)
        return out


@dataclass(frozen=True)
class Interval:
    """How a cell's confidence interval is obtained from the log's metrics.

    ``kind="wilson"``: the task logs no interval: Inspect's Wilson interval at ``level``
    over the samples scored.
    ``kind="bounds"``: the log holds the task's interval (metrics ``low`` and ``high``,
    Inspect's Wilson, clustered where the task clusters): shown as logged; logs without
    them get the Wilson interval over the samples scored.
    Per-group cells (topics, sections) have no interval in the log: theirs is the
    Wilson interval at ``level`` over the group's scored samples (read from the samples).
    """

    kind: Literal["wilson", "bounds"] = "wilson"
    level: float = 0.95
    low: str = ""
    high: str = ""


@dataclass(frozen=True)
class Groups:
    """Per-group accuracies in the log: metric ``<prefix><group>``.

    The group is the score's metadata ``key`` when the score has it (e.g. a kind of gold
    answer the scorer decides), else the sample's metadata ``key`` (e.g. a topic).
    """

    prefix: str
    key: str
    label: str = "group"
    from_samples: bool = False
    """The task keeps this breakdown out of its metrics (to keep Inspect's summary on one
    screen): the report computes it from the log's samples (``prefix`` unused)."""


@dataclass(frozen=True)
class Column:
    """One column of a table of logged values: metric ``metric`` of score ``score``, as logged.

    ``percent``: show the value x100 with one decimal (a rate); otherwise a whole number
    as an integer (a count) and anything else with 4 significant digits.
    """

    score: str
    metric: str
    label: str = ""
    percent: bool = False

    @property
    def header(self) -> str:
        return self.label or f"{self.score} {self.metric}"


@dataclass(frozen=True)
class Table:
    """One paper-style table: a row per model, a column per value of ``columns``.

    ``columns``: task arguments whose value combinations are the columns; or
    ``"groups"`` for one column per group (topic, section) of ``score``.
    ``rows``: task arguments that split a model's row further (e.g. the solver).
    ``where``: keep only runs with these argument values. Arguments that still
    differ between the kept runs are added to the row label, so no two runs
    share a cell silently.

    ``values``: instead of ``score`` and ``columns``: a table of logged values
    (counts, rates) without an interval, one column per :class:`Column`, a row
    per model and ``rows`` arguments.
    """

    title: str
    score: str = ""
    columns: Sequence[str] | Literal["groups"] = ()
    rows: Sequence[str] = ()
    where: Where = field(default_factory=dict)
    caption: str = ""
    values: Sequence[Column] = ()
    groups: Groups | None = None
    """For ``columns="groups"``: the groups of this table when not the report's."""

    def __post_init__(self) -> None:
        if bool(self.score) == bool(self.values):
            raise ValueError(f"table {self.title!r}: give either score or values")
        if self.values and self.columns:
            raise ValueError(f"table {self.title!r}: a values table has no columns argument")


PlotKind = Literal["groups", "scatter", "line", "heatmap"]


@dataclass(frozen=True)
class Plot:
    """One PNG.

    ``groups``: bars of ``score`` per group (topic), one bar per model.
    ``scatter``: accuracy of ``x`` (a score) against ``score``, one point per run.
    ``line``: ``score`` by the values of task argument ``x``, one line per model.
    ``heatmap``: ``score`` over task arguments ``y`` (rows) x ``x`` (columns), one panel per model.
    """

    name: str
    kind: PlotKind
    score: str
    title: str = ""
    x: str = ""
    y: str = ""
    where: Where = field(default_factory=dict)


@dataclass(frozen=True)
class PublishedScore:
    """What ``finmath report`` says beside the published cells of one score (the cells'
    ``score`` column, ``published*.tsv``).

    ``missing``: said instead of a comparison when a run's log has no such score (logs
    written before the task computed it), so no other metric stands in for it.
    ``role`` and ``role_model``: the publication computed the score with ``role_model``
    in model role ``role`` (e.g. the ``grader`` that extracts answers). A run with the
    task arguments ``where`` whose model in that role is another (the evaluated model
    when the run has no such role) gets ``role_differs`` as a note, ``{model}`` replaced
    by the run's.
    """

    score: str
    missing: str = ""
    role: str = ""
    role_model: str = ""
    """The publication's model in ``role`` where its cells do not state it (their
    ``grader`` column is the first source)."""
    where: Where = field(default_factory=dict)
    role_differs: str = ""
    differs_noted: Mapping[str, str] = field(default_factory=dict)
    """Notes of :attr:`Report.differs_noted` that hold for this score's cells only (a
    measurement made with this score), in place of the report's."""


@dataclass(frozen=True)
class Report:
    """How the logs of one task become tables and plots."""

    accuracy: str = "accuracy"
    """The metric holding each score's accuracy."""
    interval: Interval = Interval()
    groups: Groups | None = None
    tables: Sequence[Table] = ()
    plots: Sequence[Plot] = ()
    notes: str = ""
    published: Sequence[PublishedScore] = ()
    """Notes beside the published cells of particular scores (see :class:`PublishedScore`)."""
    not_compared: Sequence[str] = ()
    """Task arguments that change no published score (e.g. which extra scorer runs): left
    out when a run is matched to published cells (so are the arguments that cannot change
    any score: ``finmath_tasks.identity.NOT_IDENTITY``)."""
    retired: Mapping[str, str] = field(default_factory=dict)
    """Task parameters an earlier version had -> what replaces them (said when ``finmath
    grid -T`` or ``--only`` names one; older logs hold them: list them in
    ``finmath_tasks.identity.NOT_IDENTITY`` with the reason they change no score)."""
    differs_noted: Mapping[str, str] = field(default_factory=dict)
    """Task argument -> the note a comparison row carries when the run's value differs
    from the cell's (``{have}``, ``{wanted}`` replaced): the stated parts (an extractor, the
    scoring) in which a run may differ and still be compared. A difference in any other
    compared argument is another experiment: no comparison."""
    cluster: Callable[[str, Mapping[str, Any]], str] | None = None
    """(sample id, sample metadata) -> the document a question shares with others (a
    table, a report, a case): intervals and standard errors are clustered by it. A task
    that clusters gives ``finmath_tasks.scorers.metrics.document_of``: the unit its dataset
    records and its logged metrics cluster by, declared once."""
    resolve: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    """A run's task arguments (task defaults filled in) -> the values its ``None`` defaults
    stand for (a default that depends on another argument), for matching to cells."""
    generation: Mapping[str, Any] = field(default_factory=dict)
    """The task's default generation settings (its ``Task.config``: ``temperature``,
    ``top_p``, ``max_tokens``): a run that differs in one a published cell's source leaves
    unstated is noted beside the cell. (The settings a source states are the cells' own,
    the ``generation`` column of ``published*.tsv``.)"""


@dataclass(frozen=True)
class Sandbox:
    """The run executes model-written programs: it needs the sandbox the grid's
    ``--sandbox`` names (Inspect's option; default: Docker or bubblewrap, whichever works
    here)."""


@dataclass(frozen=True)
class Extra:
    """The run needs the package's optional extra ``name``, whose module ``module`` is
    imported when the run starts (``pip install -e '.[<name>]'`` in the checkout)."""

    name: str
    module: str


@dataclass(frozen=True)
class Role:
    """The run needs model role ``name`` (``--model-role <name>=MODEL``); ``why``: what
    for, and how to run without it."""

    name: str
    why: str = ""


Need = Sandbox | Extra | Role
Needs = Callable[[Mapping[str, Any]], Sequence[Need]]
"""A run's task arguments (defaults filled in) -> what it needs."""


@dataclass(frozen=True)
class Strata:
    """How ``--limit N`` chooses a run's samples: spread over the strata of ``key``.

    A sample's stratum is its metadata ``key`` (or ``of(metadata)`` when given). The
    choice is deterministic: strata in ``order`` (those it names, first), then in the
    order of their first sample in the dataset; the first sample of each stratum, then
    the second of each, and so on (a stratum that runs out is passed over) until N
    samples; within a stratum, dataset order. With N at least the number of strata
    every stratum is in the pilot, and the choice for N is part of the choice for N + 1.
    """

    key: str
    label: str
    of: Callable[[Mapping[str, Any]], str] | None = None
    order: Sequence[str] = ()
    """Strata taken first, in this order (e.g. one of each of a paper's categories)."""

    def stratum(self, metadata: Mapping[str, Any] | None) -> str:
        metadata = metadata or {}
        if self.of is not None:
            return str(self.of(metadata))
        return str(metadata.get(self.key))


DEFAULT_GRID = "main"
"""The name of a benchmark's only grid when it declares ``GRID``."""


@dataclass(frozen=True)
class Declaration:
    """A benchmark's grids and report, as found in ``tasks/<folder>/grid.py``."""

    benchmark: str
    grid: Grid
    """The default grid (``GRID``, or the first of ``GRIDS``)."""
    report: Report
    grids: Mapping[str, Grid] = field(default_factory=dict)
    """Every named grid, the default first (``{"main": GRID}`` for a single ``GRID``)."""
    needs: Needs | None = None
    """``NEEDS``: what a run needs (None: nothing beyond the package)."""
    strata: Strata | None = None
    """``STRATA``: how ``--limit`` spreads a run's samples (None: the first N)."""

    def __post_init__(self) -> None:
        if not self.grids:
            object.__setattr__(self, "grids", {DEFAULT_GRID: self.grid})

    @property
    def task_name(self) -> str:
        return self.grid.task_name

    def named(self, name: str | None) -> Grid:
        """The grid called ``name`` (None: the default); KeyError when there is none."""
        return self.grid if name is None else self.grids[name]

    def order(self, arg: str) -> list[ArgValue]:
        """The values of task argument ``arg`` in the order the grids list them (for tables)."""
        values: list[ArgValue] = []
        for grid in self.grids.values():
            for value in grid.axes.get(arg, []):
                if value not in values:
                    values.append(value)
            for args in grid.arg_sets():
                if arg in args and args[arg] not in values:
                    values.append(args[arg])
        return values


class DeclarationError(Exception):
    """A benchmark's ``grid.py`` does not declare what the command line needs."""


def load_declaration(folder: str) -> Declaration | None:
    """The declaration of ``tasks/<folder>``, or None when it has no ``grid.py``."""
    package = f"{TASKS_PACKAGE}.{folder}"
    name = f"{package}.{DECLARATION_MODULE}"
    if importlib.util.find_spec(package) is None or importlib.util.find_spec(name) is None:
        return None
    module = importlib.import_module(name)
    grid: Any = getattr(module, "GRID", None)
    grids: Any = getattr(module, "GRIDS", None)
    report: Any = getattr(module, "REPORT", Report())
    if grids is not None:
        if grid is not None:
            raise DeclarationError(f"{name}: declare GRID or GRIDS, not both")
        if (
            not isinstance(grids, Mapping)
            or not grids
            or not all(isinstance(k, str) and isinstance(g, Grid) for k, g in grids.items())
        ):
            raise DeclarationError(
                f"{name}: GRIDS must be a non-empty dict name -> finmath_tasks.cli.declare.Grid"
            )
        tasks = {g.task_name for g in grids.values()}
        if len(tasks) > 1:
            raise DeclarationError(f"{name}: every grid of GRIDS must run one task ({tasks})")
        grid = next(iter(grids.values()))
    if not isinstance(grid, Grid):
        raise DeclarationError(f"{name}: GRID must be a finmath_tasks.cli.declare.Grid")
    if not isinstance(report, Report):
        raise DeclarationError(f"{name}: REPORT must be a finmath_tasks.cli.declare.Report")
    needs: Any = getattr(module, "NEEDS", None)
    if needs is not None and not callable(needs):
        raise DeclarationError(f"{name}: NEEDS must be a function of a run's task arguments")
    strata: Any = getattr(module, "STRATA", None)
    if strata is not None and not isinstance(strata, Strata):
        raise DeclarationError(f"{name}: STRATA must be a finmath_tasks.cli.declare.Strata")
    return Declaration(
        folder, grid, report, dict(grids) if grids is not None else {}, needs, strata
    )


def declarations(problems: list[str] | None = None) -> dict[str, Declaration]:
    """Benchmark folder name -> its declaration, for every benchmark with a ``grid.py``.

    A declaration that cannot be loaded is left out with a line in ``problems``
    (or raised when ``problems`` is None), so one broken benchmark does not stop
    the others' reports.
    """
    found: dict[str, Declaration] = {}
    for name in benchmarks():
        try:
            declaration = load_declaration(name)
        except Exception as e:
            if problems is None:
                raise
            problems.append(
                f"tasks/{name}/{DECLARATION_MODULE}.py: not loaded "
                f"({type(e).__name__}: {e}); its logs get generic tables"
            )
            continue
        if declaration is not None:
            found[name] = declaration
    return found


def by_task_name(found: Mapping[str, Declaration]) -> dict[str, Declaration]:
    """Registry task name (``finmath_tasks/<name>``, as in logs) -> declaration."""
    return {d.task_name: d for d in found.values()}


def matches(args: Mapping[str, Any], where: Where) -> bool:
    """Whether task arguments ``args`` have the values ``where`` asks for."""
    for key, wanted in where.items():
        value = args.get(key)
        allowed = list(wanted) if isinstance(wanted, list | tuple) else [wanted]
        if value not in allowed and str(value) not in [str(a) for a in allowed]:
            return False
    return True


COMMANDS_MODULE = "commands"


@dataclass(frozen=True)
class Command:
    """A benchmark's own subcommand, ``finmath <benchmark> <name> ...``.

    A benchmark folder may hold a module ``commands.py`` with ``COMMANDS``, a
    dict name -> :class:`Command`; the module must import quickly (the work is
    imported inside ``run``).
    """

    help: str
    add_arguments: Callable[[Any], None]
    """Adds the command's options to its ``argparse`` parser."""
    run: Callable[[Any], int]
    """Runs with the parsed arguments; returns the exit status."""


def benchmark_commands() -> dict[str, dict[str, Command]]:
    """Benchmark folder name -> its commands, for every folder with a ``commands.py``."""
    found: dict[str, dict[str, Command]] = {}
    for benchmark in benchmarks():
        name = f"{TASKS_PACKAGE}.{benchmark}.{COMMANDS_MODULE}"
        if importlib.util.find_spec(name) is None:
            continue
        commands = getattr(importlib.import_module(name), "COMMANDS", None)
        if isinstance(commands, dict) and commands:
            found[benchmark] = commands
    return found
