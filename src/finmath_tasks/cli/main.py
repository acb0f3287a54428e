"""The ``finmath`` command line: ``list``, ``grid``, ``report``, ``published``, ``export``,
``variants``, ``lm-eval``, ``sandbox`` and each benchmark's own commands.

No command writes over an Inspect log, nor over a file it did not write without
``--overwrite`` (``cli/overwrite.py``); a grid holds its log folder while it runs
(``cli/grid_lock.py``); a closed output pipe ends any command quietly (status 141).

finmath list
finmath grid <benchmark> --model M [--model M2] [--only k=v1,v2] [--grid NAME]
             [--selection stratified|first] [--variant-seeds N[,N2]]
             [--dry-run [--price IN/OUT] [--cache-window N]] [INSPECT EVAL-SET OPTIONS]
             # any option of `inspect eval-set`, read by Inspect's parser (cli/inspect_options.py):
             # -T k=v, --limit N, --log-dir DIR, --model-role grader=M, --epochs N, --batch,
             # --reasoning-effort high, --temperature T, --max-samples N, --display D, ...
finmath grid <benchmark> --model M --plan plan.json [--overwrite]  # write the plan (manifest)
finmath grid --plan plan.json --worker I --of N              # run shard I (or $JOB_COMPLETION_INDEX)
finmath report LOG_DIR [--out DIR] [--alias MODEL=PAPER_NAME] [--price IN/OUT] [--pair-across-data]
               [--overwrite]
finmath published [BENCHMARK] [--table T]                   # the papers' numbers, Markdown
finmath export LOG -o predictions.json [--format rows|submission] [--partial] [--overwrite]
finmath variants TASK [--seed N] [--split S] [--data-dir DIR] [--show ID]  # fresh variants
finmath lm-eval path                                        # for lm_eval --include_path
finmath sandbox compose-path                                # for --sandbox docker:FILE
finmath <benchmark> <command> ...                           # a benchmark's own commands
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

from finmath_tasks._inspect_private import PrerequisiteError, parse_cli_args
from finmath_tasks.cli.declare import Declaration, benchmark_commands, declarations
from finmath_tasks.cli.grid import (
    WORKER_INDEX_ENV,
    GridError,
    GridOptions,
    check_options,
    dry_run_lines,
    grid_runs,
    plain,
    read_plan,
    run_grid,
    run_worker,
    shard,
    write_plan,
)
from finmath_tasks.cli.grid_lock import LogDirBusy, hold_log_dir
from finmath_tasks.cli.inspect_options import (
    InspectOptionError,
    InspectOptions,
    check_numbers,
    inspect_option_names,
    split,
)
from finmath_tasks.cli.inspect_options import read as read_inspect
from finmath_tasks.cli.overwrite import (
    is_export,
    output_kind,
    output_problem,
    plan_overwrites,
    write_stream,
)
from finmath_tasks.cli.prerequisites import missing
from finmath_tasks.cli.resume import built_with_roles, resolved_roles
from finmath_tasks.cli.selection import SELECTIONS
from finmath_tasks.cli.store import check_location
from finmath_tasks.identity import role_name
from finmath_tasks.prefix_cache import IN_FLIGHT, WINDOW


class _WholeOptionNames(argparse.HelpFormatter):
    """Help text wrapped between words only (an option name is never cut at a hyphen)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        return textwrap.fill(
            " ".join(text.split()), width, initial_indent=indent,
            subsequent_indent=indent, break_on_hyphens=False,
        )  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="finmath", description="Run the papers' grids and report them as the papers do."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="benchmarks with a declared grid, and their runs")

    grid = sub.add_parser(
        "grid",
        help="run a benchmark's grid as an Inspect eval set",
        description="Run a benchmark's grid as one Inspect eval set. Besides the options "
        "below, every option of `inspect eval-set` is accepted and read by Inspect's own "
        "parser (see `inspect eval-set --help` for what each does): -T K=V and "
        "--task-config for every run of the grid (over the grid's arguments), --log-dir "
        "(default logs/<benchmark>), --limit (spread over the benchmark's strata, see "
        "--selection), --sandbox (for the runs that execute programs), --model-role, "
        "--epochs, --batch, --reasoning-effort, --temperature, --max-tokens, --display ...",
        epilog="Inspect's eval-set options: " + " ".join(inspect_option_names()),
        allow_abbrev=False,
        formatter_class=_WholeOptionNames,
    )
    grid.add_argument("benchmark", nargs="?", help="benchmark folder name (see `finmath list`)")
    grid.add_argument(
        "--model",
        action="append",
        default=[],
        help="a model of the grid (repeatable: every run on each model); replaces "
        "Inspect's --model, which takes one",
    )
    grid.add_argument(
        "--grid",
        dest="grid_name",
        metavar="NAME",
        help="one of the benchmark's named grids (see `finmath list`); default its first",
    )
    grid.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="K=V[,V2]",
        help="keep only the grid's runs with these argument values",
    )
    grid.add_argument(
        "--selection",
        choices=SELECTIONS,
        default="stratified",
        help="how --limit chooses: stratified (default; every stratum first, deterministic) "
        "or first (Inspect's: the first N)",
    )
    grid.add_argument(
        "--variant-seeds",
        metavar="N[,N2]",
        help="also run each run on the fresh variants of these seeds (-T variant=fresh "
        "-T variant_seed=N), beside the published questions",
    )
    grid.add_argument(
        "--dry-run", action="store_true", help="list the runs and what they cost; run nothing"
    )
    grid.add_argument(
        "--price",
        metavar="IN/OUT",
        help="dollars per million input/output tokens for the dry run's cost "
        "(default: the built-in table, see finmath_tasks/cli/prices.py)",
    )
    grid.add_argument(
        "--cache-window",
        type=int,
        default=WINDOW,
        metavar="N",
        help="the dry run's prompt-cache lifetime, in requests: a cached prefix is dropped "
        f"when none of the last N prompts used it (default {WINDOW})",
    )
    grid.add_argument("--plan", help="without --worker: write the plan here; with it: read it")
    grid.add_argument(
        "--overwrite",
        action="store_true",
        help="--plan may replace an existing file that is not a plan (never an Inspect log)",
    )
    grid.add_argument("--worker", type=int, help=f"shard index (default ${WORKER_INDEX_ENV})")
    grid.add_argument("--of", type=int, help="number of shards (workers)")

    report = sub.add_parser("report", help="tables (report.md, report.html) and plots from logs")
    report.add_argument("log_dir", help="Inspect log directory (local or s3://)")
    report.add_argument("--out", type=Path, default=Path("report"), help="output directory")
    report.add_argument("--no-plots", action="store_true", help="tables only")
    report.add_argument(
        "--overwrite",
        action="store_true",
        help="replace report files in --out that no finmath report wrote (never an Inspect log)",
    )
    report.add_argument(
        "--alias",
        action="append",
        default=[],
        metavar="MODEL=PAPER_NAME",
        help="compare MODEL's runs with the published cells of PAPER_NAME (repeatable)",
    )
    report.add_argument(
        "--price",
        metavar="IN/OUT",
        help="dollars per million input/output tokens for every model's cost "
        "(default: the built-in table, see finmath_tasks/cli/prices.py)",
    )
    report.add_argument(
        "--pair-across-data",
        action="store_true",
        help="also pair runs that read different data (different fingerprints) in "
        "paired.csv; each such row says so (default: only runs on the same data)",
    )

    published = sub.add_parser(
        "published", help="the papers' published results, as Markdown tables"
    )
    published.add_argument(
        "benchmark", nargs="?", help="benchmark folder name; default every benchmark"
    )
    published.add_argument("--table", help="only this table (e.g. 'Table 4')")

    export = sub.add_parser("export", help="a log's predictions as JSON (leaderboard files)")
    export.add_argument("log", help="an Inspect log file (.eval or .json)")
    export.add_argument("-o", "--output", required=True, help="JSON file to write")
    export.add_argument("--format", default="rows", help="rows (default) or submission")
    export.add_argument(
        "--partial",
        action="store_true",
        help="export a run that did not finish (its file is named <name>.partial-<held>-of-"
        "<planned>.json); without it such a log is refused",
    )
    export.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing file that is not an earlier export (never an Inspect log)",
    )
    lm_eval = sub.add_parser(
        "lm-eval", help="lm-evaluation-harness: where our task configurations are"
    )
    lm_eval_sub = lm_eval.add_subparsers(dest="lm_eval_command", required=True)
    lm_eval_sub.add_parser(
        "path",
        help='print the folder for `lm_eval --include_path` (needs the "lm-eval" extra)',
    )
    variants = sub.add_parser(
        "variants",
        help="fresh variants: the questions left out (with the reason), or one side by side",
    )
    variants.add_argument("task", help="a task with fresh variants (-T variant=fresh)")
    variants.add_argument("--seed", type=int, default=1, help="variant_seed (default 1)")
    variants.add_argument("--show", help="a question id: its original and variant side by side")
    variants.add_argument("--split", help="default: the task's evaluated split")
    variants.add_argument("--data-dir", help="as -T data_dir= (default $FINMATH_DATA_DIR)")
    sandbox = sub.add_parser("sandbox", help="the sandboxes that run model-written programs")
    sandbox_sub = sandbox.add_subparsers(dest="sandbox_command", required=True)
    sandbox_sub.add_parser(
        "compose-path",
        help="print our compose.yaml, for Inspect's own Docker sandbox: "
        "--sandbox docker:$(finmath sandbox compose-path)",
    )
    for benchmark, commands in benchmark_commands().items():
        own = sub.add_parser(benchmark, help=f"{benchmark}: {', '.join(commands)}")
        inner = own.add_subparsers(dest="benchmark_command", required=True)
        for name, command in commands.items():
            parser_ = inner.add_parser(name, help=command.help, description=command.help)
            command.add_arguments(parser_)
            parser_.set_defaults(benchmark_run=command.run)
    return parser


