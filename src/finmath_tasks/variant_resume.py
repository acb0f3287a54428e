"""A resumed fresh-variant run keeps only samples of the variant it rebuilds.

``inspect eval-retry`` (and an eval-set resume) rebuilds the task from the log's task
arguments and keeps every sample the log holds without an error. For a fresh variant
(``-T variant=fresh -T variant_seed=N``) the rebuilt questions are drawn again: after an
upgrade whose rules draw other numbers (or with other data under the same seed), the
kept samples are another draw's, and Inspect would finish ``success`` with both draws in
one log under the new draw's data fingerprint.

:func:`refuse_other_draws` sees the log Inspect resumes from and the dataset it rebuilt,
before any sample is kept or run, and refuses in one line (a ``UsageError``, which
Inspect prints without a traceback; no log is written) when

- the log's data fingerprint (the variant's provenance: derived from the original data's
  fingerprint, the seed and the benchmark's rules version) is not the rebuilt one's, or
- a sample the log keeps (no error) is not the rebuilt sample of its id: another target,
  input, or variant record (the values drawn, in the sample's ``variant`` metadata).

A genuine retry (same data, same rules) finds nothing to refuse and resumes as before;
runs on the original questions are not looked at. Inspect hands the pair to us through
the private seam (``_inspect_private.check_prior_samples``), installed by
:func:`guard` when a task builds a fresh variant.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from finmath_tasks.errors import UsageError
from finmath_tasks.loading import PROVENANCE_KEY, dataset_provenance

VARIANT_KEY = "variant"
"""The sample metadata key of a variant's record: ``variants.VARIANT_KEY`` (not imported:
``variants`` imports this module; tests/test_variant_resume.py checks the two are equal)."""

logger = logging.getLogger(__name__)

RERUN = "run the setting again as a new run (inspect eval; an eval set: another log dir)"


class OtherDraw(UsageError):
    """A resumed fresh-variant log whose kept samples are not the variant rebuilt now."""


def guard() -> None:
    """Have every resume of this process (eval-retry, an eval-set resume) checked by
    :func:`refuse_other_draws` (once; a no-op where Inspect lacks the seam: a warning)."""
    from finmath_tasks._inspect_private import check_prior_samples

    check_prior_samples(refuse_other_draws)


def _plain(value: Any) -> Any:
    """``value`` as its JSON form reads back (tuples as lists; messages as role and text),
    so a sample rebuilt in memory compares equal with the one a log holds."""
    if isinstance(value, list | tuple) and value and hasattr(value[0], "role"):
        return [[getattr(m, "role", None), getattr(m, "text", str(m))] for m in value]
    return json.loads(json.dumps(value, default=str, sort_keys=True))


def _short(value: Any, width: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(_plain(value))
    text = " ".join(text.split())
    return repr(text if len(text) <= width else text[: width - 3] + "...")


def sample_difference(kept: Any, rebuilt: Any) -> str | None:
    """How the ``kept`` sample (from a log: an ``EvalSample`` or its summary) differs from
    the ``rebuilt`` one of its id (target, input, then the variant record), None: not."""
    if _plain(kept.target) != _plain(rebuilt.target):
        return f"target {_short(kept.target)} in the log, {_short(rebuilt.target)} now"
    if _plain(kept.input) != _plain(rebuilt.input):
        return f"input {_short(kept.input)} in the log, {_short(rebuilt.input)} now"
    logged = (kept.metadata or {}).get(VARIANT_KEY)
    drawn = (rebuilt.metadata or {}).get(VARIANT_KEY)
    # a summary drops metadata over 1 kB: compare the record where the log has it
    if logged is not None and _plain(logged) != _plain(drawn):
        return f"variant record {_short(logged)} in the log, {_short(drawn)} now"
    return None


def kept_differences(kept: Iterable[Any], rebuilt: Iterable[Any]) -> tuple[int, int, list[str]]:
    """(samples kept, of them not the rebuilt sample of their id, the first such
    difference as ``id: how``). A kept sample is one without an error (Inspect reruns the
    others); one whose id the rebuilt dataset lacks is never kept, so never compared."""
    by_id = {str(sample.id): sample for sample in rebuilt}
    count, found = 0, []
    for sample in kept:
        if sample.error is not None or getattr(sample, "invalidation", None) is not None:
            continue
        match = by_id.get(str(sample.id))
        if match is None:
            continue
        count += 1
        difference = sample_difference(sample, match)
        if difference is not None:
            found.append(f"{sample.id}: {difference}")
    return count, len(found), found[:1]


def _variant(provenance: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    variant = (provenance or {}).get("variant")
    return variant if isinstance(variant, Mapping) else None


def _fingerprint(provenance: Mapping[str, Any] | None) -> str:
    variant = _variant(provenance) or {}
    rules = variant.get("rules")
    fingerprint = str((provenance or {}).get("fingerprint") or "none")
    return fingerprint + (f" (rules {rules})" if rules else " (the first rules)")


def _prior_samples(prior: Any, prior_info: Any) -> list[Any]:
    """The samples of the log resumed from: in memory (eval-retry reads the whole log),
    else their summaries from the file (an eval-set resume reads the header only)."""
    if prior.samples is not None:
        return list(prior.samples)
    if prior_info is None:
        return []
    from inspect_ai.log import read_eval_log_sample_summaries

    try:
        return list(read_eval_log_sample_summaries(prior_info.name))
    except (OSError, ValueError, KeyError):
        return []  # Inspect reads the samples again and finds none to keep


def refuse_other_draws(prior: Any, prior_info: Any, dataset: Any) -> None:
    """Refuse, in one line, resuming the fresh-variant log ``prior`` (an ``EvalLog``, its
    ``EvalLogInfo`` or None) with the rebuilt ``dataset`` when its data fingerprint or a
    sample it keeps is not the rebuilt variant's; nothing for a run on the original
    questions."""
    args = dict(prior.eval.task_args or {})
    rebuilt = dataset_provenance(dataset)
    if _variant(rebuilt) is None and args.get("variant") != "fresh":
        return
    task = str(prior.eval.task).split("/")[-1]
    seed = (_variant(rebuilt) or {}).get("seed", args.get("variant_seed"))
    where = str(getattr(prior_info, "name", None) or prior.location or "the log").split("/")[-1]
    head = f"{task} fresh seed {seed}: cannot resume {where}"
    logged = (prior.eval.metadata or {}).get(PROVENANCE_KEY)
    logged = logged if isinstance(logged, Mapping) else None
    if (
        logged is not None
        and rebuilt is not None
        and logged.get("fingerprint") != rebuilt.get("fingerprint")
    ):
        raise OtherDraw(
            f"{head}: its variant's data fingerprint is {_fingerprint(logged)}, the "
            f"variant built now is {_fingerprint(rebuilt)}, so the samples it keeps are "
            f"another draw's; {RERUN}"
        )
    kept, differ, first = kept_differences(_prior_samples(prior, prior_info), dataset)
    if differ:
        raise OtherDraw(
            f"{head}: {differ} of the {kept} samples it keeps are not the variant built now "
            f"({first[0]}), drawn by other rules or data; {RERUN}"
        )
    logger.debug("%s: its %d kept samples are the variant built now", head, kept)
