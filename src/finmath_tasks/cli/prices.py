"""Dollar prices per million tokens, for the cost columns of ``finmath grid --dry-run`` and
``finmath report``.

The built-in table: list prices (standard tier, prompts up to 128K tokens where
the provider charges more above) of the models the papers evaluated that are sold
by API, and a few current ones, with the batch price (``--batch``: the providers'
batch APIs) where the same pages give one (:data:`BATCH`; OpenAI's and Anthropic's
batch prices are half the list prices; none is recorded for Google's models nor for
o1-preview: "batch price unknown"). Recorded on PRICES_DATE from the providers' public
pricing pages (PRICES_SOURCE) and not re-checked since: prices change, so check them,
and override them with ``--price IN/OUT`` (one price for every model of the command,
taken as the price of the requests as sent, batched or not) or a JSON file named by
``$FINMATH_PRICES``: ``{"model name or prefix": [in, out]}`` or
``{"...": {"input": in, "output": out, "cached_input": c, "batch": [in, out]}}``.

A model is matched by its name without the provider route
(``openai/gpt-4o-2024-08-06`` -> ``gpt-4o-2024-08-06``), the longest table key it
starts with winning (``gpt-4o-mini`` before ``gpt-4o``). Open-weight models
(Llama, Mistral, Qwen, ...) and local servers have no price: give one.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

PRICES_DATE = "2025-06-01"
PRICES_SOURCE = (
    "openai.com/api/pricing, anthropic.com/pricing, ai.google.dev/gemini-api/docs/pricing"
)
PRICES_ENV = "FINMATH_PRICES"


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens."""

    input: float
    output: float
    cached_input: float | None = None
    """Price of cache-read input tokens (None: the input price)."""
    batch: Price | None = None
    """The price through the provider's batch API (None: not known)."""

    @property
    def cache_read(self) -> float:
        return self.input if self.cached_input is None else self.cached_input


BUILT_IN: dict[str, Price] = {
    # OpenAI
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4-turbo": Price(10.00, 30.00),
    "gpt-4": Price(30.00, 60.00),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    "o1-preview": Price(15.00, 60.00, 7.50),
    "o1-mini": Price(1.10, 4.40, 0.55),
    "o1": Price(15.00, 60.00, 7.50),
    "o3-mini": Price(1.10, 4.40, 0.55),
    # Anthropic (cache reads at a tenth of the input price)
    "claude-3-5-sonnet": Price(3.00, 15.00, 0.30),
    "claude-3-7-sonnet": Price(3.00, 15.00, 0.30),
    "claude-3-5-haiku": Price(0.80, 4.00, 0.08),
    "claude-3-opus": Price(15.00, 75.00, 1.50),
    "claude-3-haiku": Price(0.25, 1.25, 0.03),
    # Google (prompts up to 128K tokens)
    "gemini-1.5-pro": Price(1.25, 5.00),
    "gemini-1.5-flash": Price(0.075, 0.30),
    "gemini-2.0-flash": Price(0.10, 0.40),
}

BATCH: dict[str, Price] = {
    # OpenAI Batch API: half the list input and output prices (no cached-input price)
    "gpt-4o-mini": Price(0.075, 0.30),
    "gpt-4o": Price(1.25, 5.00),
    "gpt-4.1-mini": Price(0.20, 0.80),
    "gpt-4.1": Price(1.00, 4.00),
    "gpt-4-turbo": Price(5.00, 15.00),
    "gpt-4": Price(15.00, 30.00),
    "gpt-3.5-turbo": Price(0.25, 0.75),
    "o1-mini": Price(0.55, 2.20),
    "o1": Price(7.50, 30.00),
    "o3-mini": Price(0.55, 2.20),
    # Anthropic Message Batches: half the list prices, cache reads included
    "claude-3-5-sonnet": Price(1.50, 7.50, 0.15),
    "claude-3-7-sonnet": Price(1.50, 7.50, 0.15),
    "claude-3-5-haiku": Price(0.40, 2.00, 0.04),
    "claude-3-opus": Price(7.50, 37.50, 0.75),
    "claude-3-haiku": Price(0.125, 0.625, 0.015),
}
"""Batch prices of the built-in table's keys (looked up by the model's key there, so
``o1-preview`` does not take ``o1``'s)."""

