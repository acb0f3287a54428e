"""``finmath`` with a test model that counts its calls: run as a script in worker subprocesses.

``python tests/cli/calls_model.py grid ...`` is the ``finmath`` command with one more model
provider, ``finmath_calls/<name>``: it appends one line per generation to the file named by
``$FINMATH_CALLS_FILE`` (when set), waits ``$FINMATH_CALLS_DELAY`` seconds (so a test can kill
a worker mid-run), waits while the file ``$FINMATH_CALLS_GATE`` exists (so a test can hold
a run at its first call) and answers every prompt with the same reply, so runs are deterministic and
the same grid run twice gives the same tables. ``python tests/cli/calls_model.py inspect
eval ...`` is Inspect's own ``inspect`` command with that provider.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

REPLY = "Therefore, the answer is 14685.0."


@modelapi(name="finmath_calls")
class CallsModel(ModelAPI):
    """Counts calls in ``$FINMATH_CALLS_FILE``; answers after ``$FINMATH_CALLS_DELAY`` seconds."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        path = os.environ.get("FINMATH_CALLS_FILE")
        if path:
            prompt = "\n".join(m.text for m in input)
            digest = hashlib.sha256(prompt.encode()).hexdigest()[:16]
            with open(path, "a", encoding="utf-8") as f:
                f.write(f"{self.model_name} {digest}\n")
        await asyncio.sleep(float(os.environ.get("FINMATH_CALLS_DELAY", "0")))
        gate = os.environ.get("FINMATH_CALLS_GATE")
        while gate and os.path.exists(gate):  # held until the test removes the file
            await asyncio.sleep(0.05)
        return ModelOutput.from_content(self.model_name, REPLY)


if __name__ == "__main__":
    if sys.argv[1:2] == ["inspect"]:  # Inspect's own command line, with this provider
        import runpy

        sys.argv = sys.argv[1:]
        runpy.run_module("inspect_ai", run_name="__main__")  # as `python -m inspect_ai`
        sys.exit(0)
    from finmath_tasks.cli.main import main

    sys.exit(main(sys.argv[1:]))