def _grid_options(parser: argparse.ArgumentParser) -> dict[str, bool]:
    """The grid's own option strings -> whether each takes a value."""
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    grid = sub.choices["grid"]
    return {
        option: action.nargs != 0 for action in grid._actions for option in action.option_strings
    }


def _fail(message: str) -> int:
    print(f"finmath: {message}", file=sys.stderr)
    return 2


def _declaration(name: str | None, found: dict[str, Declaration]) -> Declaration | str:
    if not name:
        return "name a benchmark: " + ", ".join(found)
    if name not in found:
        return f"no grid is declared for {name!r}; benchmarks with one: {', '.join(found)}"
    return found[name]


def _pairs(values: list[str], what: str) -> dict[str, Any]:
    for value in values:
        if "=" not in value:
            raise ValueError(f"{what} {value!r} is not of the form NAME=VALUE")
    return parse_cli_args(values)


def _grid(args: argparse.Namespace, inspect_args: list[str]) -> int:
    found = declarations()
    try:
        inspect = read_inspect(inspect_args)
    except InspectOptionError as e:
        return _fail(str(e))
    display = inspect.raw.get("display") if inspect.given("display") else None
    if args.worker is not None or args.of is not None:
        return _worker(args, found, inspect_args, inspect, display)
    declaration = _declaration(args.benchmark, found)
    if isinstance(declaration, str):
        return _fail(declaration)
    if not args.model:
        return _fail("grid needs at least one --model")
    try:
        options = GridOptions(
            benchmark=declaration.benchmark,
            models=list(args.model),
            log_dir=(
                inspect.kwargs["log_dir"]
                if inspect.given("log_dir")
                else default_log_dir(declaration, args.grid_name)
            ),
            task_args=_task_args(inspect),
            only=_pairs(args.only, "--only"),
            model_roles=_pairs(list(inspect.raw.get("model_role") or ()), "--model-role"),
            limit=_limit(inspect.kwargs.get("limit")),
            eval_set_id=inspect.kwargs.get("eval_set_id"),
            grid=args.grid_name,
            epochs=inspect.raw.get("epochs") if inspect.given("epochs") else None,
            sample_shuffle=inspect.kwargs.get("sample_shuffle"),
            selection=args.selection,
            sandbox=inspect.raw.get("sandbox"),
            inspect_args=list(inspect_args),
            variant_seeds=_seeds(args.variant_seeds),
        )
    except ValueError as e:
        return _fail(str(e))
    problem = check_numbers(options) or check_options(declaration, options)
    if args.cache_window is not None and args.cache_window < 1:
        problem = problem or f"--cache-window {args.cache_window}: must be at least 1"
    if problem:
        return _fail(problem)
    if args.dry_run:
        from finmath_tasks.cli.cost import cost_lines
        from finmath_tasks.cli.prices import PriceError, load_overrides, parse_price

        try:
            price = parse_price(args.price) if args.price is not None else None
            load_overrides()
        except PriceError as e:
            return _fail(str(e))
        runs = grid_runs(declaration, options)
        skipped = missing(declaration, runs, options.model_roles, options.sandbox)
        print("\n".join(dry_run_lines(declaration, options, skipped)))
        numbers = [i + 1 for i in range(len(runs)) if i not in skipped]
        runs = [args for i, args in enumerate(runs) if i not in skipped]
        refused: list[str] = []
        try:  # the tasks are built with the grid's roles bound, as the real grid builds them
            roles = resolved_roles(options)
        except (PrerequisiteError, ValueError, TypeError) as e:
            return _fail(f"--model-role: {e}")
        print(
            "\n".join(
                built_with_roles(
                    roles,
                    lambda: cost_lines(
                        declaration,
                        runs,
                        options.models,
                        limit=options.limit,
                        max_tokens=options.generation().get("max_tokens"),
                        batch=options.generation().get("batch"),
                        price=price,
                        window=args.cache_window,
                        in_flight=options.max_samples or IN_FLIGHT,
                        grader=(
                            role_name(options.model_roles["grader"])
                            if "grader" in options.model_roles
                            else None
                        ),
                        numbers=numbers,
                        refused=refused,
                    ),
                )
            )
        )
        if refused:  # the real grid stops on such a run: so does its dry run
            more = (
                f" (and {len(refused) - 1} more run(s), listed above)" if len(refused) > 1 else ""
            )
            return _fail(f"{refused[0]}{more}: a real grid would stop here")
        return 0
    kind, problem = output_kind("--plan", args.plan) if args.plan else ("file", "")
    streamed = kind != "file"  # a pipe or device: written, never read nor checked as a file
    problem = problem or _unreachable(
        (options.log_dir, "log directory"), (None if streamed else args.plan, "plan")
    )
    problem = problem or _not_a_folder(options.log_dir)
    problem = problem or (
        plan_overwrites(args.plan, options.log_dir, args.overwrite)
        if args.plan and not streamed
        else ""
    )
    if problem:
        return _fail(problem)
    if args.plan:
        stream = partial(write_stream, kind, args.plan) if streamed else None
        try:
            plan, skipped_lines = write_plan(declaration, options, args.plan, stream)
        except GridError as e:
            return _fail(str(e))
        except BrokenPipeError:
            raise
        except OSError as e:  # e.g. /dev/full
            return _fail(f"--plan {args.plan}: cannot write ({e.strerror or e})")
        tasks = plan["manifest"]["tasks"]
        said = sys.stderr if streamed else sys.stdout  # the plan itself may be on stdout
        for line in skipped_lines:
            print(line, file=said)
        print(
            f"wrote the plan of {len(tasks)} tasks to {args.plan} (eval set {options.eval_set_id})",
            file=said,
        )
        print(
            f"run shard I of N with: finmath grid --plan {args.plan} --worker I --of N", file=said
        )
        return 0
    try:
        with hold_log_dir(options.log_dir) as hold:
            result = run_grid(declaration, options, display)
            disturbed = hold.problem()
    except (GridError, LogDirBusy) as e:
        return _fail(str(e))
    note = hold.note
    print("\n".join([*result.lines[:-1], *([note] if note else []), *result.lines[-1:]]))
    if disturbed:  # the folder was not held to the end: the run may have been doubled
        print(f"finmath: {disturbed}", file=sys.stderr)
        return result.status or 1
    return result.status