BUILT_IN = {key: replace(price, batch=BATCH.get(key)) for key, price in BUILT_IN.items()}


class PriceError(ValueError):
    """A price given on the command line or in $FINMATH_PRICES is not usable."""


_NUMBER = r"\$?\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_PRICE = re.compile(rf"^\s*{_NUMBER}\s*/\s*{_NUMBER}\s*$")


def parse_price(text: str) -> Price:
    """``IN/OUT`` dollars per million input/output tokens, e.g. ``2.5/10``."""
    match = _PRICE.match(text)
    if not match:
        raise PriceError(
            f"--price {text!r}: expected IN/OUT, dollars per million input and output "
            "tokens, e.g. --price 2.5/10"
        )
    return Price(float(match.group(1)), float(match.group(2)))


def _price_entry(name: str, value: object, where: str) -> Price:
    if isinstance(value, list | tuple) and len(value) == 2:
        value = {"input": value[0], "output": value[1]}
    if not isinstance(value, dict) or not {"input", "output"} <= set(value):
        raise PriceError(f"{where}: {name!r}: expected [in, out] or {{'input':, 'output':}}")
    batch = value.get("batch")
    numbers = {}
    for key in ("input", "output", "cached_input"):
        item = value.get(key)
        if item is None and key == "cached_input":
            continue
        if isinstance(item, bool) or not isinstance(item, int | float) or not item >= 0:
            raise PriceError(f"{where}: {name!r}: {key} must be a number >= 0, got {item!r}")
        numbers[key] = float(item)
    return Price(
        numbers["input"],
        numbers["output"],
        numbers.get("cached_input"),
        _price_entry(name, batch, f"{where} (batch)") if batch is not None else None,
    )


def load_overrides(path: str | None = None) -> dict[str, Price]:
    """The prices of ``$FINMATH_PRICES`` (or ``path``); {} when none is named."""
    path = path if path is not None else os.environ.get(PRICES_ENV)
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PriceError(f"${PRICES_ENV}={path}: cannot read prices ({e})") from e
    if not isinstance(data, dict):
        raise PriceError(f"${PRICES_ENV}={path}: expected a JSON object model -> price")
    return {str(k): _price_entry(str(k), v, f"${PRICES_ENV}={path}") for k, v in data.items()}


def batch_price(price: Price | None, source: str) -> tuple[Price | None, str]:
    """The price of requests sent through the provider's batch API (``--batch``), and
    where it comes from; the list price, said so, where no batch price is known."""
    if price is None:
        return None, source
    if source == "--price":
        return price, "--price, taken as the batch price"
    if price.batch is not None:
        return price.batch, f"batch price, {source}"
    return price, f"batch price unknown: list price shown, {source}"


def _bare(model: str) -> str:
    return model.rsplit("/", 1)[-1].lower()


def _lookup(model: str, table: dict[str, Price]) -> str | None:
    """The table key for ``model``: an exact full name, else the longest prefix of its bare name."""
    if model in table:
        return model
    bare = _bare(model)
    keys = [k for k in table if bare.startswith(_bare(k))]
    return max(keys, key=len) if keys else None


def price_for(model: str, overrides: dict[str, Price] | None = None) -> tuple[Price | None, str]:
    """The model's price and where it comes from (for the table's caption)."""
    extra = load_overrides() if overrides is None else overrides
    key = _lookup(model, extra)
    if key is not None:
        return extra[key], f"${PRICES_ENV}: {key}"
    key = _lookup(model, BUILT_IN)
    if key is not None:
        return BUILT_IN[key], f"built-in {key}, list price of {PRICES_DATE}"
    return None, "not in the built-in table"
