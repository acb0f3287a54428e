"""Does a TAT-QA fresh variant keep its question's meaning? :func:`violations` compares a
question's original record with its variant's, from the records alone (both derivations
evaluated with every intermediate value traced, both documents read again), so the same
check serves each draw and a test of every variant a seed gives."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from finmath_tasks.scorers.comparisons import (
    GOLD_WRITTEN_KEY,
    GoldNumber,
    exact,
    rounding,
    tolerant,
)
from finmath_tasks.scorers.extraction import parse_number
from finmath_tasks.tasks.tatqa.derivation import (
    DerivationError,
    Node,
    evaluate,
    leaves,
    parse,
    reading_of,
    rounded,
)
from finmath_tasks.tasks.tatqa.document import Document, Place
from finmath_tasks.tasks.tatqa.scoring import em_f1
from finmath_tasks.variant_rules import (
    order_changed,
    parallel_ratios,
    range_changed,
    ratio_violation,
    sign_changed,
    three_relations,
    three_violation,
    totals_hold,
)
from finmath_tasks.variants import Relation, Written, accept_gold, find_numbers, relation_of

DERIVED_DIGITS = 3
"""A number of at least this many significant digits that equals two numbers written with
it combined (:func:`finmath_tasks.variants.relation_of`) is taken as computed from them:
a variant that changes them recomputes it."""

EXACT_DIGITS = 1
"""The same in a table's row or column for a number that equals two numbers of it added
or subtracted exactly (a change column of small numbers: "16" beside 117 and 101): there
an exact equality with a changing number is rarely chance, however short the result. In
a sentence, where day and note numbers sit beside amounts, :data:`DERIVED_DIGITS` holds."""


def exact_digits(places: Sequence[Place]) -> int:
    """The significant digits from which an exact sum or difference counts among the
    numbers at ``places`` (one group of :meth:`Document.groups`)."""
    in_table = all(place[0][0] == "cell" for place in places)
    return EXACT_DIGITS if in_table else DERIVED_DIGITS


SHORT_LINE = 12
"""Short rounded relations (:func:`line_relation`) are looked for in table lines of at most
this many numbers."""


def derivation_constants(node: Node) -> set[tuple[int, int]]:
    """The spans of the leaves that are the derivation's own numbers: the divisor of an
    average (a sum of n terms over n), 100 and 1 written whole. The document may write
    the same figure ("2%" beside an average of two years) without the gold reading it."""
    found: set[tuple[int, int]] = set()

    def terms(n: Node) -> int:
        if n.op == "+":
            return terms(n.children[0]) + terms(n.children[1])
        if n.op == "neg":
            return terms(n.children[0])
        return 1

    def walk(n: Node) -> None:
        if n.op == "/" and n.children[1].op == "num":
            leaf = n.children[1].leaf
            assert leaf is not None
            if leaf.decimals == 0 and leaf.value == terms(n.children[0]) and leaf.value > 1:
                found.add((leaf.start, leaf.end))
        leaf = n.leaf
        whole = leaf is not None and not leaf.decimals and leaf.factor == 1
        if leaf is not None and whole and leaf.value in (1.0, 100.0):
            found.add((leaf.start, leaf.end))
        for child in n.children:
            walk(child)

    walk(node)
    return found


def read_values(node: Node) -> set[float]:
    """The values of the derivation's leaves read from the document (not its constants)."""
    constants = derivation_constants(node)
    return {leaf.value for leaf in leaves(node) if (leaf.start, leaf.end) not in constants}


@dataclass(frozen=True)
class SignedChange(Relation):
    """A percent change read on the signed figures as written, ``(x - y) / |y|``: a
    "(9,327)%" from 1,503 to (138,677) (``op`` "s%"; the operands are magnitudes, each
    given back its written sign)."""

    sx: float = 1.0
    sy: float = 1.0

    def apply(self, values: Sequence[float]) -> float | None:
        x, y = self.sx * values[self.x], self.sy * values[self.y]
        return None if not y else (x - y) / abs(y) * 100

    def formula(self, values: Sequence[float]) -> str:
        x, y = self.sx * values[self.x], self.sy * values[self.y]
        return f"({x:g} - {y:g}) / |{y:g}| %"


