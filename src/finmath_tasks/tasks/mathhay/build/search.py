"""The documents stage over the Tavily search API (``--search tavily``): the reference's way.

One search per atomic query, its top result kept, as the reference does. The
request is ``POST <base>/search`` with ``{"query", "max_results": 1,
"include_raw_content": true}`` and the key as ``Authorization: Bearer``; the
key comes from ``TAVILY_API_KEY`` and the base URL from ``TAVILY_BASE_URL``
(default ``https://api.tavily.com``). A result's text pieces are its page text
(``raw_content``) then its snippet (``content``), the non-empty ones in that order
(the filter keeps the first piece that passes); ``sources`` records its URL.
The reference's own search wrapper is published only as a compiled file, so
which fields it kept is not known; the page text comes first because the filter
needs whole documents (a snippet rarely has 100 words).

A 429, a 5xx, a timeout or a broken connection is retried with exponential
backoff (``Retry-After`` honoured), a bounded number of times and within a
bounded total wait; then the stage stops with an error naming the query. Each
finished search is appended at once to ``<period>/.build/documents-tavily.jsonl``
(keyed by the query), so a rerun asks only for the searches that did not finish.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from finmath_tasks.tasks.mathhay.build.calls import Checkpoint, digest, read_checkpoint
from finmath_tasks.tasks.mathhay.build.documents import collect
from finmath_tasks.tasks.mathhay.build.layout import BuildError, Layout, write_json

SEARCHES = ("tavily",)
KEY_VARIABLE = "TAVILY_API_KEY"
URL_VARIABLE = "TAVILY_BASE_URL"
DEFAULT_BASE_URL = "https://api.tavily.com"
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 5
DEFAULT_BACKOFF = 1.0
MAX_WAIT = 120.0
"""Total seconds of backoff one search may wait before it gives up."""
CHECKPOINT_KEY = "tavily"


def api_key() -> str:
    key = os.environ.get(KEY_VARIABLE, "").strip()
    if not key:
        raise BuildError(
            f"--search tavily needs the Tavily API key in the environment variable {KEY_VARIABLE}"
        )
    return key


def base_url() -> str:
    return (os.environ.get(URL_VARIABLE) or DEFAULT_BASE_URL).rstrip("/")


@dataclass
class SearchResult:
    queries: int = 0
    atomic: int = 0
    found: int = 0
    searches: int = 0
    """Searches made in this run."""
    resumed: int = 0
    """Searches found finished in the checkpoint (not made again)."""


class SearchError(BuildError):
    pass


def _top_result(query: str, payload: Any) -> dict[str, Any]:
    """``{"pieces": [...], "url": ...}`` of the top result (no pieces when none)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("results", []), list):
        raise SearchError(f"Tavily search {query!r}: the reply has no list of results")
    results = [r for r in payload.get("results", []) if isinstance(r, dict)]
    if not results:
        return {"pieces": [], "url": None}
    top = results[0]
    pieces: list[str] = []
    for name in ("raw_content", "content"):
        text = top.get(name)
        if isinstance(text, str) and text.strip() and text not in pieces:
            pieces.append(text)
    url = top.get("url")
    return {"pieces": pieces, "url": url if isinstance(url, str) else None}


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


def search_one(
    client: httpx.Client,
    query: str,
    *,
    key: str,
    url: str,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    max_wait: float = MAX_WAIT,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """The top result of one search; retried on 429, 5xx and timeouts, then SearchError."""
    body = {"query": query, "max_results": 1, "include_raw_content": True}
    headers = {"Authorization": f"Bearer {key}"}
    waited = 0.0
    attempt = 0
    while True:
        delay: float | None = None
        try:
            response = client.post(f"{url}/search", json=body, headers=headers)
        except httpx.TimeoutException:
            problem = "timed out"
        except httpx.TransportError as e:
            problem = f"connection failed ({type(e).__name__}: {e})"
        else:
            status = response.status_code
            if status == 200:
                try:
                    payload = response.json()
                except ValueError:
                    raise SearchError(f"Tavily search {query!r}: the reply is not JSON") from None
                return _top_result(query, payload)
            if status != 429 and status < 500:
                detail = response.text[:200].strip()
                raise SearchError(
                    f"Tavily search {query!r}: HTTP {status}"
                    + (" (is TAVILY_API_KEY right?)" if status in (401, 403) else "")
                    + (f": {detail}" if detail else "")
                )
            problem = f"HTTP {status}"
            delay = _retry_after(response)
        attempt += 1
        pause = min(delay if delay is not None else backoff * 2 ** (attempt - 1), max_wait)
        if attempt > retries or waited + pause > max_wait:
            raise SearchError(
                f"Tavily search {query!r} failed after {attempt} attempt(s): {problem}"
            )
        sleep(pause)
        waited += pause


def run_search(
    layout: Layout,
    queries: dict[str, Any],
    *,
    overwrite: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    max_wait: float = MAX_WAIT,
    sleep: Callable[[float], None] = time.sleep,
) -> SearchResult:
    """Write ``collected_documents.json`` from one Tavily search per atomic query."""
    layout.check_writable(layout.collected, overwrite)
    key, url = api_key(), base_url()
    path = layout.checkpoint("documents", CHECKPOINT_KEY)
    done = {k: r for k, r in read_checkpoint(path).items() if isinstance(r.get("value"), dict)}
    checkpoint = Checkpoint(path)
    result = SearchResult()
    counted: set[str] = set()
    with httpx.Client(timeout=timeout) as client:

        def find(atomic: str) -> tuple[list[str] | None, str | None]:
            k = digest("tavily", atomic)
            record = done.get(k)
            if record is None:
                try:
                    value = search_one(
                        client,
                        atomic,
                        key=key,
                        url=url,
                        retries=retries,
                        backoff=backoff,
                        max_wait=max_wait,
                        sleep=sleep,
                    )
                except SearchError as e:
                    raise SearchError(
                        f"{e}; the {len(done)} finished search(es) are kept in "
                        f"{path}: run the build again to resume"
                    ) from None
                record = {"key": k, "query": atomic, "value": value}
                checkpoint.add(record)
                done[k] = record
                result.searches += 1
            elif k not in counted:
                result.resumed += 1
            counted.add(k)
            value = record["value"]
            return value.get("pieces") or None, value.get("url")

        out, result.atomic, result.found, result.queries = collect(queries, find)
    write_json(layout.collected, out)
    return result
