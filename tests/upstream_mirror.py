"""A local stand-in for raw.githubusercontent.com: serves the benchmark files of the
shared data folder under ``/<repository>/<commit>/<path>``, as the tasks ask for them.

Only files whose bytes have the pinned git blob id are served (FinQA's copies are
subsets, so they are not); ``overrides`` serves other bytes under an upstream path
(a corrupted file, a crafted one) and ``stall`` sends half of a file and then hangs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from finmath_tasks.loading import file_blob_id

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = sorted((REPO_ROOT / "src" / "finmath_tasks" / "tasks").glob("*/upstream.tsv"))

LOCAL_FOLDER = {
    "yale-nlp/FinanceMath": ("data/", "financemath/"),
    "NExTplusplus/TAT-QA": ("dataset_raw/", "tatqa/"),
    "SgfdDttt/sara": ("", "sara/"),
    "SalesforceAIResearch/MathHay": ("outputs/data/", "mathhay/"),
    "czyssrs/FinQA": ("dataset/", "finqa/"),
}
"""Repository -> (path prefix upstream, folder in the shared data that holds those files)."""


def manifest_rows() -> list[dict[str, str]]:
    rows = []
    for manifest in MANIFESTS:
        lines = [
            line.split("\t")
            for line in manifest.read_text().splitlines()
            if line and not line.startswith("#")
        ]
        rows += [dict(zip(lines[0], line, strict=True)) for line in lines[1:]]
    return rows


def local_copy(data_dir: Path, repository: str, path: str) -> Path | None:
    prefix, folder = LOCAL_FOLDER[repository]
    if not path.startswith(prefix):
        return None
    candidate = data_dir / folder / path[len(prefix) :]
    return candidate if candidate.is_file() else None


@dataclass
class Mirror:
    data_dir: Path
    overrides: dict[str, bytes] = field(default_factory=dict)
    """URL path (``/<repository>/<commit>/<path>``) -> bytes served instead."""
    stall: set[str] = field(default_factory=set)
    """URL paths answered with half their bytes and then no more (a download cut off)."""
    requests: list[str] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    url: str = ""

    def __post_init__(self) -> None:
        for row in manifest_rows():
            local = local_copy(self.data_dir, row["repository"], row["path"])
            if local is not None and file_blob_id(local) == row["git_blob"]:
                self.files[f"/{row['repository']}/{row['commit']}/{row['path']}"] = local

    def body(self, url_path: str) -> bytes | None:
        if url_path in self.overrides:
            return self.overrides[url_path]
        local = self.files.get(url_path)
        return local.read_bytes() if local is not None else None


def _handler(mirror: Mirror) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            from urllib.parse import unquote

            path = unquote(self.path)
            mirror.requests.append(path)
            body = mirror.body(path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if path in mirror.stall:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                time.sleep(3600)
                return
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@contextmanager
def serving(
    data_dir: Path,
    overrides: Mapping[str, bytes] | None = None,
    stall: set[str] | None = None,
) -> Iterator[Mirror]:
    """A mirror of the upstream files on 127.0.0.1 (its base URL in ``.url``) while inside."""
    mirror = Mirror(data_dir, dict(overrides or {}), set(stall or ()))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(mirror))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    mirror.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield mirror
    finally:
        server.shutdown()
        server.server_close()