def _digits(value: float) -> int:
    return len(f"{abs(value):.10g}".replace(".", "").lstrip("0").rstrip("0"))


def _short_difference(
    written: Written,
    operands: Sequence[float],
    changing: int,
    signed: Sequence[tuple[float, bool]],
) -> Relation | None:
    """In a sentence, a number of one or two significant digits with decimals equal to the
    difference of two numbers written with it (two significant digits or more, three for
    one of them), of its form (percentages or not): "decreased $0.4 million to $12.3
    million compared with $12.7 million". A day or a note number has no decimals."""
    if written.decimals < 1 or written.value == 0 or _digits(written.value) > 2:
        return None
    kinds = list(signed) or [(v, False) for v in operands]
    wanted = abs(written.value)
    for i in range(changing):
        for j in range(len(operands)):
            x, y = operands[i], operands[j]
            if j == i or kinds[i][1] != written.percent or kinds[j][1] != written.percent:
                continue
            if min(_digits(x), _digits(y)) < 2 or max(_digits(x), _digits(y)) < 3 or x == y:
                continue
            if round(abs(x - y), written.decimals) == wanted:
                return Relation("-", i, j) if x > y else Relation("-", j, i)
    return None


def _signed_change(
    written: Written,
    kinds: Sequence[tuple[float, bool]],
    changing: int,
    negative: bool,
) -> Relation | None:
    """A percent change of two amounts of a table line, on their signed values, equal to
    the written signed percentage at its places (three or more significant digits)."""
    target = -abs(written.value) if negative else abs(written.value)
    for i in range(changing):
        for j in range(len(kinds)):
            if j == i or kinds[i][1] or kinds[j][1] or not kinds[j][0] or not kinds[i][0]:
                continue
            for x, y in ((i, j), (j, i)):
                vx, vy = kinds[x][0], kinds[y][0]
                result = (vx - vy) / abs(vy) * 100
                if result and round(result, written.decimals) == round(target, written.decimals):
                    return SignedChange("s%", x, y, math.copysign(1, vx), math.copysign(1, vy))
    return None


def line_relation(
    written: Written,
    operands: Sequence[float],
    changing: int,
    places: Sequence[Place],
    text: str = "",
    signed: Sequence[tuple[float, bool]] = (),
    negative: bool = False,
) -> Relation | None:
    """The relation giving ``written`` from two of ``operands`` (magnitudes; one of the
    first ``changing``): :func:`finmath_tasks.variants.relation_of`'s, and in a table line
    of at most :data:`SHORT_LINE` numbers the short rounded ones it leaves to chance
    elsewhere: a percent change written with one or two significant digits ("3.7%" beside
    1,671 and 1,612, a change column; ``text``, the cell's, has the ``%`` of "(6)%"), and a
    ratio of one or two significant digits with decimals ("0.9", a net debt to EBITDA),
    each at its written places, between two amounts (``signed``: each operand's signed
    value and whether it is a percentage) and of the written sign (``negative``): a
    percent change of 2% is (2,804 - 2,753) / 2,753, not the other way round."""
    in_table = all(place[0][0] == "cell" for place in places)
    percent = written.percent or (in_table and "%" in text)
    if percent and not written.percent:  # "(34.1)%": the sign's parenthesis before the %
        written = replace(written, percent=True)
    relation = relation_of(written, operands, changing, DERIVED_DIGITS, exact_digits(places))
    if relation is None and not in_table:
        return _short_difference(written, operands, changing, signed)
    if relation is not None or not in_table or len(places) > SHORT_LINE:
        return relation
    digits = len(written.text.replace(",", "").replace(".", "").lstrip("-").strip("0"))
    if digits > 2 and percent and signed:
        return _signed_change(written, signed, changing, negative)
    if digits > 2 or written.value == 0:
        return None
    if percent:
        op = "%"
    elif written.decimals >= 1:
        op = "/"
    else:
        return None
    kinds = list(signed) or [(v, False) for v in operands]
    for i in range(changing):
        for j in range(len(operands)):
            if j == i or kinds[i][1] or kinds[j][1]:
                continue
            for x, y in ((i, j), (j, i)):
                relation = Relation(op, x, y)
                result = relation.apply(operands)
                with_signs = relation.apply([v for v, _ in kinds])
                if result is None or with_signs is None or result == 0:
                    continue
                if op == "%" and kinds[y][0] < 0:
                    continue  # a percent change from a negative figure: its sign is a convention
                if op == "/" and abs(operands[x]) <= abs(written.value):
                    continue
                if (with_signs < 0) != negative or (result < 0) != negative:
                    continue
                if round(abs(result), written.decimals) == abs(written.value):
                    return relation
    return None


