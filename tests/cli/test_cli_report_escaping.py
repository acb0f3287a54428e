"""report.md shows what it takes from logs and arguments as text: a model name, a task
argument, a model role or an alias holding HTML or Markdown (``<script>``, ``<img ...>``,
``|``, backticks, an image) renders as those characters, as report.html shows them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, write_eval_log
from inspect_ai.model import ModelConfig, ModelUsage

from finmath_tasks.cli.main import main as finmath
from finmath_tasks.cli.markup import md_code, md_text

SCRIPT = "<script>alert(1)</script>"
IMAGE = "<img src=x onerror=alert(2)>"
MODEL = f"mockllm/{SCRIPT}|`tick`"
ARGUMENT = f"{IMAGE}|![pixel](http://pixel.example/p.png)`code`"
ROLE = "grader<b>bold</b>"
ROLE_MODEL = f"mockllm/{IMAGE}"
ALIAS = f"{MODEL}=GPT-4o"


@pytest.fixture(scope="module")
def hostile_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run's log whose header names the model, an argument and a role as above."""
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    folder = tmp_path_factory.mktemp("hostile")
    [log] = inspect_eval(
        knowledgefmath(split="demo", solver="oracle"),
        model="mockllm/model",
        limit=2,
        display="none",
        log_dir=str(folder / "run"),
    )
    assert log.status == "success"
    hostile: EvalLog = log.model_copy(deep=True)
    hostile.eval.task_id = hostile.eval.task_id + "-hostile"  # another run, not an attempt
    hostile.eval.model = MODEL
    hostile.eval.task_args = {**hostile.eval.task_args, "knowledge_bank": ARGUMENT}
    hostile.eval.task_args_passed = {"split": "demo", "knowledge_bank": ARGUMENT}
    hostile.eval.model_roles = {ROLE: ModelConfig(model=ROLE_MODEL)}
    used = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    hostile.stats.role_usage = {ROLE: used}
    hostile.stats.model_usage = {ROLE_MODEL: used}
    logs = folder / "logs"
    logs.mkdir()
    write_eval_log(hostile, str(logs / "hostile.eval"))
    write_eval_log(log, str(logs / "plain.eval"))  # a second run: the argument varies
    return logs


def test_hostile_values_are_text_in_report_md(
    hostile_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    status = finmath(["report", str(hostile_logs), "--out", str(out), "--no-plots",
                      "--alias", ALIAS])  # fmt: skip
    capsys.readouterr()
    assert status == 0
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for raw in (SCRIPT, IMAGE, "<b>", "<img", "<script"):
        assert raw not in md, raw
        assert raw not in html, raw
    assert "](http" not in md  # no image or link from the data
    # shown, escaped: the model, the argument, the role and its model
    assert md_text(MODEL) in md and md_text(ARGUMENT) in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\|\\`tick\\`" in md
    assert md_text(ROLE) in md and md_text(ROLE_MODEL) in md
    # no backtick from the data opens a code span, no | cuts a table row
    assert "`tick`" not in md.replace("\\`", "")
    for block in re.findall(r"(?:^\|.*\|\n)+", md, flags=re.MULTILINE):
        rows = [re.split(r"(?<!\\)\|", row)[1:-1] for row in block.splitlines()]
        assert len({len(cells) for cells in rows}) == 1, block


def test_markdown_escapes() -> None:
    assert md_text("a|b") == "a\\|b"
    assert md_text("<img src=x>") == "&lt;img src=x&gt;"
    assert md_text("S&P &lt; &#60;") == "S&P &amp;lt; &amp;#60;"
    assert md_text("`x`") == "\\`x\\`"
    assert md_text("![p](http://x/p.png)") == "!\\[p]\\(http://x/p.png)"
    assert md_text("# title\nline") == "\\# title line"
    assert md_text("rag_cot 71.5* [40.1, 60.2]") == "rag_cot 71.5* [40.1, 60.2]"
    assert md_code("logs/a`b") == "``logs/a`b``"
    assert md_code("`x") == "`` `x ``"
