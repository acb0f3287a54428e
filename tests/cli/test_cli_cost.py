"""Cost before running (``finmath grid --dry-run``) and after (the report's usage section)."""

from __future__ import annotations

import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from finmath_tasks.cli import cost as cost_module
from finmath_tasks.cli.agents_cost import AGENT_CALLS, FOLLOW_UP_SLACK, agent_cost
from finmath_tasks.cli.cost import (
    conversation_bounds,
    count_tokens,
    declared_cost,
    message_tokens,
    render_first_turns,
    run_cost,
)
from finmath_tasks.cli.declare import by_task_name, declarations
from finmath_tasks.cli.main import main
from finmath_tasks.cli.prices import (
    BUILT_IN,
    Price,
    PriceError,
    load_overrides,
    parse_price,
    price_for,
)
from finmath_tasks.cli.report import read_logs
from finmath_tasks.cli.usage import EVALUATED, Tokens, prices_for, usage_tables
from finmath_tasks.scorers.comparisons import rounding
from finmath_tasks.solvers.agents.scoring import numeric_check
from finmath_tasks.solvers.agents.solvers import agent_solver
from finmath_tasks.tasks.knowledgefmath.task import knowledgefmath

DEMO = json.loads(
    files("finmath_tasks.tasks.knowledgefmath").joinpath("data/demo.json").read_text()
)


# --- dry run: the cheap counts against the prompts rendered the slow way ---------------------


@pytest.mark.parametrize(
    "args",
    [
        {"solver": "cot", "knowledge": "none"},
        # a PoT task builds without a sandbox too (no program runs here)
        {"solver": "pot", "knowledge": "none"},
        {"solver": "pot", "knowledge": "oracle"},
        {"solver": "cot", "knowledge": "bm25", "top_n": 2},
    ],
)
def test_knowledgefmath_counts_equal_rendered_prompts(args: dict[str, Any]) -> None:
    args = {"split": "demo", **args}
    declaration = declarations()["knowledgefmath"]
    cost = declared_cost(declaration)
    assert cost is not None and cost.loads is not None
    cheap = [load.prompt for load in cost.loads(args, 512)]
    task = knowledgefmath(**args)
    rendered = [message_tokens(m) for m in render_first_turns(task)]
    assert len(cheap) == len(rendered) == len(DEMO)
    assert cheap == rendered
    assert all(n > 50 for n in cheap)


