"""``finmath mathhay build --search tavily`` against a stub Tavily server on 127.0.0.1.

The stub (``http.server`` in a thread, started by each test) answers ``POST /search``
as the Tavily search API does and counts the requests per query, so resuming is
checked by what the server saw, not by what the build says it did.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from finmath_tasks.cli.main import main as finmath
from finmath_tasks.tasks.mathhay.build.layout import BuildError, Layout, read_json, write_json
from finmath_tasks.tasks.mathhay.build.pipeline import BuildOptions, run_build
from finmath_tasks.tasks.mathhay.build.search import SearchError, run_search

PERIOD = "January-2026-to-June-2026"
KEY = "tvly-test-key"


def page(name: str) -> str:
    """A page the default filter keeps (numbers, sentences, words), entities aside."""
    numbers = ", ".join(str(300 + 7 * i) for i in range(14))
    return (
        f"{name} Holdings quarterly report. {name} reported revenue of 411 million dollars. "
        f"Its costs were 287 million dollars. {name} employed 900 people in 13 offices. "
        f"Monthly unit sales were {numbers} units. Analysts expect margins to widen by 2.5% "
        "next year while the market for its products keeps growing at a steady pace across "
        "every region it serves and in every season of the year. The board approved a "
        "dividend and a share buyback programme after a long meeting with its advisers. "
        "Management said that demand from retail customers, industrial buyers and public "
        "agencies stayed strong through the whole period under review."
    )


class Stub:
    """Scripted replies per query: a list of (status, body, seconds to wait) used in order;
    the last one repeats. A query with no script gets one result built from its text."""

    def __init__(self) -> None:
        self.script: dict[str, list[tuple[int, Any, float]]] = {}
        self.requests: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.lock = threading.Lock()

    def reply(self, query: str) -> tuple[int, Any, float]:
        with self.lock:
            self.requests[query] += 1
            n = self.requests[query]
        steps = self.script.get(query)
        if not steps:
            return 200, {"query": query, "results": [result(query)]}, 0.0
        return steps[min(n, len(steps)) - 1]


def result(query: str, rank: int = 1) -> dict[str, Any]:
    return {
        "title": f"{query} #{rank}",
        "url": f"https://example.com/{rank}/{query.replace(' ', '-')}",
        "content": f"snippet {rank} about {query}",
        "raw_content": page(f"{query} {rank}"),
        "score": 1.0 / rank,
    }


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            state.bodies.append(body)
            state.auth.append(self.headers.get("Authorization"))
            if self.path != "/search":
                status, reply, wait = 404, {"detail": "no such path"}, 0.0
            else:
                status, reply, wait = state.reply(body["query"])
            time.sleep(wait)
            data = json.dumps(reply).encode()
            try:
                self.send_response(status)
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout test)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("TAVILY_API_KEY", KEY)
    monkeypatch.setenv("TAVILY_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/")
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


QUERIES = {
    "Retail": [
        {
            "subtopic": "Grocery prices",
            "Queries": [
                {"decomposable_query": "q1", "atomic_queries": ["alpha sales", "beta sales"]},
                {"decomposable_query": "q2", "atomic_queries": ["gamma costs", "alpha sales"]},
            ],
        }
    ]
}


def layout_with_queries(tmp_path: Path) -> Layout:
    layout = Layout(tmp_path, PERIOD)
    write_json(layout.queries, QUERIES)
    return layout


def no_sleep(waits: list[float]) -> Any:
    return waits.append


def test_the_top_result_of_each_search_is_kept(tmp_path: Path, stub: Stub) -> None:
    layout = layout_with_queries(tmp_path)
    stub.script["beta sales"] = [
        (200, {"results": [result("beta sales", 1), result("beta sales", 2)]}, 0.0)
    ]
    stub.script["gamma costs"] = [(200, {"results": []}, 0.0)]
    found = run_search(layout, QUERIES, sleep=no_sleep([]))
    collected = read_json(layout.collected, "collected")
    q1, q2 = collected["Retail"][0]["Queries"]
    top = result("beta sales", 1)
    assert q1["documents"] == [
        [page("alpha sales 1"), "snippet 1 about alpha sales"],
        [top["raw_content"], top["content"]],
    ]
    assert q1["sources"] == ["https://example.com/1/alpha-sales", top["url"]]
    assert q1["decomposable_query"] == "q1" and q1["atomic_queries"] == [
        "alpha sales",
        "beta sales",
    ]
    assert q2["documents"][0] == "" and q2["sources"][0] is None  # no result
    assert q2["documents"][1] == q1["documents"][0]  # the same query, searched once
    assert stub.requests == Counter({"alpha sales": 1, "beta sales": 1, "gamma costs": 1})
    assert set(stub.auth) == {f"Bearer {KEY}"}
    assert all(b["max_results"] == 1 and b["include_raw_content"] for b in stub.bodies)
    assert (found.atomic, found.found, found.searches, found.resumed) == (4, 3, 3, 0)


def test_rate_limited_then_answered(tmp_path: Path, stub: Stub) -> None:
    layout = layout_with_queries(tmp_path)
    ok = (200, {"results": [result("beta sales")]}, 0.0)
    stub.script["beta sales"] = [(429, {"detail": "slow down"}, 0.0), (503, {}, 0.0), ok]
    waits: list[float] = []
    found = run_search(layout, QUERIES, backoff=0.5, sleep=no_sleep(waits))
    assert stub.requests["beta sales"] == 3
    assert waits == [0.0, 1.0]  # Retry-After: 0 honoured, then backoff 0.5 * 2
    assert found.found == 4
    q1 = read_json(layout.collected, "collected")["Retail"][0]["Queries"][0]
    assert q1["documents"][1][0] == page("beta sales 1")


def test_a_persistent_500_names_the_query_keeps_finished_searches_and_resumes(
    tmp_path: Path, stub: Stub
) -> None:
    layout = layout_with_queries(tmp_path)
    stub.script["beta sales"] = [(500, {"detail": "boom"}, 0.0)]
    waits: list[float] = []
    with pytest.raises(SearchError) as e:
        run_search(layout, QUERIES, retries=3, backoff=0.1, sleep=no_sleep(waits))
    message = str(e.value)
    assert "'beta sales'" in message and "HTTP 500" in message and "4 attempt(s)" in message
    assert "documents-tavily.jsonl" in message and "run the build again" in message
    assert waits == pytest.approx([0.1, 0.2, 0.4])
    assert stub.requests == Counter({"alpha sales": 1, "beta sales": 4})
    assert not layout.collected.exists()
    kept = layout.checkpoint("documents", "tavily").read_text().splitlines()
    assert [json.loads(line)["query"] for line in kept] == ["alpha sales"]

    del stub.script["beta sales"]  # the service recovers
    found = run_search(layout, QUERIES, sleep=no_sleep([]))
    assert stub.requests == Counter({"alpha sales": 1, "beta sales": 5, "gamma costs": 1})
    assert (found.searches, found.resumed, found.found) == (2, 1, 4)
    assert layout.collected.is_file()

    # finished: a third run is refused, and with --overwrite it asks the server nothing
    with pytest.raises(BuildError, match="--overwrite"):
        run_search(layout, QUERIES)
    again = run_search(layout, QUERIES, overwrite=True)
    assert (again.searches, again.resumed) == (0, 3)
    assert sum(stub.requests.values()) == 7


def test_a_search_that_times_out(tmp_path: Path, stub: Stub) -> None:
    layout = layout_with_queries(tmp_path)
    stub.script["alpha sales"] = [(200, {"results": []}, 1.0)]
    with pytest.raises(SearchError, match=r"'alpha sales' failed after 2 attempt\(s\): timed out"):
        run_search(layout, QUERIES, timeout=0.2, retries=1, sleep=no_sleep([]))
    assert stub.requests["alpha sales"] == 2


def test_the_wait_is_bounded(tmp_path: Path, stub: Stub) -> None:
    layout = layout_with_queries(tmp_path)
    stub.script["alpha sales"] = [(502, {}, 0.0)]
    waits: list[float] = []
    with pytest.raises(SearchError, match="'alpha sales'"):
        run_search(layout, QUERIES, retries=50, backoff=1.0, max_wait=10, sleep=no_sleep(waits))
    assert sum(waits) <= 10 and waits == [1.0, 2.0, 4.0]


def test_a_refused_key_is_not_retried(tmp_path: Path, stub: Stub) -> None:
    layout = layout_with_queries(tmp_path)
    stub.script["alpha sales"] = [
        (401, {"detail": "Unauthorized: missing or invalid API key"}, 0.0)
    ]
    with pytest.raises(SearchError, match="'alpha sales': HTTP 401 \\(is TAVILY_API_KEY right"):
        run_search(layout, QUERIES, sleep=no_sleep([]))
    assert stub.requests["alpha sales"] == 1


def test_a_missing_api_key_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = layout_with_queries(tmp_path)
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(BuildError, match="TAVILY_API_KEY"):
        run_search(layout, QUERIES)
    argv = ["mathhay", "build", "--period", PERIOD, "--out", str(tmp_path)]
    assert finmath([*argv, "--stages", "documents", "--search", "tavily"]) == 2
    assert "environment variable TAVILY_API_KEY" in capsys.readouterr().err
    assert not layout.collected.exists()


def test_the_command_line_flag(
    tmp_path: Path, stub: Stub, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = layout_with_queries(tmp_path)
    argv = ["mathhay", "build", "--period", PERIOD, "--out", str(tmp_path)]
    with pytest.raises(SystemExit) as exit_:
        finmath([*argv, "--stages", "documents", "--search", "tavily", "--documents", "d"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert finmath([*argv, "--stages", "documents"]) == 2
    assert "--search tavily" in capsys.readouterr().err
    opts: dict[str, Any] = {"out": tmp_path, "period": PERIOD, "stages": ("documents",)}
    with pytest.raises(BuildError, match="--documents and --search are exclusive"):
        run_build(BuildOptions(**opts, documents=tmp_path, search="tavily"))
    with pytest.raises(BuildError, match="--search 'bing': choose among tavily"):
        run_build(BuildOptions(**opts, search="bing"))
    assert not stub.requests

    # the searched pages go where the local-folder path puts them: the filter reads them
    # (one query's texts are kept once; two queries finding one page keep it twice, as with
    # a local folder)
    search = ["--search", "tavily", "--min-entities", "0"]
    assert finmath([*argv, "--stages", "documents,filter", *search]) == 0
    out = capsys.readouterr().out
    assert "Tavily: 4 of 4 atomic queries found one (3 searches, 0 reused)" in out
    pool = read_json(layout.pool, "pool")
    assert [d["Document"] for d in pool] == [
        page("alpha sales 1"),
        page("beta sales 1"),
        page("gamma costs 1"),
        page("alpha sales 1"),
    ]
