"""Published results as data: the schema, model names, matching runs, `finmath published`."""

from __future__ import annotations

import inspect as pyinspect
import math
from pathlib import Path

import pytest

from benchmark_list import WITH_UPSTREAM
from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.main import main
from finmath_tasks.cli.published import (
    COLUMNS,
    ModelNames,
    PublishedError,
    benchmarks_with_published,
    load_published,
    matching_cells,
    normalize_model,
    parse_published,
    published_markdown,
)

HEADER = "\t".join(COLUMNS)


def _tsv(*rows: str) -> str:
    return "\n".join(["# a comment", HEADER, *rows]) + "\n"


ROW_COT = "Table 4\tGPT-4o\tsplit=test solver=cot\tfinancemath\taccuracy\t\t60.9\t%\t1000\tp.txt; Table 4; row GPT-4o; column Avg\t\ttemperature=1.0 top_p=1.0\tgrader=gpt-4o-mini\tsplit=test size=1000"
ROW_TOPIC = "Table 4\tGPT-4o\tsplit=test solver=cot\tfinancemath\taccuracy\ttopic=Accounting\t71.5\t%\t\tp.txt; Table 4; row GPT-4o; column Accounting\tgarbled: checked against prose\ttemperature=1.0 top_p=1.0\tgrader=gpt-4o-mini\tsplit=test size=1000"
ROW_POT = "Table 4\tLlama-3.1-70B\tsplit=test solver=pot\tfinancemath\texecution_rate\t\t88\t%\t\tp.txt; Table 4; row Llama-3.1-70B; column Exe\t\tunstated\tnone\tunstated"
ROW_NONE = "Table 5\tGPT-4o\t-\t-\taccuracy\t\t12\tcount\t\tp.txt; Table 5; row GPT-4o; column x\tno run of ours\tunstated\tunstated\tunstated"


def test_rows_parse_into_values_groups_settings_and_units() -> None:
    rows = parse_published(_tsv(ROW_COT, ROW_TOPIC, ROW_POT, ROW_NONE), "bench", "f.tsv")
    assert [r.location for r in rows] == ["f.tsv:3", "f.tsv:4", "f.tsv:5", "f.tsv:6"]
    cot, topic, pot, none = rows
    assert cot.setting == {"split": "test", "solver": "cot"}
    assert cot.value == 60.9 and cot.fraction == pytest.approx(0.609) and cot.n == 1000
    assert topic.group == ("topic", "Accounting") and topic.note.startswith("garbled")
    assert pot.printed == "88" and pot.metric == "execution_rate"
    assert none.setting is None and none.fraction is None and none.paper == "p.txt"
    # the setting the source states, as data: generation, grader (none: no model), data
    assert cot.generation == {"temperature": "1.0", "top_p": "1.0"}
    assert cot.grader == {"grader": "gpt-4o-mini"} and pot.grader == {} and none.grader is None
    assert cot.data == {"split": "test", "size": "1000"} and cot.data_size == 1000
    assert pot.generation is None and pot.data is None and pot.data_size is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (ROW_COT.replace("60.9", "sixty"), "value 'sixty' is not a number"),
        (ROW_COT.replace("\t%\t", "\tpercent\t"), "unit 'percent'"),
        (ROW_COT.replace("split=test solver=cot", "split=test cot"), "'cot' is not of the form"),
        (ROW_TOPIC.replace("topic=Accounting", "Accounting"), "group 'Accounting'"),
        (ROW_COT.replace("\t1000\t", "\t1e3\t"), "n '1e3'"),
        (ROW_COT.replace("GPT-4o", ""), "column 'model' is empty"),
        (ROW_COT + "\textra", "15 columns"),
        (ROW_COT.replace("temperature=1.0 top_p=1.0", "seed=1"), "generation setting 'seed'"),
        (ROW_COT.replace("temperature=1.0 top_p=1.0", ""), "column 'generation' is empty"),
        (ROW_COT.replace("size=1000", "size=many"), "data size 'many'"),
    ],
)
def test_a_bad_row_names_the_file_and_line(row: str, message: str) -> None:
    with pytest.raises(PublishedError, match=r"^f\.tsv:3: ") as info:
        parse_published(_tsv(row), "bench", "f.tsv")
    assert message in str(info.value)