def _not_a_folder(log_dir: str) -> str | None:
    """A message when the (local) log directory is an existing file."""
    if "://" not in log_dir and Path(log_dir).exists() and not Path(log_dir).is_dir():
        return f"--log-dir {log_dir}: a file, not a folder; give a folder for the logs"
    return None


def default_log_dir(declaration: Declaration, grid: str | None) -> str:
    """``logs/<benchmark>``; ``logs/<benchmark>-<grid>`` for a grid other than the default."""
    if grid is None or declaration.grids.get(grid, declaration.grid) is declaration.grid:
        return f"logs/{declaration.benchmark}"
    return f"logs/{declaration.benchmark}-{grid}"


def _worker(
    args: argparse.Namespace,
    found: dict[str, Declaration],
    inspect_args: list[str],
    inspect: InspectOptions,
    display: str | None,
) -> int:
    index = args.worker
    if index is None:
        env = os.environ.get(WORKER_INDEX_ENV, "").strip()
        if not env.isdigit():
            return _fail(f"--of needs --worker I or ${WORKER_INDEX_ENV}")
        index = int(env)
    if args.of is None:
        return _fail("--worker needs --of N (the number of workers)")
    if not args.plan:
        return _fail("--worker needs --plan FILE (written by `finmath grid ... --plan FILE`)")
    problem = _unreachable((args.plan, "plan"))
    if problem:
        return _fail(problem)
    try:
        plan = read_plan(args.plan)
    except FileNotFoundError:
        return _fail(f"cannot read the plan {args.plan}: no such file")
    except (OSError, ValueError) as e:
        return _fail(f"cannot read the plan {args.plan}: {e}")
    benchmark = plan["options"]["benchmark"]
    if args.benchmark and args.benchmark != benchmark:
        return _fail(f"the plan {args.plan} is for {benchmark!r}, not {args.benchmark!r}")
    declaration = _declaration(benchmark, found)
    if isinstance(declaration, str):
        return _fail(declaration)
    grid_name = plan["options"].get("grid")
    if grid_name is not None and grid_name not in declaration.grids:
        return _fail(f"the plan {args.plan} names grid {grid_name!r}, which {benchmark} lacks")
    if inspect.given("log_dir"):
        plan["options"]["log_dir"] = inspect.kwargs["log_dir"]
    # the worker's own Inspect options (e.g. --display, --max-samples) after the plan's
    plan["options"]["inspect_args"] = [*plan["options"].get("inspect_args", []), *inspect_args]
    try:
        read_inspect(plan["options"]["inspect_args"])
    except InspectOptionError as e:
        return _fail(f"the plan {args.plan} with this worker's options: {e}")
    problem = _unreachable((plan["options"]["log_dir"], "log directory"))
    if problem:
        return _fail(problem)
    try:
        shard([], index, args.of)  # a bad index is said before the folder is held
        with hold_log_dir(plan["options"]["log_dir"], (index, args.of)) as hold:
            success, lines = run_worker(declaration, plan, index, args.of, display)
            disturbed = hold.problem()
    except (ValueError, GridError, LogDirBusy) as e:
        return _fail(str(e))
    except PrerequisiteError as e:  # e.g. the grid's tasks changed since the plan was written
        return _fail(f"the plan {args.plan} does not match the {benchmark} grid: {plain(e)}")
    note = hold.note
    print("\n".join([*lines[:-1], *([note] if note else []), *lines[-1:]]))
    if disturbed:  # the folder was not held to the end: a shard may have run twice
        print(f"finmath: {disturbed}", file=sys.stderr)
        return 1
    return 0 if success else 1


