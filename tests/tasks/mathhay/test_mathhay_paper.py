"""The paper's settings, pinned: a later change cannot drift silently.

Sources: the MathHay paper (sections 3.4, 3.5, 4.1, 4.3, Tables 2-3, appendix A.2,
Figure 13) and the reference evaluation code where the paper is silent.
"""

from __future__ import annotations

from pathlib import Path

from mathhay_fixtures import write_release

from finmath_tasks.tasks.mathhay import grid
from finmath_tasks.tasks.mathhay.dataset import (
    CATEGORIES,
    CATEGORY_PER_TYPE,
    DEFAULT_PLACEMENT,
    PAPER_SUBSETS,
    RELEASES,
)
from finmath_tasks.tasks.mathhay.haystack import (
    LONG_LENGTH_RESERVE,
    O1_LONG_LENGTH_RESERVE,
    SHUFFLE_SEED,
    haystack_budget,
)
from finmath_tasks.tasks.mathhay.scoring import FLAGS, JUDGE_READER, JUDGE_TEMPLATE, REL_TOL
from finmath_tasks.tasks.mathhay.task import PAPER_LENGTHS, SOLVE_TEMPLATE, mathhay


def test_lengths_sets_and_placements() -> None:
    assert PAPER_LENGTHS == (32000, 64000, 128000)  # section 4.1
    # section 3.4: the hardest placement of Figure 2 per number of documents
    assert DEFAULT_PLACEMENT == {1: "middle", 2: "first-middle", 3: "first-first-first"}
    # Table 3 on v1: Verified, Unverified and Full (both)
    assert PAPER_SUBSETS == ("verified", "unverified", "verified+unverified")
    assert RELEASES["v1"].subsets[0] == "verified+unverified"  # the default set
    defaults = mathhay.__wrapped__.__defaults__  # type: ignore[attr-defined]
    # the release is v1 and the set its first (verified+unverified) when none is given
    assert defaults is not None and "v1" in defaults and None in defaults


def test_categories_of_table_3() -> None:
    assert CATEGORY_PER_TYPE == {
        "sssd": "SSSD", "2ssd": "MSSD", "3ssd": "MSSD", "ss2d": "SSMD",
        "2s2d": "MSMD", "3s2d": "MSMD", "3s3d": "MSMD",
    }  # fmt: skip
    assert CATEGORIES["mssd"] == ("2ssd", "3ssd")
    assert CATEGORIES["msmd"] == ("2s2d", "3s2d", "3s3d")


def test_haystack_budget_and_the_o1_reserve() -> None:
    assert SHUFFLE_SEED == 2024
    assert (LONG_LENGTH_RESERVE, O1_LONG_LENGTH_RESERVE) == (2000, 20000)
    assert [haystack_budget(n) for n in PAPER_LENGTHS] == [32000, 64000, 126000]
    assert haystack_budget(128000, O1_LONG_LENGTH_RESERVE) == 108000


def test_generation_settings(tmp_path: Path) -> None:
    write_release(tmp_path)
    task = mathhay(data_dir=str(tmp_path), release="v1", subset="verified", task_type="sssd")
    # section 4.1: temperature 0 for all models; the reference: 1024 new tokens
    assert task.config.temperature == 0.0 and task.config.max_tokens == 1024
    assert REL_TOL == 1e-9  # the reference's exact match


def test_solving_prompt_has_the_papers_instructions_and_answer_format() -> None:
    prompt = SOLVE_TEMPLATE
    assert prompt.index("{context}") < prompt.index("Instructions:") < prompt.index("{question}")
    assert "single computational step" in prompt  # Figure 13, even for multi-step tasks
    for field in ('"relevant_quantity_cells"', '"quantity_cell"', '"reasoning"', '"answer"'):
        assert field in prompt


def test_judge_prompt_and_reading() -> None:
    prompt = JUDGE_TEMPLATE
    assert prompt.index("{solution1}") < prompt.index("{solution2}") < prompt.index("Example")
    assert "Answer1:" in prompt and "Answer2:" in prompt and "Output: Yes" in prompt
    assert '"reasoning"' in prompt and '"output"' in prompt
    # the reference: equivalent when the output field contains "yes", in any case
    assert JUDGE_READER('{"reasoning": "r", "output": "YES"}') == (True, "")
    assert JUDGE_READER('{"reasoning": "r", "output": "No"}') == (False, "")
    assert JUDGE_READER("Yes")[0] is None
    assert {"judge_unparseable", "judge_error"} <= set(FLAGS)


def test_depth_grid_is_figure_4() -> None:
    runs = grid.GRIDS["depth"].arg_sets()
    assert {a["task_type"] for a in runs} == {"sssd", "mssd"}  # single-document: SSSD, MSSD
    assert {a["placement"] for a in runs} == {f"p{n}" for n in range(1, 10)}
    assert {a["length"] for a in runs} == set(PAPER_LENGTHS)
    assert {(a["release"], a["subset"]) for a in runs} == {("v1", "verified")}