def anchored(
    document: Document,
    place: Place,
    groups: Sequence[Sequence[Place]],
    still: Callable[[Place], bool],
) -> bool:
    """Whether the percentage at ``place`` is the percent change of two amounts written
    with it in one of ``groups`` that do not change (``still``): its row's change, held
    with them, not a chance sum of changing percentages of its column ("(6)%" beside
    679 and 722 is not (3)% - 3% of the column above it)."""
    written = document.written(place)
    text = document.texts[place[0]]
    if not (written.percent or (place[0][0] == "cell" and "%" in text)):
        return False
    negative = document.value(place) < 0
    for places in groups:
        others = [p for p in places if p != place and still(p) and not document.kind(p)[1]]
        if place not in places or len(others) < 2:
            continue
        values = [abs(document.value(p)) for p in others]
        signed = [document.kind(p) for p in others]
        relation = line_relation(written, values, len(values), places, text, signed, negative)
        if relation is not None and relation.op in ("%", "s%"):
            return True
    return False


COMPARISONS = {"rounding": rounding, "tolerant": tolerant, "exact": exact}
"""The arithmetic subset's comparisons, under which the published answer must not match
the variant's (beside the official EM)."""


def _skeleton(text: str) -> str:
    out, at = [], 0
    for w in find_numbers(text):
        out += [text[at : w.start], "#"]
        at = w.end
    return "".join(out) + text[at:]


def recites(published: Any, answer: Any, written: str, scale: str) -> str | None:
    """The comparison under which the published answer still scores against the new one."""
    text = str(published)
    for pred_scale in ("", scale):
        em, _ = em_f1(
            text, answer=answer, answer_type="arithmetic", scale=scale, pred_scale=pred_scale
        )
        if em:
            return "the official EM"
    number = parse_number(text)
    if number is not None:
        gold = GoldNumber(written)
        for name, comparison in COMPARISONS.items():
            if comparison(number, gold).correct:
                return name
    return None


def sentence_sums(document: Document) -> list[tuple[Place, Place, Place, float]]:
    """The numbers of a sentence equal to the sum or difference of two others of it at
    their written places, all three written with decimals or with three or more
    significant digits ("increased $6.5 million ... from $89.5 million ... to $96.0
    million"): (the number, a, b, the sign of b). Each rounded apart from its cell in
    thousands, the three must still agree."""
    found = []
    for name, places in document.groups():
        if name.startswith(("row ", "column ")) or len(places) < 3:
            continue
        numbers = [(p, document.written(p)) for p in places]
        numbers = [
            (p, w)
            for p, w in numbers
            if w.value and (w.decimals >= 1 or _digits(w.value) >= 3) and not w.percent
        ]
        for t, wt in numbers:
            for (a, _), (b, _) in itertools.combinations(numbers, 2):
                if t in (a, b):
                    continue
                for sign in (1.0, -1.0):
                    for x, y in ((a, b), (b, a)) if sign < 0 else ((a, b),):
                        vx, vy = abs(document.value(x)), abs(document.value(y))
                        if round(vx + sign * vy, wt.decimals) == abs(wt.value):
                            found.append((t, x, y, sign))
    return found