def test_dry_run_table_for_a_small_grid(capsys: pytest.CaptureFixture[str]) -> None:
    rendered = [
        message_tokens(m)
        for m in render_first_turns(knowledgefmath(split="demo", solver="cot"), limit=3)
    ]
    code = main(
        [
            "grid",
            "knowledgefmath",
            "--model",
            "openai/gpt-4o",
            "--dry-run",
            "-T",
            "split=demo",
            "--only",
            "solver=cot",
            "--only",
            "knowledge=none",
            "--limit",
            "3",
            "--price",
            "2/8",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    [row] = [line for line in out.splitlines() if line.strip().startswith("1. 3 |")]
    cells = [c.strip() for c in row.split("|")]
    prompt = sum(rendered)
    assert cells[1] == "3"  # calls: one per sample
    assert cells[2] == f"{prompt:,}" and cells[3] == f"{prompt:,}"
    assert cells[4].startswith(f"{3 * 512:,} (512/call)")  # the task's own limit
    low, high = prompt * 2 / 1e6, (prompt * 2 + 3 * 512 * 8) / 1e6
    assert cells[5].split()[0] == f"${low:,.2f}-${high:,.2f}"
    assert "$2/M in, $8/M out (--price)" in out


@pytest.mark.slow
def test_max_tokens_overrides_the_task_limit(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["grid", "knowledgefmath", "--model", "m/x", "--dry-run", "-T", "split=demo"]
    assert main([*args, "--only", "solver=cot", "--max-tokens", "100", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "200 (100/call)" in out
    assert "no price (not in the built-in table); give --price IN/OUT" in out


def test_conversation_bounds() -> None:
    # 3 calls, first prompt 100, replies up to 10 tokens, follow-up turns up to 5 tokens:
    # calls read 100, 100+15, 100+30 at most, 100 each at least.
    load = conversation_bounds(100, (2, 3), 10, 5)
    assert (load.calls_low, load.calls_high) == (2, 3)
    assert (load.input_low, load.input_high) == (200, 345)
    assert conversation_bounds(7, (1, 1), None).input_high == 7


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in AGENT_CALLS if n != "pot"])
@pytest.mark.parametrize("right", [True, False])
def test_agent_call_bounds_hold_in_real_runs(name: str, right: bool) -> None:
    """Every agent's calls in a real eval lie within its declared bounds (pot, which runs a
    program in the sandbox, makes the single call of the cot path: not run here)."""
    answer = "4" if right else "5"
    reply = json.dumps({"answer": answer, "steps": ["2 + 2 = 4"]})
    update = json.dumps({"decision": "update", "critique": "c", "answer": "5"})
    outputs = [reply, update, reply, "2 + 2 = 4", reply, reply, reply]
    model = get_model(
        "mockllm/model",
        custom_outputs=[ModelOutput.from_content("mockllm/model", c) for c in outputs * 3],
    )
    task = Task(
        dataset=[Sample(input="q", target="4", metadata={"question": "2+2?", "context": ""})],
        solver=agent_solver(name, oracle_check=numeric_check({"rounding": rounding})),  # type: ignore[arg-type]
    )
    [log] = eval(task, model=model, display="none", log_samples=True)
    assert log.status == "success" and log.samples
    calls = sum(1 for e in log.samples[0].events if e.event == "model")
    low, high = AGENT_CALLS[name]
    assert low <= calls <= high, (name, calls)


def _toy_agents(solver: str = "cot") -> Task:
    samples = [
        Sample(
            input="q",
            target="4",
            metadata={"question": f"What is {i} + 2?", "context": "| a | b |\n| 1 | 2 |" * i},
        )
        for i in range(3)
    ]
    return Task(
        dataset=samples,
        solver=agent_solver(
            solver,  # type: ignore[arg-type]
            answer_instruction="Answer with a number.",
            oracle_check=numeric_check({"rounding": rounding}),
        ),
    )


@pytest.mark.parametrize("name", ["cot", "pot", "icritic_calculator"])
def test_agent_first_turns_equal_rendered_prompts(name: str) -> None:
    cost = agent_cost(_toy_agents, "Answer with a number.")
    assert cost.loads is not None
    assert cost.conversation is False  # every call is a prompt of its own
    loads = cost.loads({"solver": name}, 100)
    rendered = [message_tokens(m) for m in render_first_turns(_toy_agents(name))]
    assert [x.prompt for x in loads] == rendered
    low, high = AGENT_CALLS[name]
    assert all((x.calls_low, x.calls_high) == (low, high) for x in loads)
    if high == 1:
        assert all(x.input_low == x.input_high == x.prompt for x in loads)


RIGHT = json.dumps({"steps": ["2 + 2 = 4"], "answer": "4"})


def fewest_replies(name: str) -> list[str]:
    """One sample's replies on the fewest calls: right first (critic_oracle stops there),
    the improved critic maintains, the calculator finds no equation."""
    replies = [RIGHT]
    if name in ("critic", "critic_calculator"):
        replies += ["The sum is right.", RIGHT]
    if name in ("icritic", "icritic_calculator"):
        replies += [json.dumps({"decision": "maintain", "answer": None})]
    if name in ("calculator", "critic_calculator", "icritic_calculator"):
        replies += [json.dumps({"answer": []})]
    return replies


@pytest.mark.parametrize("name", [n for n in AGENT_CALLS if n != "pot"])
@pytest.mark.parametrize("path", ["most", "fewest"])
def test_agent_input_bounds_hold_for_the_prompts_sent(name: str, path: str) -> None:
    """The dry run's input bounds of an agent hold the tokens of the prompts a real run
    sends, call by call (each call's prompt read from the log's model events)."""
    from agent_calls import call_prompts, script

    task = _toy_agents(name)
    replies: list[str] = []
    for n, sample in enumerate(task.dataset):
        assert sample.metadata is not None
        meta = sample.metadata
        replies += (
            script(name, n, meta["context"], meta["question"], "Answer with a number.").replies
            if path == "most"
            else fewest_replies(name)
        )
    max_tokens = max(count_tokens(r) for r in replies)
    model = get_model(
        "mockllm/model",
        custom_outputs=[ModelOutput.from_content("mockllm/model", r) for r in replies],
    )
    [log] = eval(task, model=model, display="none", max_samples=1)
    assert log.status == "success" and log.samples
    cost = agent_cost(_toy_agents, "Answer with a number.")
    assert cost.loads is not None
    loads = cost.loads({"solver": name}, max_tokens)
    by_id = {s.id: s for s in log.samples}
    for sample, load in zip(task.dataset, loads, strict=True):
        sent = call_prompts(by_id[sample.id])
        tokens = sum(count_tokens(p) for p in sent)
        assert load.calls_low <= len(sent) <= load.calls_high, (name, path)
        assert load.input_low is not None and load.input_high is not None
        assert load.input_low <= tokens <= load.input_high, (name, path, load, tokens)
        if path == "fewest" and name != "critic_oracle":
            assert len(sent) == load.calls_low
        if path == "most":
            assert len(sent) == load.calls_high
            # the high count: each carried reply at the limit, the checks at the slack
            assert load.input_high - tokens <= len(sent) * 2 * max_tokens + FOLLOW_UP_SLACK


def test_a_run_that_cannot_be_counted_is_named_not_fatal() -> None:
    declaration = declarations()["knowledgefmath"]
    counted = run_cost(declaration, declared_cost(declaration), {"split": "nosuch"}, None, None)
    assert counted.error and counted.samples == 0


@pytest.mark.slow
@pytest.mark.realdata
def test_mathhay_counts_are_the_haystack_length(data_dir: Path) -> None:
    from finmath_tasks.tasks.mathhay.task import mathhay

    declaration = declarations()["mathhay"]
    cost = declared_cost(declaration)
    assert cost is not None and cost.loads is not None
    for length in (32000, 128000):
        args = {"release": "v1", "subset": "verified", "length": length}
        cheap = [x.prompt for x in cost.loads(args, 1024)[:2]]
        rendered = [message_tokens(m) for m in render_first_turns(mathhay(**args), limit=2)]
        for a, b in zip(cheap, rendered, strict=True):
            assert abs(a - b) <= 5, (length, cheap, rendered)
        assert cheap[0] == (length if length < 128000 else length - 2000)


# --- prices ---------------------------------------------------------------------------------


def test_parse_price() -> None:
    assert parse_price("2.5/10") == Price(2.5, 10.0)
    assert parse_price(" $0.15 / $0.6 ") == Price(0.15, 0.6)
    assert parse_price(".5/1.") == Price(0.5, 1.0)


@pytest.mark.parametrize("text", ["", "2.5", "2.5/", "/10", "a/b", "-1/2", "1/2/3", "1e3/2"])
def test_bad_price_is_refused(text: str) -> None:
    with pytest.raises(PriceError, match="IN/OUT"):
        parse_price(text)


@pytest.mark.parametrize("command", ["grid", "report"])
def test_bad_price_on_the_command_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = (
        ["grid", "knowledgefmath", "--model", "m/x", "--dry-run"]
        if command == "grid"
        else ["report", str(tmp_path)]
    )
    assert main([*args, "--price", "cheap"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--price 'cheap': expected IN/OUT" in err


@given(st.text(max_size=40))
def test_parse_price_never_raises_anything_else(text: str) -> None:
    try:
        price = parse_price(text)
    except PriceError:
        return
    assert price.input >= 0 and price.output >= 0


def test_price_lookup_longest_prefix_and_route() -> None:
    assert price_for("openai/gpt-4o-mini-2024-07-18", {})[0] == BUILT_IN["gpt-4o-mini"]
    assert price_for("openai/gpt-4o-2024-08-06", {})[0] == BUILT_IN["gpt-4o"]
    assert price_for("openrouter/openai/o1-mini", {})[0] == BUILT_IN["o1-mini"]
    assert price_for("vllm/meta-llama/Llama-3.1-70B", {}) == (None, "not in the built-in table")
    price, source = price_for("openai/gpt-4o", {"openai/gpt-4o": Price(1, 2)})
    assert price == Price(1, 2) and "FINMATH_PRICES" in source


def test_price_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"llama": [0.2, 0.4], "gpt-4o": {"input": 1, "output": 3}}))
    monkeypatch.setenv("FINMATH_PRICES", str(path))
    assert price_for("vllm/llama-3.1-8b")[0] == Price(0.2, 0.4)
    assert price_for("openai/gpt-4o")[0] == Price(1.0, 3.0)
    path.write_text(json.dumps({"x": [1]}))
    with pytest.raises(PriceError, match="'x'"):
        load_overrides()
    path.write_text(json.dumps({"x": {"input": -1, "output": 1}}))
    with pytest.raises(PriceError, match="input must be a number >= 0"):
        load_overrides()
    path.write_text("{not json")
    with pytest.raises(PriceError, match="cannot read prices"):
        load_overrides()


def test_cost_arithmetic() -> None:
    tokens = Tokens(input=1_000_000, cache_read=2_000_000, cache_write=500_000, output=250_000)
    # input and cache writes at 2, cache reads at 1, output at 8 dollars per million
    assert tokens.cost(Price(2, 8, 1)) == pytest.approx(3.0 + 2.0 + 2.0)
    assert tokens.cost(Price(2, 8)) == pytest.approx(3.0 + 4.0 + 2.0)
    counted = cost_module.RunCost({}, 10, (10, 20), 5000, (5000, 9000), 100, 2000)
    assert counted.cost(Price(2, 8)) == pytest.approx((0.01, (9000 * 2 + 2000 * 8) / 1e6))
    assert counted.cost(None) is None


# --- after running: usage from the log headers ----------------------------------------------


def _output(name: str, text: str, usage: ModelUsage) -> ModelOutput:
    output = ModelOutput.from_content(name, text)
    output.usage = usage
    return output


def _usage_run(log_dir: Path, grader_name: str) -> None:
    evaluated = [
        _output(
            "mockllm/model",
            f"Therefore, the answer is {DEMO[i]['ground_truth']}.",
            ModelUsage(
                input_tokens=100 + i,
                output_tokens=20,
                total_tokens=127 + i,
                input_tokens_cache_read=7,
                reasoning_tokens=3,
            ),
        )
        for i in range(3)
    ]
    graded = [
        _output(
            grader_name,
            str(DEMO[i]["ground_truth"]),
            ModelUsage(input_tokens=50, output_tokens=4, total_tokens=54),
        )
        for i in range(3)
    ]
    [log] = eval(
        knowledgefmath(split="demo", extractor="model"),
        model=get_model("mockllm/model", custom_outputs=evaluated),
        model_roles={"grader": get_model(grader_name, custom_outputs=graded)},
        limit=3,
        log_dir=str(log_dir),
        display="none",
    )
    assert log.status == "success"


@pytest.mark.parametrize("grader", ["mockllm/grader", "mockllm/model"])
def test_usage_table_numbers(tmp_path: Path, grader: str) -> None:
    """The grader is its own row, also when it is the evaluated model itself."""
    _usage_run(tmp_path / "logs", grader)
    logs = read_logs(str(tmp_path / "logs"))
    [run] = logs.runs
    assert run.usage is not None
    assert run.usage.tokens[("mockllm/model", EVALUATED)] == Tokens(303, 21, 0, 60, 9)
    assert run.usage.tokens[(grader, "grader")] == Tokens(150, 0, 0, 12, 0)
    assert run.usage.seconds is not None and run.usage.seconds >= 0
    per_run, totals = usage_tables(logs.runs, prices_for(Price(2, 8, 1)))
    rows = {tuple(r[2:4]): r for r in per_run.rows}
    # the estimate column: no cache rule is known for a mockllm model
    assert rows[("mockllm/model", EVALUATED)][4:10] == ["303", "21", "–", "0", "60", "9"]
    assert rows[("mockllm/model", EVALUATED)][11] == f"${(303 * 2 + 21 + 60 * 8) / 1e6:.4g}"
    assert rows[(grader, "grader")][4:10] == ["150", "0", "", "0", "12", "0"]
    assert rows[(grader, "grader")][11] == f"${(150 * 2 + 12 * 8) / 1e6:.4g}"
    assert totals.rows[-1][:8] == ["all", "", "453", "21", "", "0", "72", "9"]
    assert totals.rows[-1][9] == f"${(453 * 2 + 21 + 72 * 8) / 1e6:.4g}"
    assert "not calls" in per_run.caption


@pytest.mark.slow
def test_report_has_the_usage_section_and_scatter(tmp_path: Path) -> None:
    _usage_run(tmp_path / "logs", "mockllm/grader")
    out = tmp_path / "report"
    assert main(["report", str(tmp_path / "logs"), "--out", str(out), "--price", "2/8"]) == 0
    text = (out / "report.md").read_text()
    assert "### Usage and cost per run" in text and "### Usage and cost in total" in text
    line = next(x for x in text.splitlines() if x.startswith("| all |"))
    assert re.search(r"\| 453 \| 21 \|  \| 0 \| 72 \| 9 \|", line)
    assert (out / "knowledgefmath_cost_vs_accuracy.png").stat().st_size > 1000


@pytest.mark.realdata
@pytest.mark.parametrize(
    "args",
    [
        {"retrieval": "none", "prompting": "zero_shot"},
        {"retrieval": "mentioned_only", "prompting": "cot"},
        {"retrieval": "all_statutes", "prompting": "few_shot"},
    ],
)
def test_sara_counts_equal_rendered_prompts(data_dir: Path, args: dict[str, Any]) -> None:
    from finmath_tasks.tasks.sara.task import sara

    cost = declared_cost(declarations()["sara"])
    assert cost is not None and cost.loads is not None
    cheap = [x.prompt for x in cost.loads(args, None)[:4]]
    rendered = [message_tokens(m) for m in render_first_turns(sara(**args), limit=4)]
    assert cheap == rendered


# --- prompt caching in the dry run and the report --------------------------------------------


def _cached_cells(text: str, model: str) -> list[tuple[int, float, float]]:
    """(cached tokens, cost low, cost-with-cache low) of each run line under ``model``."""
    block = text.split(f" model {model}:", 1)[1].split(" model ", 1)[0]
    out = []
    for line in block.splitlines():
        if not re.match(r"\s+\d+\. ", line):
            continue
        cells = [c.strip() for c in line.split("|")]
        cached = int(cells[6].split(" ")[0].replace(",", ""))
        money = [float(m) for m in re.findall(r"\$([0-9.,]+)-", line)[:2]]
        out.append((cached, money[0], money[1]))
    return out


@pytest.mark.realdata
def test_dry_run_counts_the_cached_prefix_per_provider(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from finmath_tasks.prefix_cache import OPENAI, serve
    from finmath_tasks.tasks.mathhay import cost as mathhay_cost

    args = {"release": "v1", "subset": "verified", "task_type": "sssd", "length": 32000}
    gpt, claude = "openai/gpt-4o", "anthropic/claude-3-5-sonnet-20241022"
    # judge=false: the evaluated model's prompts alone (no judge line)
    assert main(
        ["grid", "mathhay", "--dry-run", "--model", gpt, "--model", claude, "--only",
         "subset=verified", "--only", "length=32000", "-T", "task_type=sssd",
         "-T", "judge=false", "--cache-window", "100", "--max-samples", "10"]
    ) == 0  # fmt: skip
    text = capsys.readouterr().out
    [(read, cost, cached_cost)] = _cached_cells(text, gpt)
    [expected] = serve(mathhay_cost.prompts(args), [OPENAI], 100, 10)
    assert read == expected.read > 0
    # gpt-4o: $2.50 in, $1.25 cached: each served token saves $1.25 per million
    assert cached_cost == pytest.approx(cost - read * 1.25 / 1e6, abs=0.006)
    # MathHay asks for no marked cache: Anthropic serves nothing and writes nothing
    [(read, cost, cached_cost)] = _cached_cells(text, claude)
    assert read == 0 and cached_cost == cost
    assert "10 requests at once" in text and "last 100 requests" in text


@pytest.mark.slow
@pytest.mark.realdata
def test_dry_run_marks_of_a_rendered_task(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SARA's exemplars are a shared opening: Anthropic reads the marked prefix and writes
    the rest. Where nothing could be read back (zero-shot) or far less than written (all
    the statutes in every case turn), the task asks for no marked cache: no run of the
    grid costs more with the cache than without (before, all_statutes cost 25% more)."""
    claude = "anthropic/claude-3-5-sonnet-20241022"
    assert main(["grid", "sara", "--dry-run", "--model", claude, "--limit", "30",
                 "--max-tokens", "100"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    cells = _cached_cells(text, claude)
    assert any(read > 0 for read, _, _ in cells)  # the runs with exemplars
    assert any(cached < cost for _, cost, cached in cells)
    assert all(cached <= cost for _, cost, cached in cells)
    assert "written" in text


def test_usage_table_puts_the_estimate_beside_the_cache_reads(tmp_path: Path) -> None:
    """A scripted model named like an OpenAI model, whose usage reports cache reads."""
    task = Task(
        dataset=[Sample(input=("shared opening " * 700) + f"question {i}", target="1")
                 for i in range(3)],
    )  # fmt: skip
    outputs = [
        ModelOutput.from_content("mockllm/gpt-4o", "1").model_copy(
            update={"usage": ModelUsage(input_tokens=700, input_tokens_cache_read=1408 * (i > 0),
                                        output_tokens=1, total_tokens=2109)}
        )
        for i in range(3)
    ]  # fmt: skip
    [log] = eval(
        task, model=get_model("mockllm/gpt-4o", custom_outputs=outputs), max_samples=1,
        log_dir=str(tmp_path / "logs"), display="none",
    )  # fmt: skip
    assert log.status == "success"
    logs = read_logs(str(tmp_path / "logs"))
    [run] = logs.runs
    assert run.usage.tokens[("mockllm/gpt-4o", EVALUATED)].cache_read == 2 * 1408
    [per_run, _] = usage_tables(logs.runs, prices_for(Price(2.5, 10, 1.25)))
    [row] = per_run.rows
    assert row[5] == "2,816"  # recorded by Inspect
    assert row[6] == "–"  # this task has no declaration to rebuild its prompts from
    assert "estimate" in per_run.caption


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("benchmark", "args", "readable"),
    [
        ("tatqa", {"solver": "cot"}, False),
        ("tatqa", {"solver": "critic"}, False),
        ("finqa", {"solver": "icritic_calculator", "split": "dev"}, False),
        ("finqa", {"solver": "rag_cot"}, True),
        ("finqa", {"solver": "pot", "split": "dev"}, False),
        ("sara", {"prompting": "cot"}, True),
        ("sara", {"prompting": "zero_shot"}, False),
        ("sara", {"retrieval": "all_statutes"}, False),
        ("mathhay", {"release": "v1", "subset": "verified", "task_type": "sssd"}, False),
    ],
)
def test_marked_caching_is_asked_for_only_where_it_can_be_read(
    data_dir: Path, benchmark: str, args: dict[str, Any], readable: bool
) -> None:
    task = declarations()[benchmark].grid.task(**args)
    assert (task.config.cache_prompt is not False) == readable


@pytest.mark.realdata
def test_later_agent_calls_are_prompts_of_their_own(data_dir: Path) -> None:
    """A critic's three calls are three prompts: the cache estimate serves the first turns
    as sent and nothing more (no later prompt opens with the first turn); the
    input counts every call's prompt, each restating the document."""
    from finmath_tasks.cli.cost import rendered_prompts, run_cost
    from finmath_tasks.prefix_cache import ANTHROPIC, OPENAI, serve

    declaration = declarations()["tatqa"]
    args = {"split": "dev", "subset": "arithmetic", "solver": "critic"}
    run = run_cost(declaration, declared_cost(declaration), args, 40, 300, [OPENAI, ANTHROPIC])
    prompts = list(rendered_prompts(declaration.grid.task(**args), 40))
    assert run.calls == (120, 120)
    first = serve(prompts, [OPENAI, ANTHROPIC], None, 1)
    for rule, served in zip(("openai", "anthropic"), first, strict=True):
        count = run.served[rule]
        assert count.first.read == served.read  # the first turns, as sent
        assert (count.later_low, count.later_high, count.later_written_high) == (0, 0, 0)
        assert count.read == (count.first.read, count.first.read)
    # the task asks for no marked cache: nothing is written either
    assert run.served["anthropic"].written == (0, 0)
    # the critic and the revision restate the document and the question: the low input
    # is about three times the first turns (their own instructions are a little shorter)
    assert 2.9 * run.prompt < run.input[0] < 3.1 * run.prompt


@pytest.mark.realdata
def test_usage_table_estimate_of_a_real_mathhay_run(data_dir: Path, tmp_path: Path) -> None:
    """The estimate beside Inspect's cache reads is the dry run's count for the run's own
    arguments, limit and concurrency."""
    from finmath_tasks.prefix_cache import OPENAI, serve
    from finmath_tasks.tasks.mathhay import cost as mathhay_cost
    from finmath_tasks.tasks.mathhay.task import mathhay

    args = {"release": "v1", "subset": "verified", "task_type": "sssd", "length": 4000,
            "judge": False}  # fmt: skip
    [log] = eval(
        mathhay(**args), model=get_model("mockllm/gpt-4o"), limit=20, max_samples=2,
        log_dir=str(tmp_path / "logs"), display="none",
    )  # fmt: skip
    assert log.status == "success"
    logs = read_logs(str(tmp_path / "logs"))
    known = by_task_name(declarations())
    [per_run, totals] = usage_tables(logs.runs, prices_for(Price(2.5, 10, 1.25)), known)
    [row] = [r for r in per_run.rows if r[3] == EVALUATED]
    prompts = list(mathhay_cost.prompts(args))[:20]
    [expected] = serve(prompts, [OPENAI], 100, 2)
    assert expected.read > 0
    assert row[6] == f"{expected.read:,}"
    assert totals.rows[0][4] == f"{expected.read:,}"


@pytest.mark.realdata
def test_the_estimate_of_an_old_finqa_agent_log_without_a_split_reads_dev(data_dir: Path) -> None:
    """FinQA logs of 1.1.0 to 3.0.0 record split=None; their agent solvers read dev (today's
    default, test, is every solver's): the estimate rebuilds the split the run read."""
    from finmath_tasks.cli.runs import Run
    from finmath_tasks.cli.usage import Usage, cache_estimate

    declaration = declarations()["finqa"]

    def estimate(split: str | None, passed: dict[str, Any]) -> int | None:
        args = {"split": split, "solver": "cot", "data_dir": str(data_dir), "revision": None}
        run = Run("x.eval", "finmath_tasks/finqa", "openai/gpt-4o", args,
                  {**passed, "data_dir": str(data_dir)}, 40, "", {},
                  usage=Usage({}, None, 40, 10))  # fmt: skip
        return cache_estimate(run, declaration)

    old = estimate(None, {"solver": "cot"})
    dev = estimate("dev", {"solver": "cot", "split": "dev"})
    test = estimate("test", {"solver": "cot", "split": "test"})
    assert old is not None and old == dev != test


@pytest.mark.realdata
def test_the_estimate_of_a_mathhay_3_1_0_log_ignores_its_order_arguments(data_dir: Path) -> None:
    """3.1.0 logs record -T order and -T in_flight, which the task no longer takes."""
    from finmath_tasks.cli.runs import Run
    from finmath_tasks.cli.usage import Usage, cache_estimate

    args = {"release": "v1", "subset": "verified", "task_type": "sssd", "length": 4000,
            "judge": False, "data_dir": str(data_dir)}  # fmt: skip
    estimates = []
    for extra in ({}, {"order": "prefix", "in_flight": 10}):
        run = Run("x.eval", "finmath_tasks/mathhay", "openai/gpt-4o", {**args, **extra},
                  {**args, **extra}, 20, "", {}, usage=Usage({}, None, 20, 2))  # fmt: skip
        estimates.append(cache_estimate(run, declarations()["mathhay"]))
    assert estimates[0] is not None and estimates[0] > 0 and estimates[1] == estimates[0]