def _unreachable(*locations: tuple[str | None, str]) -> str | None:
    """The first problem with a remote location (bucket, credentials, endpoint), if any."""
    for location, what in locations:
        if location:
            problem = check_location(location, what)
            if problem:
                return problem
    return None


def _list() -> int:
    for name, declaration in declarations().items():
        named = len(declaration.grids) > 1
        for i, (grid_name, grid) in enumerate(declaration.grids.items()):
            runs = grid.arg_sets()
            if named:
                default = " (default)" if i == 0 else ""
                title = f"{name} --grid {grid_name}{default}"
            else:
                title = name
            print(f"{title} ({declaration.task_name}): {len(runs)} runs")
            if grid.description:
                print(f"  {grid.description}")
            for axis, values in grid.axes.items():
                print(f"  {axis}: {', '.join(str(v) for v in values)}")
            if grid.runs:
                print(f"  and {len(grid.runs)} explicit run(s)")
    return 0


def _published(benchmark: str | None, table: str | None) -> int:
    from finmath_tasks.cli.published import (
        PublishedError,
        benchmarks_with_published,
        load_published,
        published_markdown,
    )

    available = benchmarks_with_published()
    if benchmark is not None and benchmark not in available:
        return _fail(
            f"no published results are declared for {benchmark!r}; "
            f"benchmarks with some: {', '.join(available)}"
        )
    out: list[str] = []
    for name in [benchmark] if benchmark else available:
        try:
            cells = load_published(name)
        except PublishedError as e:
            return _fail(str(e))
        if table is not None:
            cells = [c for c in cells if c.table.lower() == table.lower()]
            if not cells:
                continue
        out.append(published_markdown(cells, title=f"{name}: published results"))
    if not out:
        return _fail(f"no table {table!r} among the published results")
    print("\n".join(out))
    return 0