def test_a_wrong_header_is_refused() -> None:
    with pytest.raises(PublishedError, match=r"f\.tsv:1: the header must be"):
        parse_published("table\tmodel\n", "bench", "f.tsv")


@pytest.mark.parametrize(
    ("mine", "paper"),
    [
        ("openai/gpt-4o", "GPT-4o"),
        ("openai/gpt-4o-2024-08-06", "GPT-4o"),
        ("mockllm/gpt-4o", "GPT-4o"),
        ("openai/gpt-4o-mini", "GPT-4o-mini"),
        ("anthropic/claude-3-5-sonnet-20240620", "Claude-3.5-Sonnet"),
        ("together/meta-llama/Meta-Llama-3.1-70B-Instruct", "Llama-3.1-70B"),
        ("hf/Qwen/Qwen2-72B-Instruct", "Qwen2-72B"),
    ],
)
def test_provider_ids_map_to_the_papers_names(mine: str, paper: str) -> None:
    known = ["GPT-4o", "GPT-4o-mini", "Claude-3.5-Sonnet", "Llama-3.1-70B", "Qwen2-72B"]
    assert ModelNames().paper_names(mine, known) == [paper]


def test_no_false_friends_among_model_names() -> None:
    known = ["GPT-4o", "GPT-4o-mini", "Llama-3.1-8B", "Llama-3.1-70B"]
    names = ModelNames()
    assert names.paper_names("openai/gpt-4", known) == []
    assert names.paper_names("together/meta-llama/Llama-3.1-405B-Instruct", known) == []
    assert normalize_model("GPT-4o") != normalize_model("GPT-4o-mini")


def _leaderboard_names() -> list[str]:
    cells = load_published("knowledgefmath")
    return list(dict.fromkeys(c.model for c in cells if c.table.startswith("Leaderboard ")))


