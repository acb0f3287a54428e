"""The agents' prompts follow the layout of the financial-agents paper's appendix D.

Pinned: the reply formats (CoT as JSON steps + answer, PoT as code only, the critic's
critique without rounding, the analyst's JSON reply), the calculator's few-shot
layout (three examples, the first with no calculation, the answer a JSON list of
equations over numbers without thousands separators), and what each agent's own
prompt carries, where (the paper's D.3 to D.7). The examples are read by our own
calculator the way a model's reply would be.
"""

from __future__ import annotations

import json
import re

import pytest

from finmath_tasks.solvers.agents import prompts as P
from finmath_tasks.solvers.agents.calculator import check_equations

ANALYST_REPLIES = {
    "ANALYST_COT": P.ANALYST_COT,
    "CRITIC_REVISION": P.CRITIC_REVISION,
    "IMPROVED_CRITIC_COMPARE": P.IMPROVED_CRITIC_COMPARE,
    "CALCULATOR_FINAL": P.CALCULATOR_FINAL,
}


def examples() -> list[tuple[list[str], dict[str, list[str]]]]:
    """(steps, answer) of each example of the calculator's extraction prompt."""
    blocks = P.CALCULATOR_EXTRACT.split("### Example\n")[1:]
    found = []
    for block in blocks:
        block = block.split("\n\n### List of steps\n{response}")[0]
        steps_text = block.split("### List of steps\n", 1)[1].split("### Answer\n", 1)[0]
        answer_text = block.split("### Answer\n", 1)[1]
        found.append((json.loads(steps_text), json.loads(answer_text)))
    return found


def test_analyst_replies_are_json_steps_and_answer() -> None:
    assert json.loads(P.ANSWER_JSON.replace('"each', '"x').replace('"the', '"y'))  # valid JSON
    fmt = json.loads(P.ANSWER_JSON)
    assert list(fmt) == ["steps", "answer"] and isinstance(fmt["steps"], list)
    for name, text in ANALYST_REPLIES.items():
        assert P.ANSWER_JSON in text, name


def test_cot_prompt_layout_instruction_format_document_question() -> None:
    text = P.ANALYST_COT
    assert text.index("{answer_instruction}") < text.index(P.ANSWER_JSON)
    assert text.index(P.ANSWER_JSON) < text.index("### Text and table\n{context}")
    assert text.index("{context}") < text.index("### Question\n{question}")
    assert text.rstrip().endswith("{question}")


def test_pot_prompt_asks_for_code_only() -> None:
    assert "Do not answer the question yourself" in P.ANALYST_POT
    assert "code only" in P.ANALYST_POT and "```python" in P.ANALYST_POT
    assert P.ANSWER_JSON not in P.ANALYST_POT


def test_critic_critiques_without_rounding_and_gives_no_answer_format() -> None:
    assert "detailed critique" in P.CRITIC and "Do not round" in P.CRITIC
    assert P.ANSWER_JSON not in P.CRITIC


def test_improved_critic_keeps_when_very_confident_else_updates() -> None:
    assert "very confident" in P.IMPROVED_CRITIC
    assert '"maintain"' in P.IMPROVED_CRITIC and '"update"' in P.IMPROVED_CRITIC
    assert '"steps"' in P.IMPROVED_CRITIC and '"answer"' in P.IMPROVED_CRITIC
    assert "{first_response}" in P.IMPROVED_CRITIC_COMPARE
    assert "{second_response}" in P.IMPROVED_CRITIC_COMPARE


def test_calculator_has_three_examples_the_first_without_calculation() -> None:
    found = examples()
    assert len(found) == 3
    assert found[0][1] == {"answer": []}
    assert all(len(answer["answer"]) >= 2 for _, answer in found[1:])
    # the reply format: numbers without thousands separators, only + - * / ( ) =
    for _, answer in found:
        for equation in answer["answer"]:
            assert re.fullmatch(r"[0-9.+\-*/()=]+", equation), equation


def test_calculator_examples_read_by_our_calculator() -> None:
    found = examples()
    assert check_equations(json.dumps(found[0][1])) == []
    second = check_equations(json.dumps(found[1][1]))
    assert [c.status for c in second] == ["correct"] * 3
    # as in the paper's third example, the copied result is wrong and the last entry has
    # no result: the calculator corrects the first and computes the second
    third = check_equations(json.dumps(found[2][1]))
    assert [c.status for c in third] == ["incorrect", "no_result"]
    assert third[0].value == pytest.approx(third[1].value)


def test_calculator_reads_the_json_list_and_plain_lines() -> None:
    reply = 'Here:\n```json\n{"answer": ["10-4=6", "(6/4)*100"]}\n```'
    checks = check_equations(reply)
    assert [(c.expression, c.status) for c in checks] == [
        ("10-4", "correct"),
        ("(6/4)*100", "no_result"),
    ]
    assert checks[1].value == 150
    assert [c.status for c in check_equations("10 - 4 = 7\nprose\n")] == ["incorrect"]
    assert check_equations('{"answer": []}') == []