def _has_logs(log_dir: str) -> bool:
    from finmath_tasks.cli.reading import log_files

    try:
        return bool(log_files(log_dir))
    except (FileNotFoundError, NotADirectoryError):
        return False


CLOSED_PIPE = 141
"""Exit status when the reader of our output went away (``finmath list | head -1``): as a
shell reports a command ended by SIGPIPE; nothing is printed."""


def main(argv: list[str] | None = None) -> int:
    """The ``finmath`` command (the console script's entry point). A closed output pipe
    ends it quietly with :data:`CLOSED_PIPE`."""
    try:
        status = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        return CLOSED_PIPE
    return status


def _discard_stdout() -> None:
    """Point the standard output at /dev/null, so that the interpreter's last flush of
    what is still buffered does not fail again on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a real file (a test's capture): nothing to flush
        pass


def _main(argv: list[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    inspect_args: list[str] = []
    if words[:1] == ["grid"]:  # the grid's own words to argparse, Inspect's to Inspect
        try:
            mine, inspect_args = split(words[1:], _grid_options(parser))
        except InspectOptionError as e:
            return _fail(f"grid: {e}")
        words = ["grid", *mine]
    args = parser.parse_args(words)
    if getattr(args, "benchmark_run", None) is not None:
        return int(args.benchmark_run(args))
    if args.command == "list":
        return _list()
    if args.command == "grid":
        return _grid(args, inspect_args)
    if args.command == "report":
        from finmath_tasks.cli.prices import PriceError, load_overrides, parse_price
        from finmath_tasks.cli.published import ModelNames
        from finmath_tasks.cli.report import report

        try:
            ModelNames().add(args.alias)
            price = parse_price(args.price) if args.price is not None else None
            load_overrides()
        except (ValueError, PriceError) as e:
            return _fail(str(e))
        problem = _unreachable((args.log_dir, "log directory"))
        if problem:
            return _fail(problem)
        if not _has_logs(args.log_dir):
            # nothing to report: no empty report.md/html (nor an --out folder) left behind
            print(
                f"finmath: {args.log_dir}: no Inspect logs (*.eval, *.json) found; nothing written",
                file=sys.stderr,
            )
            return 1
        return report(
            args.log_dir,
            args.out,
            plots=not args.no_plots,
            aliases=args.alias,
            price=price,
            pair_across_data=args.pair_across_data,
            overwrite=args.overwrite,
        )
    if args.command == "lm-eval":
        return _lm_eval_path()
    if args.command == "sandbox":
        from finmath_tasks.sandbox.resolve import COMPOSE_FILE

        print(COMPOSE_FILE)
        return 0
    if args.command == "published":
        return _published(args.benchmark, args.table)
    if args.command == "variants":
        from finmath_tasks.cli.variants import variants_command

        try:
            return variants_command(args.task, args.seed, args.show, args.split, args.data_dir)
        except (ValueError, PrerequisiteError) as e:  # bad data or settings: one line, exit 1
            return _fail(str(e))
    if args.command == "export":
        from finmath_tasks.export import ExportError, export

        problem = _unreachable((args.log, "log"))
        if problem:
            return _fail(problem)

        def guard(target: Path) -> str:
            return output_problem("-o", target, is_export, "an earlier export", args.overwrite)

        kind, problem = output_kind("-o", args.output)
        if problem:
            return _fail(problem)
        stream = None if kind == "file" else partial(write_stream, kind, args.output)
        try:
            export(args.log, Path(args.output), args.format, args.partial, guard, stream)
        except ExportError as e:
            return _fail(str(e))
        return 0
    return _fail(f"unknown command {args.command}")


def _task_args(inspect: InspectOptions) -> dict[str, Any]:
    """``-T`` (and ``--task-config``) as Inspect read them; a ``-T`` without ``=`` is refused."""
    for value in inspect.raw.get("t") or ():
        if "=" not in value:
            raise ValueError(f"-T {value!r} is not of the form NAME=VALUE")
    return dict(inspect.kwargs.get("task_args") or {})


def _limit(value: Any) -> int | None:
    """Inspect's ``--limit`` as the grid takes it: a count (a range is Inspect's own
    selection of samples, which the grid's strata and identities do not follow)."""
    if value is None or isinstance(value, int):
        return value
    first, last = value
    raise ValueError(
        f"--limit {first + 1}-{last}: finmath grid takes a count of samples per task "
        "(with --selection first: the first N)"
    )


def _seeds(text: str | None) -> list[int]:
    """``--variant-seeds 1,2,3`` as integers (a bad list is refused with the flag named)."""
    if text is None:
        return []
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--variant-seeds {text}: not a list of integers") from None
    if not seeds:  # `--variant-seeds ''` would run no variant at all
        raise ValueError(f"--variant-seeds {text!r}: no seed given (e.g. --variant-seeds 1,2)")
    return seeds


def _lm_eval_path() -> int:
    """`finmath lm-eval path`: the configurations' folder, or what to install first."""
    from finmath_tasks.lm_eval import INSTALL_HINT, config_dir, lm_eval_installed

    if not lm_eval_installed():
        return _fail(
            "lm-evaluation-harness is not installed; our lm_eval tasks need the lm-eval "
            f"extra: {INSTALL_HINT}"
        )
    print(config_dir())
    return 0


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())