@pytest.mark.parametrize(
    ("mine", "row"),
    [
        ("openai/gpt-4o", "gpt-4o"),
        ("openai/gpt-4o-2024-05-13", "gpt-4o"),
        ("mockllm/gpt-4o", "gpt-4o"),
        ("gpt-4o", "gpt-4o"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("openai/gpt-4-turbo-2024-04-09", "gpt-4-turbo"),
        ("openai/gpt-3.5-turbo-0125", "gpt-3_5-turbo-0125"),
        ("anthropic/claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20240620"),
        ("claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20240620"),
        ("anthropic/claude-3-haiku-20240307", "claude-3-haiku-20240307"),
        ("google/gemini-1.5-pro", "gemini-1_5-pro"),
        ("deepseek/deepseek-chat", "deepseek-chat"),
        ("Meta-Llama-3_1-70B-Instruct", "Meta-Llama-3_1-70B-Instruct"),
        ("together/meta-llama/Meta-Llama-3.1-70B-Instruct", "Meta-Llama-3_1-70B-Instruct"),
        ("vllm/meta-llama/Llama-3.1-70B-Instruct", "Meta-Llama-3_1-70B-Instruct"),
        ("together/meta-llama/Meta-Llama-3.1-405B-Instruct-Turbo", "Meta-Llama-3_1-405B-Instruct-Turbo"),
        ("hf/meta-llama/Meta-Llama-3.1-8B", "Meta-Llama-3_1-8B"),
        ("hf/meta-llama/Meta-Llama-3.1-8B-Instruct", "Meta-Llama-3_1-8B-Instruct"),
        ("vllm/Qwen/Qwen2-72B-Instruct-AWQ", "Qwen2-72B-Instruct-AWQ"),
        ("hf/01-ai/Yi-1.5-34B-Chat", "Yi-1_5-34B-Chat"),
        ("hf/google/gemma-2-9b-it", "gemma-2-9b-it"),
        ("vllm/microsoft/WizardLM-2-7B", "microsoft_WizardLM-2-7B"),
        ("mistral/mistral-large-2407", "Mistral-Large-Instruct-2407"),
        ("hf/mistralai/Mistral-7B-Instruct-v0.3", "Mistral-7B-Instruct-v0_3"),
    ],
)  # fmt: skip
def test_the_leaderboards_names_and_provider_ids_find_their_row(mine: str, row: str) -> None:
    assert ModelNames().paper_names(mine, _leaderboard_names()) == [row]


@pytest.mark.parametrize(
    "other",
    [
        "anthropic/claude-3-5-sonnet-20241022",  # another snapshot than the row's
        "anthropic/claude-3-5-sonnet-latest",
        "anthropic/claude-3-5-sonnet",
        "openai/gpt-4",  # not gpt-4-turbo
        "openai/gpt-4-turbo-preview",  # gpt-4-0125-preview, not gpt-4-turbo
        "openai/gpt-3.5-turbo",
        "hf/meta-llama/Meta-Llama-3.1-405B",  # a base model is not the instruct row
        "hf/meta-llama/Meta-Llama-3.1-405B-Instruct",  # nor is it Together's Turbo (FP8)
        "hf/google/gemma-2-9b",
        "hf/Qwen/Qwen2-72B",
        "hf/Qwen/Qwen2-72B-Instruct",  # the leaderboard ran the AWQ quantisation
        "google/gemini-1.5-pro-002",
        "hf/deepseek-ai/deepseek-math-7b-rl",
    ],
)
def test_other_models_find_no_leaderboard_row(other: str) -> None:
    assert ModelNames().paper_names(other, _leaderboard_names()) == []


def test_no_two_leaderboard_models_share_a_row() -> None:
    known = _leaderboard_names()
    assert len(known) == 54
    names = ModelNames()
    for name in known:
        assert names.paper_names(name, known) == [name]
    # and across every benchmark's rows: o1 is not o1-preview, a base model not its chat row
    everywhere = [c.model for b in benchmarks_with_published() for c in load_published(b)]
    assert names.paper_names("openai/o1", everywhere) == []
    assert names.paper_names("openai/o1-preview", everywhere) == ["o1-preview"]


def test_an_alias_holds_under_another_provider() -> None:
    names = ModelNames()
    for model in ("openai/gpt-3.5-turbo-1106", "mockllm/gpt-3.5-turbo-1106", "gpt-3.5-turbo-1106"):
        assert names.paper_names(model, ["GPT-3.5-1106", "GPT-3.5-0613"]) == ["GPT-3.5-1106"]
    assert names.paper_names("mockllm/gpt-3.5-turbo-0125", ["GPT-3.5-1106", "GPT-3.5-0613"]) == []


def test_an_alias_maps_any_model_to_a_paper_name() -> None:
    names = ModelNames()
    names.add(["openai-api/local/qwen=GPT-4o"])
    assert names.paper_names("openai-api/local/qwen", ["GPT-4o", "Llama-3.1-70B"]) == ["GPT-4o"]
    with pytest.raises(ValueError, match="MODEL=PAPER_NAME"):
        names.add(["just-a-name"])


def test_matching_uses_the_setting_defaults_and_flags_another_split() -> None:
    cells = parse_published(_tsv(ROW_COT, ROW_TOPIC, ROW_POT, ROW_NONE), "bench", "f.tsv")
    names = ModelNames()
    defaults = {"solver": "cot", "split": "validation"}
    # no solver argument recorded: its default is cot; the split is validation, not test
    found = matching_cells(cells, "openai/gpt-4o", {"split": "validation"}, names, defaults)
    assert [m.cell.location for m in found] == ["f.tsv:3", "f.tsv:4"]
    assert {m.split_differs for m in found} == {"published on test, run on validation"}
    same = matching_cells(cells, "openai/gpt-4o", {"split": "test", "solver": "cot"}, names)
    assert {m.split_differs for m in same} == {""}
    assert matching_cells(cells, "openai/gpt-4o", {"solver": "pot"}, names, defaults) == []
    assert matching_cells(cells, "openai/o1", {"solver": "cot"}, names, defaults) == []
    pot = matching_cells(cells, "vllm/meta-llama/Llama-3.1-70B-Instruct", {"solver": "pot"}, names)
    assert [m.cell.metric for m in pot] == ["execution_rate"]


def test_markdown_has_a_row_per_model_and_setting_and_marks_uncertain_cells() -> None:
    cells = parse_published(_tsv(ROW_COT, ROW_TOPIC, ROW_POT), "bench", "f.tsv")
    text = published_markdown(cells, title="bench: published results")
    assert "## p.txt, Table 4" in text
    assert "| GPT-4o | `split=test solver=cot` | 60.9 | 71.5* | – |" in text, text
    assert "| Llama-3.1-70B | `split=test solver=pot` | – | – | 88 |" in text
    assert "- garbled: checked against prose" in text  # the table's only note, once


def test_finmath_published_prints_each_note_once_per_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["published", "tatqa", "--table", "Table 3"]) == 0
    out = capsys.readouterr().out
    note = "share of this direction's flips whose change is minor (or major)"
    assert out.count(note) == 1  # 16 cells, one note


