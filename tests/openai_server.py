"""An OpenAI-compatible chat endpoint on loopback that answers with a script: the real
client code of Inspect's ``openai-api/<name>/<model>`` provider and of lm_eval's
``local-chat-completions`` talks to it as it would to vLLM or llama.cpp."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any


@dataclass
class ScriptedServer:
    """An OpenAI-compatible chat endpoint on loopback answering every request with
    ``reply(messages)``; ``requests`` holds what it was sent (the calls a model was paid)."""

    reply: Callable[[Any], str]
    """Given the chat messages (``/v1/chat/completions``) or the prompt, text or token ids
    (``/v1/completions``)."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""


@contextmanager
def scripted_server(
    reply: Callable[[Any], str] = lambda messages: "",
) -> Iterator[ScriptedServer]:
    served = ScriptedServer(reply)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            served.requests.append(body)
            if "prompt" in body:  # /v1/completions (lm_eval's local-completions)
                answer = served.reply(body["prompt"])
                data = json.dumps(
                    {
                        "id": "scripted",
                        "object": "text_completion",
                        "created": 0,
                        "model": body.get("model", "scripted"),
                        "choices": [{"index": 0, "text": answer, "finish_reason": "stop"}],
                    }
                ).encode()
            else:
                data = self._chat(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _chat(self, body: dict[str, Any]) -> bytes:
            return json.dumps(
                {
                    "id": "scripted",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                "content": served.reply(body["messages"]),
                            },
                            "finish_reason": "stop",
                        }
                    ],
                }
            ).encode()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    served.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
