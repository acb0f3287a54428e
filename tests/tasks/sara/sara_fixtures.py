"""A small SARA-shaped release written by us (invented statutes and cases)."""

from __future__ import annotations

from pathlib import Path

SECTION_10 = """§10. Widget levy

(a) General rule

    (1) a levy is imposed on each widget sold during the calendar year; and

    (2) a widget given away shall not be considered as sold.

(b) Exempt sellers

For purposes of this section, a seller is exempt if-

    (A) the seller sold fewer than 10 widgets, or

    (B) the seller is a charity described in paragraph (2) of subsection (c),

such seller shall pay no levy.

(c) Definitions

    (1) In general

    The term "widget" means any gadget. A gadget sold by weight counts once.

    Gadgets made before 1990 are not widgets.

        (i) Special rule

        A prototype is a widget only if sold.

            (I) a prototype given to a museum, and

            (II) a prototype destroyed before sale.

    (2) Charity

    The term "charity" has the meaning given in section 11.
"""

SECTION_11 = """§11. Charities

A charity is an organization described in section 10(c)(1)."""

CASES = {
    "s10_a_1_pos": (
        "Ann sold 12 widgets in 2019.",
        "Section 10(a)(1) applies to Ann for 2019. Entailment",
    ),
    "s10_a_2_neg": (
        "Ben sold 3 widgets in 2019.",
        "Section 10(a)(2) applies to Ben for 2019. Contradiction",
    ),
    "s10_b_pos": (
        "Cat sold 2 widgets in 2018.",
        "Cat is exempt under section 10(b) for 2018. Entailment",
    ),
    "s11_neg": ("Dan runs a shop.", "Dan's shop is a charity under section 11. Contradiction"),
    "tax_case_1": (
        "Eve sold 20 widgets for $100,000 in 2019.",
        "How much levy does Eve pay for 2019? $12000",
    ),
    "tax_case_2": ("Fay sold 1 widget in 2019.", "How much levy does Fay pay for 2019? $0"),
}
EXEMPLAR_IDS = [
    "s151_d_3_B_pos", "s152_c_1_B_pos", "s3306_a_3_pos", "s63_f_2_B_pos",
    "s151_d_3_B_neg", "s152_c_1_B_neg", "s3306_b_10_A_neg", "s1_b_ii_neg",
]  # fmt: skip
"""The package's exemplar case ids: invented train cases under those names here."""
for _i, _case_id in enumerate(EXEMPLAR_IDS):
    _label = "Entailment" if _case_id.endswith("_pos") else "Contradiction"
    CASES[_case_id] = (
        f"Exemplar person {_i} sold {_i + 10} widgets in 2017.",
        f"Section 10(a)(1) applies to exemplar person {_i} for 2017. {_label}",
    )
SPLITS = {
    "train": ["s10_a_2_neg", "tax_case_2", *EXEMPLAR_IDS],
    "test": ["s10_a_1_pos", "s10_b_pos", "s11_neg", "tax_case_1"],
}


def case_file(text: str, question: str) -> str:
    return (
        f"% Text\n% {text}\n\n% Question\n% {question}\n\n% Facts\n"
        ":- [statutes/prolog/init].\n\n% Test\n:- halt.\n"
    )


def write_release(root: Path, subfolder: str | None = "sara") -> Path:
    base = root / subfolder if subfolder else root
    (base / "cases").mkdir(parents=True)
    (base / "statutes" / "source").mkdir(parents=True)
    (base / "splits").mkdir()
    (base / "statutes" / "source" / "section10").write_text(SECTION_10)
    (base / "statutes" / "source" / "section11").write_text(SECTION_11)
    for case_id, (text, question) in CASES.items():
        (base / "cases" / f"{case_id}.pl").write_text(case_file(text, question))
    for split, ids in SPLITS.items():
        (base / "splits" / split).write_text("\n".join(ids) + "\n")
    return base