# --- the benchmarks' own published files ---------------------------------------------------


def _benchmarks() -> list[str]:
    return benchmarks_with_published()


def test_every_benchmark_declares_its_papers_numbers() -> None:
    """Every benchmark of a paper (one that reads its authors' files) declares the paper's
    numbers; a benchmark whose data is its own may have none to declare."""
    missing = [b for b in WITH_UPSTREAM if b not in _benchmarks()]
    assert not missing, f"no published numbers for {missing}: add tasks/<name>/published.tsv"
    assert set(WITH_UPSTREAM) <= set(_benchmarks())


@pytest.mark.parametrize("benchmark", _benchmarks())
def test_published_files_load_and_settings_are_task_arguments(benchmark: str) -> None:
    cells = load_published(benchmark)
    assert cells, benchmark
    declaration = declarations()[benchmark]
    parameters = pyinspect.signature(declaration.grid.task).parameters
    for cell in cells:
        for key in cell.setting or {}:
            assert key in parameters, f"{cell.location}: {key} is not a parameter of the task"


@pytest.mark.parametrize("benchmark", _benchmarks())
def test_every_reproducible_published_cell_is_a_run_of_a_named_grid(benchmark: str) -> None:
    declaration = declarations()[benchmark]
    defaults = {
        p.name: p.default
        for p in pyinspect.signature(declaration.grid.task).parameters.values()
        if p.default is not pyinspect.Parameter.empty
    }
    runs = [
        {**{k: str(v) for k, v in defaults.items()}, **{k: str(v) for k, v in args.items()}}
        for grid in declaration.grids.values()
        for args in grid.arg_sets()
    ]
    missing = []
    for cell in load_published(benchmark):
        if cell.setting is None:
            continue
        wanted = {k: v for k, v in cell.setting.items()}
        if not any(all(run.get(k) == v for k, v in wanted.items()) for run in runs):
            missing.append(f"{cell.location}: {cell.setting_text()}")
    assert not missing, "published cells no grid runs:\n" + "\n".join(missing)


def test_finmath_published_prints_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    benchmark = _benchmarks()[0]
    assert main(["published", benchmark]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# {benchmark}: published results")
    assert "| model | setting (-T) |" in out
    first = load_published(benchmark)[0]
    assert first.printed in out


def test_finmath_published_refuses_an_unknown_benchmark_or_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["published", "nosuch"]) == 2
    assert "no published results are declared for 'nosuch'" in capsys.readouterr().err
    assert main(["published", "--table", "Table 99"]) == 2
    assert "no table 'Table 99'" in capsys.readouterr().err


def test_report_refuses_a_bad_alias(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path), "--alias", "nonsense"]) == 2
    assert "MODEL=PAPER_NAME" in capsys.readouterr().err


