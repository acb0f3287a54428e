"""The agents' prompts: the structure, instructions and reply formats of the
financial-agents paper's appendix D (Tan et al.), in our own words.

- analyst (CoT, D.1): the instruction, the JSON reply format ``{"steps": [...],
  "answer": ...}``, then the document and the question under ``###`` headings;
- analyst (PoT, D.2): code only, no answer;
- critic (D.3): a detailed critique of the response, without rounding; then the analyst
  answers again in the JSON format;
- improved critic (D.4): review the previous answer, keep it when very confident, else
  update it (JSON); on an update the analyst compares both answers;
- calculator (D.5): extract every equation as a JSON list ``{"answer": [...]}`` with three
  examples (the first has no calculation at all), numbers without thousands separators;
  then the analyst improves its answer with the correct calculations.

The examples' figures are made up and occur in no evaluation record of any benchmark
we ship (issue 27: an earlier version of ours took them from an evaluation document).
Placeholders are ``{name}`` and are filled with :func:`fill`, which replaces
only the names it is given, so the JSON examples' braces stay as written. Every sample
provides ``{question}`` and ``{context}`` (its metadata); ``{answer_instruction}`` is the
task's rule for writing the answer (:data:`DEFAULT_ANSWER_INSTRUCTION` by default).
"""

from __future__ import annotations


def fill(template: str, **values: str) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced (nothing else touched)."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


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

CRITIC = """\
Act now as a reviewer of the response above, which another agent gave to the question \
about this text and table. Think about the analysis and write a detailed critique: is the \
response accurate, which mistakes does it make (the numbers taken from the text and the \
table, the method, each calculation), and how should it be improved? Do not round any \
numerical answer."""

CRITIC_REVISION = (
    """\
Taking the critique above into account, answer the question again. {answer_instruction}
Give your reply as JSON in exactly this form, with nothing else:
"""
    + ANSWER_JSON
)

IMPROVED_CRITIC = """\
Look again at your previous answer to the question, using the text and the table. If you \
are very confident that it is right, keep it ("maintain"); otherwise change it ("update") \
and give the corrected steps and answer. {answer_instruction}
Give your final reply as JSON in exactly this form:
{"decision": "maintain" or "update", "steps": ["each calculation step, with its equation \
if it has one"], "answer": "the final numerical answer"}"""

IMPROVED_CRITIC_COMPARE = (
    """\
Your two previous answers to the question differ.
First answer: {first_answer}
Second answer: {critic_answer}
Go over the question and both answers again and give the best answer. {answer_instruction}
Give your reply as JSON in exactly this form:
"""
    + ANSWER_JSON
)

CALCULATOR_EXTRACT = """\
From the steps of your last answer, pick out every equation and list them as JSON in the \
form shown below. Write the numbers without thousands separators (a decimal point is \
fine) and use no symbols other than "+", "-", "*", "/", "(" and ")". Reply with the JSON \
object only.

### Example
Steps:
["The text gives no number of branches, so the revenue per branch cannot be worked out."]
Answer:
{"answer": []}

### Example
Steps:
["Segment profit was 48,317.6 in FY21 and 45,093.2 in FY20, so it rose by \
48,317.6 - 45,093.2 = 3,224.4.", "In FY19 it was 43,862.9, so the FY20 rise was \
45,093.2 - 43,862.9 = 1,230.3.", "The average yearly rise is (3,224.4 + 1,230.3) / 2 = \
4,454.7 / 2 = 2,227.35."]
Answer:
{"answer": ["48317.6-45093.2=3224.4", "45093.2-43862.9=1230.3", \
"(3224.4+1230.3)/2=4454.7/2=2227.35"]}

### Example
Steps:
["Growth = (73,518.4 - 51,906.7) / 51,906.7 * 100 = 41.72%", "Put another way: \
(21,611.7 / 51,906.7) x 100"]
Answer:
{"answer": ["(73518.4-51906.7)/51906.7*100=41.72", "(21611.7/51906.7)*100"]}

### Your turn
Steps: the steps of your last answer above.
Answer:"""

CALCULATOR_FINAL = (
    """\
A calculator worked out the equations of your answer; here are the correct calculations:
{checks}

Improve your answer with these correct calculations (they replace any result of yours that \
differs). {answer_instruction}
Give your reply as JSON in exactly this form:
"""
    + ANSWER_JSON
)