def test_prompt_examples_use_made_up_figures_only() -> None:
    # an earlier version used the figures of a TAT-QA dev document (1,202.9 / 1,496.5, 44.1 / 56.7 /
    # 70.8) were in the calculator's examples; none may come back
    every = "\n".join(
        str(getattr(P, name)) for name in dir(P) if name.isupper() and not name.startswith("_")
    )
    for figure in ["1202.9", "1,202.9", "1496.5", "1,496.5", "44.1", "56.7", "70.8", "0.40541"]:
        assert figure not in every, figure


DOC, QUESTION = "DOC-TEXT | a | b |", "QUESTION-TEXT?"
RESPONSE, CRITIQUE, SECOND, CHECKS = "RESPONSE-TEXT", "CRITIQUE-TEXT", "SECOND-TEXT", "1+1 = 2"


def in_order(prompt: str, *texts: str) -> bool:
    position = 0
    for text in texts:
        found = prompt.find(text, position)
        if found < 0:
            return False
        position = found + len(text)
    return True


def test_every_later_prompt_carries_its_inputs_after_its_instruction() -> None:
    """Each call restates what its agent reads (D.3 to D.7), the instruction
    first, then the inputs in the paper's order; none refers to a turn "above"."""
    instruction = "RULE-TEXT"
    cases = {
        "critic": (P.critic_prompt(DOC, QUESTION, RESPONSE), (DOC, QUESTION, RESPONSE), ()),
        "revision": (
            P.revision_prompt(DOC, QUESTION, RESPONSE, CRITIQUE, instruction),
            (instruction, P.ANSWER_JSON, DOC, QUESTION, RESPONSE, CRITIQUE),
            (),
        ),
        "improved critic": (
            P.improved_critic_prompt(DOC, QUESTION, RESPONSE, instruction),
            (instruction, DOC, QUESTION, RESPONSE),
            (),
        ),
        "comparison": (
            P.compare_prompt(QUESTION, RESPONSE, SECOND, instruction),
            (instruction, P.ANSWER_JSON, QUESTION, RESPONSE, SECOND),
            (DOC,),
        ),
        "extraction": (P.extraction_prompt(RESPONSE), ("### Example", RESPONSE), (DOC, QUESTION)),
        "final": (
            P.final_prompt(RESPONSE, CHECKS, instruction),
            (instruction, P.ANSWER_JSON, RESPONSE, CHECKS),
            (DOC, QUESTION),
        ),
    }
    for name, (prompt, carried, absent) in cases.items():
        assert in_order(prompt, *carried), name
        assert not any(text in prompt for text in absent), name
        assert "above" not in prompt and "previous turn" not in prompt, name
        assert "{" + "response}" not in prompt and "{context}" not in prompt, name


def test_the_extraction_prompt_ends_with_the_whole_output_as_its_list_of_steps() -> None:
    """D.5: instructions, three examples, then "List of steps" and the analyst's output
    itself (not a reference to it), then the answer slot."""
    output = 'Some prose first.\n{"steps": ["7 - 3 = 4"], "answer": "4"}'
    prompt = P.extraction_prompt(output)
    assert prompt.endswith("### List of steps\n" + output + "\n### Answer\n")
    assert prompt.count("### Example") == 3
    assert prompt.index("### Example") < prompt.rindex("### List of steps")


def test_fill_never_reads_placeholders_inside_a_filled_value() -> None:
    # a model's reply that writes "{question}" or "{checks}" is carried as written
    reply = 'I used {question} and {checks}; {"answer": 1}'
    prompt = P.final_prompt(reply, "2+2 = 4  [correct]", "RULE")
    assert reply in prompt and prompt.count("2+2 = 4") == 1
    assert P.fill("{a} {b}", a="{b}", b="x") == "{b} x"


def test_no_later_prompt_opens_like_another_or_reaches_a_cacheable_shared_opening() -> None:
    """The dry run's cache estimate counts first turns only (cli/agents_cost.py):
    every template's fixed opening (up to its first sample-specific text) stays under
    the smallest provider minimum, 1,024 tokens."""
    from finmath_tasks.cli.cost import count_tokens
    from finmath_tasks.prefix_cache import ANTHROPIC, OPENAI

    smallest = min(OPENAI.min_tokens, ANTHROPIC.min_tokens)
    for template in (
        P.ANALYST_COT,
        P.ANALYST_POT,
        P.CRITIC,
        P.CRITIC_REVISION,
        P.IMPROVED_CRITIC,
        P.IMPROVED_CRITIC_COMPARE,
        P.CALCULATOR_EXTRACT,
        P.CALCULATOR_FINAL,
    ):
        opening = template.split("{context}")[0].split("{response}")[0].split("{question}")[0]
        opening = P.fill(opening, answer_instruction=P.DEFAULT_ANSWER_INSTRUCTION)
        assert count_tokens(opening) < smallest // 2, opening[:60]
