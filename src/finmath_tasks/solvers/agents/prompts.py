"""The agents' prompts (our own wording, in the spirit of the financial-agents paper).

Placeholders are ``{name}`` and are filled with :func:`fill`, which replaces only the
names it is given, so the JSON examples' braces stay as written. Every sample provides
``{question}`` and ``{context}`` (its metadata); ``{answer_instruction}`` is the task's
rule for writing the answer (:data:`DEFAULT_ANSWER_INSTRUCTION` by default).
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
    "quantity, and write a percentage as its number of percent (12.5 for 12.5%)."
)

ANALYST_SYSTEM = (
    "You are a financial analyst. You answer questions about a financial document "
    "(text and a table) by reasoning step by step and computing carefully."
)

ANALYST_COT = """\
Read the document and answer the question.

Document:
{context}

Question: {question}

Think step by step, writing every calculation with its numbers. {answer_instruction}
Reply with a JSON object and nothing after it:
{"steps": "<your reasoning and calculations>", "answer": <the final answer>}"""

ANALYST_POT_SYSTEM = (
    "You are a financial analyst who answers questions about a financial document by "
    "writing a Python program."
)

ANALYST_POT = """\
Read the document and write a Python program that answers the question.

Document:
{context}

Question: {question}

Define a function `solution()` that computes the answer from the numbers in the document
and returns it as a number (int or float). Use only the Python standard library.
{answer_instruction}
Reply with the program in one ```python code block."""

CRITIC = """\
Now act as a critic of the analyst's answer above. Check each step against the document: \
were the right numbers taken from the text and the table, is the method right for the \
question, is each calculation right, and is the answer stated in the requested form? \
List the mistakes you find, or say that you find none. Do not give a final answer yourself."""

CRITIC_REVISION = """\
You are the analyst again. Considering the critic's feedback, answer the question once more. \
{answer_instruction}
Reply with a JSON object and nothing after it:
{"steps": "<your reasoning and calculations>", "answer": <the final answer>}"""

IMPROVED_CRITIC = """\
Now act as a critic of the analyst's answer above. Check each step against the document: \
the numbers taken from the text and the table, the method, each calculation and the form \
of the answer. Then decide:
- "maintain" if the answer is right, or if you are not sure it is wrong;
- "update" only if you found a definite mistake; then give your corrected answer.
{answer_instruction}
Reply with a JSON object and nothing after it:
{"critique": "<the mistakes you found, or none>", "decision": "maintain" or "update", \
"answer": <your corrected answer when you update, else null>}"""

IMPROVED_CRITIC_COMPARE = """\
You are the analyst again. The critic believes your answer is wrong.
Your answer: {first_answer}
The critic's answer: {critic_answer}
Compare the two answers and the critic's reasoning with the document, decide which one is \
right (or give a better one), and answer the question. {answer_instruction}
Reply with a JSON object and nothing after it:
{"steps": "<why this answer is right>", "answer": <the final answer>}"""

CALCULATOR_EXTRACT = """\
Now list every calculation used in the reasoning of the last answer, one per line, as \
`<expression> = <result>`, where the expression uses only numbers, + - * / and parentheses \
(no words, units, variables or percent signs; write 5% as 0.05 or divide by 100), and the \
result is the value that the reasoning used. Write nothing else. For example:

Reasoning: revenue grew from 1,202.9 to 1,496.5, a change of 293.6, which is 24.4% of 1,202.9.
Calculations:
1496.5 - 1202.9 = 293.6
293.6 / 1202.9 * 100 = 24.4

Reasoning: the average of 44.1, 56.7 and 70.8 is 57.2; twice that is 114.4.
Calculations:
(44.1 + 56.7 + 70.8) / 3 = 57.2
57.2 * 2 = 114.4

Calculations:"""

CALCULATOR_FINAL = """\
A calculator checked your calculations:
{checks}

Using the checked results (the corrected values replace yours), give the final answer to the \
question. {answer_instruction}
Reply with a JSON object and nothing after it:
{"steps": "<your reasoning with the checked results>", "answer": <the final answer>}"""