def test_a_grouped_cell_is_found_under_the_logs_group_metric_name() -> None:
    from finmath_tasks.cli.compare import _measured
    from finmath_tasks.cli.declare import Report
    from finmath_tasks.cli.runs import Run

    [cell] = parse_published(
        _tsv(ROW_TOPIC.replace("topic=Accounting", "category=SSSD")), "bench", "f.tsv"
    )
    scores = {
        "financemath": {
            "accuracy": 0.25,
            "finmath_tasks/accuracy_by_groups_category=SSSD": 0.5,
            "finmath_tasks/accuracy_by_groups_category=MSSD": 0.75,
        }
    }
    run = Run("x.eval", "t", "m", {}, {}, 4, "2026-01-01", scores)
    assert _measured(run, cell, Report()) == (0.5, None)
    plain = {"financemath": {"accuracy": 0.25, "category=SSSD": 0.125}}
    run = Run("x.eval", "t", "m", {}, {}, 4, "2026-01-01", plain)
    assert _measured(run, cell, Report()) == (0.125, None)
    missing = {"financemath": {"accuracy": 0.25}}
    run = Run("x.eval", "t", "m", {}, {}, 4, "2026-01-01", missing)
    assert _measured(run, cell, Report()) is None


# --- knowledgefmath: which published number a run is compared with, and what is said -------


KFM_GENERATION = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 512}
"""What a knowledgefmath log records by default (the task's config)."""


def _kfm_rows(model: str, args: dict[str, str], scores: dict[str, dict[str, float]],
              roles: dict[str, str] | None = None,
              generation: dict[str, float] | None = None) -> list[dict[str, str]]:  # fmt: skip
    """The comparison rows of one knowledgefmath run (200 samples scored), by column."""
    from finmath_tasks.cli.compare import published_table
    from finmath_tasks.cli.runs import Run

    run = Run("x.eval", "finmath_tasks/knowledgefmath", model, args, args, 200, "2026-01-01",
              scores, roles=roles or {}, total=200, scored=200,
              generation=KFM_GENERATION if generation is None else generation)  # fmt: skip
    table = published_table(declarations()["knowledgefmath"], [run], ModelNames())
    assert table is not None
    return [dict(zip(table.header, row, strict=True)) for row in table.rows]


VALIDATION_COT = {"split": "validation", "solver": "cot", "extractor": "model", "knowledge": "none"}
PAPER = "knowledgefmath2023"
FOR, METRIC, NOTE = "published for", "metric", "note"


def test_table5_compares_with_the_papers_scoring_and_says_when_a_log_lacks_it() -> None:
    official = {"financemath": {"accuracy": 0.5, "stderr": 0.035}}
    rows = _kfm_rows("openai/gpt-3.5-turbo-1106", VALIDATION_COT, official)
    [table5] = [r for r in rows if "Table 5" in r[FOR]]
    assert table5[METRIC] == f"{PAPER} accuracy"
    # financemath is never shown in its place
    assert [table5[k] for k in ("measured", "n", "difference (points)")] == ["–", "–", "–"]
    assert f"this log has no {PAPER} score" in table5[NOTE]
    table4 = [r for r in rows if "Table 4" in r[FOR]]
    assert table4 and all(r[METRIC].startswith(PAPER) for r in table4)
    assert all("published on test, run on validation" in r[NOTE] for r in table4)


@pytest.mark.parametrize(
    ("roles", "model", "note"),
    [
        ({"grader": "openai/gpt-3.5-turbo-1106"}, "openai/gpt-3.5-turbo-1106", False),
        ({}, "openai/gpt-3.5-turbo-1106", False),  # the evaluated model extracts: the same
        ({"grader": "openai/gpt-4o-mini"}, "openai/gpt-3.5-turbo-1106", True),
        ({"grader": "openai/gpt-3.5-turbo-0125"}, "mockllm/gpt-3.5-turbo-1106", True),
    ],
)
def test_another_extractor_than_the_papers_is_said_beside_the_comparison(
    roles: dict[str, str], model: str, note: bool
) -> None:
    scores = {"financemath": {"accuracy": 0.5}, PAPER: {"accuracy": 0.42, "stderr": 0.035}}
    rows = _kfm_rows(model, VALIDATION_COT, scores, roles, generation={})
    [table5] = [r for r in rows if "Table 5" in r[FOR]]
    assert table5["published"] == "33.5"
    assert table5["n published"] == "259" and table5["n"] == "200"
    # 84 of 200 right: Wilson's 95% interval (Inspect's ci_wilson)
    assert table5["measured"] == "42.0 [35.4, 48.9]"
    assert table5["difference (points)"] == "+8.5"
    grader = roles.get("grader", model)
    expected = (
        f"the extractor differs ({grader}; the paper's: gpt-3.5-turbo-1106): the number is "
        "close to Table 4's scoring, not the same"
    )
    assert (expected in table5[NOTE]) is note
    # no grader given: the evaluated model read its own answers, and the note says so
    assert ("graded by the evaluated model itself" in table5[NOTE]) is (note and not roles)
    # the paper states its generation settings; a run that left them to the provider is told
    assert (
        "the source sets temperature=1.0 top_p=1.0 max_tokens=512; this run left it to the provider"
        in table5[NOTE]
    )
    assert "200 questions here, 259 published" in table5[NOTE]


