"""Prompts of the construction pipeline, in our own words, after the paper's description.

MathHay (Wang et al.) builds questions in stages: an LLM proposes topics, then
for each topic subtopics each with a decomposable query and the atomic queries
it breaks into (all about events inside the time window); documents found for
the atomic queries are filtered; an LLM writes questions of each task type
(steps x documents) with a Python solution and the quantity cells it reads;
quality control asks for a second solution and keeps the tasks whose two
answers agree. The instructions, structure and answer format follow the paper;
the wording is ours.
"""

from __future__ import annotations

import json
from typing import Any

TOPICS = """\
We are assembling a benchmark of numerical reasoning questions over real-world \
documents. Propose {n} distinct subject areas (each a sector of the economy, a field \
of science or an area of public life, named by a short noun phrase such as "Retail \
Banking") in which news and reports routinely give figures that can be combined by \
arithmetic.

Answer with a JSON object and nothing else: {{"topics": ["<topic>", ...]}}"""

QUERIES = """\
Topic: {topic}
Time window: {period}

Propose {n_subtopics} subtopics of this topic. For each subtopic write {n_queries} \
decomposable queries: questions about events or figures that fall inside the time \
window and that need several numbers to answer. Break each decomposable query into \
atomic queries: each a complete question (not a keyword) answerable by one search \
and asking for one figure within the time window.

Answer with a JSON object and nothing else:
{{"subtopics": [{{"subtopic": "<name>", "queries": [{{"decomposable_query": "<question>", \
"atomic_queries": ["<question>", ...]}}]}}]}}"""

TASK_SHAPES = {
    "sssd": ("one arithmetic step", "the document"),
    "2ssd": ("two chained arithmetic steps", "the document"),
    "3ssd": ("three chained arithmetic steps", "the document"),
    "ss2d": ("one arithmetic step", "both documents (at least one figure from each)"),
    "2s2d": ("two chained arithmetic steps", "both documents (at least one figure from each)"),
    "3s2d": ("three chained arithmetic steps", "both documents (at least one figure from each)"),
    "3s3d": ("three chained arithmetic steps", "all three documents (figures from each)"),
}

QUESTIONS = """\
You write math word problems grounded in documents.

{documents}

Write up to {n} questions. Each question must be answerable with {steps} on \
figures stated in {where}; it names the objects, dates and places precisely enough \
that the figures can be found again, and it has one numerical answer.

For each question give:
- "{cells_field}": the quantity cells used, {cells_shape}; a cell is \
{{"object", "numerical_value", "date", "location", "context"}};
- "question": the question;
- "solution": a Python function `def solve():` without arguments that assigns each \
figure to a named variable, performs the steps and returns the number;
- "steps": the number of arithmetic steps;
- "answer": the numerical answer.

Answer with a JSON object and nothing else: {{"tasks": [{{...}}, ...]}}"""

QUALITY_CONTROL = """\
Solve the question below from the documents and quantity cells given.

Documents:
{documents}

Quantity cells:
{cells}

Question: {question}

Write a Python function without arguments (for example `def solve():`) that sets a \
variable for every figure it uses (taken from the documents or the quantity cells), \
computes the result in one or more arithmetic steps, stores it in a variable named \
`answer` and returns `answer`. Then state the final answer as a number.

Answer with a JSON object and nothing else:
{{"reasoning": "<how you solved it>", "python_solution": "<the function>", "answer": <number>}}"""


def documents_block(documents: list[str]) -> str:
    if len(documents) == 1:
        return f"Document:\n{documents[0]}"
    return "\n\n".join(f"Document {i}:\n{d}" for i, d in enumerate(documents, 1))


def quality_control_prompt(question: str, cells: Any, documents: list[str]) -> str:
    return QUALITY_CONTROL.format(
        documents=documents_block(documents),
        cells=json.dumps(cells, indent=2, ensure_ascii=False),
        question=question,
    )
