"""The agents' prompts: the structure, instructions and reply formats of the
financial-agents paper's appendix D (Tan et al.), in our own words.

Every agent call is its own single-turn prompt that carries what that agent reads, where
the paper puts it (D.3 to D.7); none refers to an earlier turn:

- analyst (CoT, D.1): the instruction, the JSON reply format ``{"steps": [...],
  "answer": ...}``, then the document and the question under ``###`` headings;
- analyst (PoT, D.2): code only, no answer;
- critic (D.3): a detailed critique, without rounding, of the response, given with the
  document and the question; then the analyst answers again in the JSON format, given
  the document, the question, the response and the critique;
- improved critic (D.4): the document, the question and the previous answer: keep it
  when very confident, else update it (JSON); on an update the analyst compares both
  answers (the two whole replies, under the question);
- calculator (D.5): extract every equation as a JSON list ``{"answer": [...]}`` with three
  examples (the first has no calculation at all), numbers without thousands separators,
  then "List of steps" followed by the analyst's whole output; then the analyst improves
  that response with the correct calculations (the response and the calculations).

The examples' figures are made up and occur in no evaluation record of any benchmark
we ship (an earlier version of ours took them from an evaluation document).
Placeholders are ``{name}`` and are filled with :func:`fill`, in one pass over the
template: a value (a document, a model's reply) is never searched for placeholders, and
the JSON examples' braces stay as written. ``{answer_instruction}`` is the task's rule
for writing the answer (:data:`DEFAULT_ANSWER_INSTRUCTION` by default).
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def fill(template: str, **values: str) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced, in one pass: other braces,
    other names and the text of the values themselves are left as they are."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


DEFAULT_ANSWER_INSTRUCTION = (
    "The answer is a single number written with digits only (no thousands separators, "
    "no currency sign, no scale word): state it in the units the document uses for that "
    "quantity, and write a percentage as its number of percent (41.64 for 41.64%)."
)
"""The figures of every example in these prompts are made up: they occur in no
evaluation record of any benchmark we ship (checked against ../shared/data)."""

ANSWER_JSON = (
    '{"steps": ["each calculation step, with its equation if it has one"], '
    '"answer": "the final numerical answer"}'
)
"""The reply format of every analyst turn (appendix D of the paper: a list of steps and
the final numerical answer, as JSON)."""

ANALYST_COT = (
    """\
Study the text and the table below with care, then answer the question. \
{answer_instruction}
Give your reply as JSON in exactly this form:
"""
    + ANSWER_JSON
    + """

### Text and table
{context}

