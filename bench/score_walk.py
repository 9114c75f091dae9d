"""The walk of one `POST /score` through the gateway: the modules its calls enter, in order, from the
outermost middleware to the reward function (docs/gateway.md "One /score request, module by module").

    .venv/bin/python -m bench.score_walk

One in-process app (`create_app`, its lifespan run by hand), one async drop-in function, one warm-up
request, then one request under `sys.setprofile`. A stop is a run of calls in one module; a re-entry is a
stop in a module already passed. Not a timing: nothing here depends on the machine's load.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig

GATEWAY = "rewardfleet.services.gateway."
FUNCTION = (
    "async def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 1.0\n"
)


async def walk(folder: Path) -> list[str]:
    (folder / "walked.py").write_text(FUNCTION)
    app = create_app(GatewayConfig(builtin_package=None, reward_fns_dirs=[folder], workers=1))
    body = {"data_source": "x", "solution_str": "ab", "ground_truth": "cd", "reward_fn": "walked"}
    seen: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if event == "call" and module.startswith("rewardfleet") and (not seen or seen[-1] != module):
            seen.append(module)

    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            (await client.post("/score", json=body)).raise_for_status()  # warm: first-call imports and caches
            sys.setprofile(profile)
            try:
                answer = await client.post("/score", json=body)
            finally:
                sys.setprofile(None)
            answer.raise_for_status()
    end = next(i for i, module in enumerate(seen) if module.endswith("walked"))
    return [_short(module) for module in seen[: end + 1]]


def _short(module: str) -> str:
    if module.startswith(GATEWAY):
        return module[len(GATEWAY) :]
    if module.startswith("rewardfleet.services."):
        return module[len("rewardfleet.services.") :]
    return "(the function)" if module.endswith("walked") else module


def _package(stop: str) -> str:
    if stop.startswith("common.") or stop == "(the function)":
        return stop.split(".")[0]
    return stop.split(".")[0] if "." in stop else "gateway"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stops = asyncio.run(walk(Path(tmp)))
    summary = {
        "stops": len(stops),
        "modules": len(set(stops)),
        "re_entries": len(stops) - len(set(stops)),
        "packages": sorted({_package(s) for s in stops}),
        "walk": stops,
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
