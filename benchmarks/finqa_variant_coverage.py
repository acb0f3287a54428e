"""FinQA fresh variants: coverage with and without the supporting facts, and broken relations.

For each split and seed, instantiates the split's questions as held (with ``gold_inds``) and
with every record's ``gold_inds`` removed (records of FinQA's format that do not carry
them), and prints how many were instantiated and how many variants break a sum or
percent-change relation their original table holds
(:func:`finmath_tasks.tasks.finqa.variant_rules.broken_relations`, which reads only the two
records).

    python benchmarks/finqa_variant_coverage.py [--data-dir DIR] [--splits test,dev,train]
        [--seeds 1,2,3,4,5] [--show]
"""

from __future__ import annotations

import argparse
import os
import time

from inspect_ai.dataset import Sample

from finmath_tasks.tasks.finqa.dataset import load_dataset
from finmath_tasks.tasks.finqa.variant_rules import broken_relations
from finmath_tasks.tasks.finqa.variants import instantiate


def without_facts(samples: list[Sample]) -> list[Sample]:
    out = []
    for s in samples:
        metadata = dict(s.metadata or {})
        metadata["gold_inds"] = {}
        out.append(Sample(id=s.id, input=s.input, target=s.target, metadata=metadata))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("FINMATH_DATA_DIR", "../shared/data"))
    parser.add_argument("--splits", default="test,dev,train")
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--show", action="store_true", help="print each broken relation")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print("split  facts    seed  instantiated  share   broken  seconds")
    for split in args.splits.split(","):
        original = list(load_dataset(split, args.data_dir))
        by_id = {s.id: s.metadata or {} for s in original}
        for label, data in (("with", original), ("without", without_facts(original))):
            for seed in seeds:
                start = time.perf_counter()
                result = instantiate(data, seed)
                broken = {
                    v.id: found
                    for v in result.samples
                    if (found := broken_relations(by_id[v.id], v.metadata or {}))
                }
                share = len(result.samples) / result.total
                print(
                    f"{split:6} {label:8} {seed:4}  {len(result.samples):4} of {result.total:<4}"
                    f"  {share:6.1%}  {len(broken):6}  {time.perf_counter() - start:7.1f}",
                    flush=True,
                )
                if args.show:
                    for qid, found in broken.items():
                        print(f"    {qid}: {found[0]}")


if __name__ == "__main__":
    main()