### Question
{question}"""
)

ANALYST_POT = """\
Do not answer the question yourself. Write Python code that, when it runs, computes the \
answer from the numbers in the text and the table: a function `solution()` that returns \
the answer as a number (int or float), using only the Python standard library. \
{answer_instruction}
Reply with the code only, in one ```python block.

### Text and table
{context}

### Question
{question}"""

DOCUMENT_AND_QUESTION = """\
### Text and table
{context}

### Question
{question}"""
"""The inputs every prompt that reads the document carries, in this order (appendix D:
the text, the table, then the question)."""

CRITIC = (
    """\
Below are a text and a table, a question about them, and the response another agent gave \
to that question. Review the response: think about its analysis and write a detailed \
critique. Is the response accurate? Which mistakes does it make (the numbers taken from \
the text and the table, the method, each calculation), and how should it be improved? Do \
not round any numerical answer.

"""
    + DOCUMENT_AND_QUESTION
    + """

### Response
{response}"""
)

CRITIC_REVISION = (
    """\
Below are a text and a table, a question about them, the response an agent gave to the \
question and a critique of that response. Taking the critique into account, answer the \
question. {answer_instruction}
Give your reply as JSON in exactly this form, with nothing else:
"""
    + ANSWER_JSON
    + "\n\n"
    + DOCUMENT_AND_QUESTION
    + """

### Response
{response}

### Critique
{critique}"""
)

IMPROVED_CRITIC = (
    """\
Below are a text and a table, a question about them, and your previous answer to that \
question. Check that answer using the text and the table. If you are very confident that \
it is right, keep it ("maintain"); otherwise change it ("update") and give the corrected \
steps and answer. {answer_instruction}
Give your final reply as JSON in exactly this form:
{"decision": "maintain" or "update", "steps": ["each calculation step, with its equation \
if it has one"], "answer": "the final numerical answer"}

"""
    + DOCUMENT_AND_QUESTION
    + """

### Previous answer
{response}"""
)

IMPROVED_CRITIC_COMPARE = (
    """\
You have given two different answers to the question below. Go over the question and \
both answers again and give the best answer. {answer_instruction}
Give your reply as JSON in exactly this form:
"""
    + ANSWER_JSON
    + """

### Question
{question}

### First answer
{first_response}

### Second answer
{second_response}"""
)

CALCULATOR_EXTRACT = """\
From the list of steps below, pick out every equation and list them as JSON in the form \
the examples show. Write the numbers without thousands separators (a decimal point is \
fine) and use no symbols other than "+", "-", "*", "/", "(" and ")". Reply with the JSON \
object only.

### Example
### List of steps
["The text gives no number of branches, so the revenue per branch cannot be worked out."]
### Answer
{"answer": []}

### Example
### List of steps
["Segment profit was 48,317.6 in FY21 and 45,093.2 in FY20, so it rose by \
48,317.6 - 45,093.2 = 3,224.4.", "In FY19 it was 43,862.9, so the FY20 rise was \
45,093.2 - 43,862.9 = 1,230.3.", "The average yearly rise is (3,224.4 + 1,230.3) / 2 = \
4,454.7 / 2 = 2,227.35."]
### Answer
{"answer": ["48317.6-45093.2=3224.4", "45093.2-43862.9=1230.3", \
"(3224.4+1230.3)/2=4454.7/2=2227.35"]}

### Example
### List of steps
["Growth = (73,518.4 - 51,906.7) / 51,906.7 * 100 = 41.72%", "Put another way: \
(21,611.7 / 51,906.7) x 100"]
### Answer
{"answer": ["(73518.4-51906.7)/51906.7*100=41.72", "(21611.7/51906.7)*100"]}

### List of steps
{response}
### Answer
"""
"""The extraction prompt (D.5): the instructions, three examples, then the analyst's whole
output in the "List of steps" slot."""

CALCULATOR_FINAL = (
    """\
Below are the response an agent gave and the correct calculations for it, worked out by a \
calculator. Improve the response with these calculations (they replace any result of the \
response that differs). {answer_instruction}
Give your reply as JSON in exactly this form:
"""
    + ANSWER_JSON
    + """

### Response
{response}

### Correct calculations
{checks}"""
)


# --- each agent call's prompt, filled ----------------------------------------------------


def critic_prompt(context: str, question: str, response: str) -> str:
    """The critic's prompt (D.3): the document, the question and the response to review."""
    return fill(CRITIC, context=context, question=question, response=response)


def revision_prompt(
    context: str, question: str, response: str, critique: str, answer_instruction: str
) -> str:
    """The analyst's answer after the critique (D.3): document, question, response, critique."""
    return fill(
        CRITIC_REVISION,
        context=context,
        question=question,
        response=response,
        critique=critique,
        answer_instruction=answer_instruction,
    )


def improved_critic_prompt(
    context: str, question: str, response: str, answer_instruction: str
) -> str:
    """The improved critic's prompt (D.4): document, question and the previous answer."""
    return fill(
        IMPROVED_CRITIC,
        context=context,
        question=question,
        response=response,
        answer_instruction=answer_instruction,
    )


def compare_prompt(
    question: str, first_response: str, second_response: str, answer_instruction: str
) -> str:
    """The analyst's choice after an update (D.4): the question and both whole answers."""
    return fill(
        IMPROVED_CRITIC_COMPARE,
        question=question,
        first_response=first_response,
        second_response=second_response,
        answer_instruction=answer_instruction,
    )


def extraction_prompt(response: str) -> str:
    """The calculator's extraction prompt (D.5): the analyst's whole output as the steps."""
    return fill(CALCULATOR_EXTRACT, response=response)


def final_prompt(response: str, checks: str, answer_instruction: str) -> str:
    """The analyst's answer after the calculator (D.5): the response and the calculations."""
    return fill(
        CALCULATOR_FINAL, response=response, checks=checks, answer_instruction=answer_instruction
    )