def test_the_leaderboard_compares_with_financemath_on_the_runs_split() -> None:
    scores = {"financemath": {"accuracy": 0.5, "stderr": 0.035}, PAPER: {"accuracy": 0.4}}
    mini = {"grader": "openai/gpt-4o-mini-2024-07-18"}
    rows = _kfm_rows("openai/gpt-4o", VALIDATION_COT, scores, mini)
    assert {r[FOR].rsplit(", ", 1)[1] for r in rows} == {"Leaderboard validation CoT)"}
    [overall] = [r for r in rows if r[METRIC] == "financemath accuracy"]
    assert [overall[k] for k in ("published", "n published", "measured", "n")] == [
        "55.0", "200", "50.0 [43.1, 56.9]", "200"
    ]  # fmt: skip
    assert overall["difference (points)"] == "-5.0" and overall[NOTE] == ""
    other = _kfm_rows("openai/gpt-4o", VALIDATION_COT, scores, {"grader": "openai/gpt-4o"})
    [overall] = [r for r in other if r[METRIC] == "financemath accuracy"]
    assert overall[NOTE] == "the extractor differs (openai/gpt-4o; the leaderboard's: gpt-4o-mini)"
    # a test run (answers withheld, its accuracy NaN) goes beside the test leaderboard only
    test = {**VALIDATION_COT, "split": "test"}
    rows = _kfm_rows("openai/gpt-4o", test, {"financemath": {"accuracy": math.nan}}, mini)
    assert {r[FOR].rsplit(", ", 1)[1] for r in rows} == {"Leaderboard test CoT)"}
    [overall] = [r for r in rows if r[METRIC] == "financemath accuracy"]
    assert overall["measured"] == "–" and "unscored in this log" in overall[NOTE]


def test_a_pot_run_meets_the_execution_rate_it_logs() -> None:
    pot = {"split": "validation", "solver": "pot", "knowledge": "none"}
    scores = {"financemath": {"accuracy": 0.6}, "execution_rate": {"accuracy": 0.95}}
    rows = _kfm_rows("anthropic/claude-3-haiku-20240307", pot, scores)
    assert {r[FOR].rsplit(", ", 1)[1] for r in rows} == {"Leaderboard validation PoT)"}
    [rate] = [r for r in rows if r[METRIC] == "execution_rate accuracy"]
    assert rate["measured"].startswith("95.0 [")
    assert len(rows) == 16


def test_finmath_published_knowledgefmath_prints_the_leaderboard(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["published", "knowledgefmath"]) == 0
    out = capsys.readouterr().out
    source = "yale-nlp/FinanceMath@bdddc58 outputs/results"
    for split, solver in [("validation", "cot"), ("validation", "pot"), ("test", "cot"),
                          ("test", "pot")]:  # fmt: skip
        kind = solver.replace("cot", "CoT").replace("pot", "PoT")
        assert f"## {source}/{split}_{solver}_results.json, Leaderboard {split} {kind}" in out
    # gpt-4o's validation CoT row: accuracy, its 7 topics, execution rate, its 7 topics
    setting = "split=validation solver=cot extractor=model"
    row = next(line for line in out.splitlines() if line.startswith(f"| gpt-4o | `{setting}`"))
    assert row.split(" | ")[2:4] == ["55.0", "58.33"] and row.count(" | ") == 17
    assert "## knowledgefmath.txt, Table 4" in out