class Original:
    """What the checks read from a question's original record, read once for every draw."""

    def __init__(self, before: dict[str, Any]) -> None:
        self.before = before
        self.node = parse(str(before["derivation"]))
        self.reading = reading_of(self.node, float(before["answer"]))
        self.document = Document.of(before)
        self.groups = [
            (name, places, [self.document.value(p) for p in places])
            for name, places in self.document.groups()
        ]
        self.relation_groups = [
            (name, places, [self.document.value(p) for p in places])
            for name, places in self.document.relation_groups()
        ]
        self.percents = [(p, w) for p, w in self.document.places() if w.percent]
        self.grid = self.document.grid()
        self.totals = self.document.totals()
        values = {cell: self.document.value(place) for cell, place in self.grid.items()}
        self.threes = three_relations(values)
        self.decimals = {c: self.document.written(p).decimals for c, p in self.grid.items()}
        short = [
            c
            for c, p in self.grid.items()
            if not self.document.kind(p)[1]
            and self.decimals[c] >= 1
            and len(self.document.written(p).text.replace(".", "").lstrip("-").strip("0")) <= 2
        ]
        self.ratios = parallel_ratios(values, self.decimals, short)
        self.written = {abs(w.value) for _, w in self.document.places()}
        self.leaf_values = read_values(self.node)
        self.total_places = {self.grid[t.cell] for t in self.totals}
        self.sentence_sums = sentence_sums(self.document)

    def stale(self, new_doc: Document) -> list[str]:
        """Numbers left as written beside numbers that changed, though in the original
        they equal two numbers written with them combined (a change column, a difference,
        a percent change), and no longer do (a number of the derivation held as written,
        and a total, are checked elsewhere)."""
        found = []
        row_groups = [places for name, places, _ in self.groups if name.startswith(("row", "col"))]

        def still(place: Place) -> bool:
            return abs(new_doc.value(place)) == abs(self.document.value(place))

        for name, places, values in self.relation_groups:
            before = [abs(v) for v in values]
            after = [abs(new_doc.value(p)) for p in places]
            moved = [i for i in range(len(places)) if after[i] != before[i]]
            if not moved:
                continue
            for k, place in enumerate(places):
                w = self.document.written(place)
                if k in moved or place in self.total_places or abs(w.value) in self.leaf_values:
                    continue
                if name.endswith("with its rows") and place[0][0] == "cell":
                    continue  # the cells' own relations are their row's and column's
                order = moved + [i for i in range(len(places)) if i not in moved and i != k]
                old = [before[i] for i in order]
                text = self.document.texts[place[0]]
                signed = [self.document.kind(places[i]) for i in order]
                negative = self.document.value(place) < 0
                relation = line_relation(w, old, len(moved), places, text, signed, negative)
                if relation is None:
                    continue
                result = relation.apply([after[i] for i in order])
                if result is None or rounded(abs(result), w.decimals) != abs(w.value):
                    if anchored(self.document, place, row_groups, still):
                        continue  # the percent change of its row's amounts, which stay
                    found.append(
                        f"{name}: {w.text} equals {relation.formula(old)} but is not "
                        "recomputed with the new values"
                    )
        return found

    def violations(
        self, after: dict[str, Any], document: Document | None = None, first: bool = False
    ) -> list[str]:
        """The rules the variant ``after`` breaks ([]: none); ``document``: ``after``'s, when
        already read; ``first``: stop at the first kind of rule broken (a draw is refused on
        one: the costlier checks of the document are then not run)."""
        before, reading, node = self.before, self.reading, self.node
        if reading is None:
            return ["the original derivation does not reproduce the published answer"]
        try:
            new_node = parse(str(after["derivation"]))
        except DerivationError as e:
            return [f"the variant's derivation does not parse: {e}"]
        if [leaf.factor for leaf in leaves(node)] != [leaf.factor for leaf in leaves(new_node)]:
            return ["the derivations differ in more than their numbers"]
        found: list[str] = []
        value, trace = evaluate(node, reading.negative_alone)
        new_value, new_trace = evaluate(new_node, reading.negative_alone)
        at = sign_changed(trace, new_trace)
        if at is not None:
            found.append(
                f"intermediate value {at + 1} of the derivation changes sign "
                f"({trace[at]:g} -> {new_trace[at]:g})"
            )
        answer = rounded(new_value * reading.factor, reading.decimals)
        if not math.isclose(answer, float(after["answer"]), abs_tol=1e-9):
            found.append(f"the gold {after['answer']!r} is not the derivation's {answer!r}")
        why = accept_gold(float(before["answer"]), float(after["answer"]))
        if why:
            found.append(why)
        scale = str(before.get("scale") or "")
        written = str(after.get(GOLD_WRITTEN_KEY) or after["answer"])
        same = recites(before["answer"], after["answer"], written, scale)
        if same:
            found.append(f"the published answer {before['answer']!r} still scores under {same}")
        percentage = reading.factor == 100 or scale == "percent"
        if percentage and range_changed(value * reading.factor, new_value * reading.factor):
            found.append("the percentage answer leaves [0, 100]")
        if first and found:
            return found
        old_doc, new_doc = self.document, document or Document.of(after)
        for key, text in old_doc.texts.items():
            other = new_doc.texts.get(key, "")
            if text != other and _skeleton(text) != _skeleton(other):
                return [*found, f"{key} differs at more than its numbers"]
        if not old_doc.same_shape(new_doc):
            return [*found, "the variant's numbers read differently (a year, a number split)"]
        for name, places, values in self.groups:
            pair = order_changed(values, [new_doc.value(p) for p in places])
            if pair is not None:
                a, b = (old_doc.written(places[i]).text for i in pair)
                found.append(f"{name}: {a} and {b} change order or equality")
        for place, w in self.percents:
            if range_changed(w.value, new_doc.value(place)):
                found.append(f"the percentage {w.text}% leaves [0, 100]")
        if first and found:
            return found
        new_values = {cell: new_doc.value(place) for cell, place in self.grid.items()}
        decimals = {cell: new_doc.written(place).decimals for cell, place in self.grid.items()}
        broken = totals_hold(self.totals, new_values, decimals)
        if broken is not None:
            found.append(f"the total in cell {broken.cell} is no longer the sum of its parts")
        three = three_violation(self.threes, new_values, decimals)
        if three is not None:
            found.append(
                "the cells {} + {} - {} no longer equal {} (held in every row)".format(*three)
            )
        ratio = ratio_violation(self.ratios, new_values, self.decimals)
        if ratio is not None:
            found.append(f"the ratio in cell {ratio} is no longer the ratio it writes")
        if first and found:
            return found
        found += self.stale(new_doc)
        for total, x, y, sign in self.sentence_sums:
            if any(abs(new_doc.value(q)) != abs(old_doc.value(q)) for q in (total, x, y)):
                got = abs(new_doc.value(x)) + sign * abs(new_doc.value(y))
                if round(got, new_doc.written(total).decimals) != abs(new_doc.value(total)):
                    text = old_doc.written(total).text
                    found.append(f"{text} no longer equals the numbers of its sentence it sums")
        written_after = {abs(w.value) for _, w in new_doc.places()}
        for old, new in zip(leaves(node), leaves(new_node), strict=True):
            if old.value in self.written and new.value not in written_after:
                found.append(f"the derivation's {new.text} is not written in the variant")
        return found


def violations(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The rules the variant ``after`` of ``before`` breaks ([]: none)."""
    try:
        original = Original(before)
    except DerivationError as e:
        return [f"the original derivation does not parse: {e}"]
    return original.violations(after)
