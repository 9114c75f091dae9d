"""Where a tool call's CPU goes in the gateway: the app alone, called as ASGI in-process (no sockets, no
client), against the bare FastAPI + dict app of bench/environments.py, in the same run.

    .venv/bin/python -m bench.tool_call_walk [--calls 5000] [--profile]

Three targets, each `--calls` sequential calls of the counter's `increment_counter` on one session: the
bare app, NeMo Gym's `POST /<tool>` as a server's own port sees it (`AtRoot`, cookie) and the native
`POST /sessions/call` (token in the body). Prints microseconds a call and the ratio to the bare app;
`--profile` adds, for each gateway target, the inclusive time of each layer a call passes (cProfile's
cumulative time of the layer's entry point, per call), outermost first, so one layer's own cost is its row
minus the next one's. Timings in-process are steadier than over HTTP on a busy machine, but still timings:
run it several times.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.environments import bare_app
from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.routes.nemo_gym import AtRoot

ASGI = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
PER_SESSION = 900
BARE, NEMO, NATIVE = "bare FastAPI + dict", "NeMo Gym POST /<tool> (own port)", "POST /sessions/call"
KEY = "walk-key-0123456789abcdef0123456789"
# (label, function name as cProfile shows it, file suffix): the entry point of each layer, outermost first
LAYERS = [
    ("AtRoot (a server's own port)", "__call__", "routes/nemo_gym.py"),
    ("GatewayApp / FastAPI.__call__", "__call__", "fastapi/applications.py"),
    ("Starlette.__call__", "__call__", "starlette/applications.py"),
    ("ServerErrorMiddleware", "__call__", "starlette/middleware/errors.py"),
    ("PathKey", "__call__", "tenants/path_key.py"),
    ("RequestMetrics", "__call__", "common/request_metrics.py"),
    ("ApiKeyMiddleware", "__call__", "common/api_keys.py"),
    ("AdmissionMiddleware", "__call__", "admission/admission.py"),
    ("RequestBodyLimits", "__call__", "common/body_limits.py"),
    ("fast path (hot_path/)", "__call__", "hot_path/tool_call_asgi.py"),
    ("ScoreFastPath", "__call__", "hot_path/score_asgi.py"),
    ("ExceptionMiddleware", "__call__", "starlette/middleware/exceptions.py"),
    ("Router.__call__ (matching)", "app", "starlette/routing.py"),
    ("request_response + dependencies", "app", "fastapi/routing.py"),
    ("solve_dependencies", "solve_dependencies", "fastapi/dependencies/utils.py"),
    ("the route's handler", "call_tool", "routes/nemo_gym_sessions.py"),
    ("the route's handler", "call", "routes/sessions.py"),
    ("parse_json_body", "parse_json_body", "common/json_body.py"),
    ("Sessions.call", "call", "environments/sessions.py"),
    ("the tool", "increment_counter", "example_session_state_mgmt.py"),
]


class Answer:
    def __init__(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = b""

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
        else:
            self.body += message.get("body", b"")

    def cookie(self) -> str:
        return next(v.decode().split(";")[0] for k, v in self.headers if k.lower() == b"set-cookie")


async def post(app: ASGI, path: str, body: Any, headers: dict[str, str]) -> Answer:
    raw = json.dumps(body).encode()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"walk"), (b"content-type", b"application/json")]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        + [(b"content-length", str(len(raw)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "state": {},
    }
    answer = Answer()
    await app(scope, receive, answer)
    if answer.status != 200:
        raise RuntimeError(f"{path}: {answer.status} {answer.body[:300]!r}")
    return answer


Call = Callable[[], Awaitable[Answer]]
SLICES = 9


async def timed(
    targets: dict[str, Call], calls: int, profiles: dict[str, cProfile.Profile]
) -> dict[str, float]:
    """Microseconds a call of each target: the targets take turns, one slice each, `SLICES` rounds (so a
    change of the machine's load hits them alike); the median of each target's slices."""
    for call in targets.values():
        for _ in range(200):
            await call()
    slices: dict[str, list[float]] = {label: [] for label in targets}
    per_slice = max(1, calls // SLICES)
    for _ in range(SLICES):
        for label, call in targets.items():
            profile = profiles.get(label)
            began = time.perf_counter()
            if profile is not None:
                profile.enable()
            for _ in range(per_slice):
                await call()
            if profile is not None:
                profile.disable()
            slices[label].append((time.perf_counter() - began) / per_slice * 1e6)
    return {label: statistics.median(times) for label, times in slices.items()}


async def run(calls: int, keys: bool, profiles: dict[str, cProfile.Profile]) -> dict[str, float]:
    bare = bare_app()
    config: dict[str, Any] = {
        "builtin_package": None,
        "nemo_gym": {"servers": {"counter": {"environment": "example_session_state_mgmt"}}},
    }
    headers = {"authorization": f"Bearer {KEY}"} if keys else {}
    if keys:
        config["auth"] = {"api_keys": [KEY]}
    app = create_app(GatewayConfig.model_validate(config))
    port = AtRoot(app, "/nemo_gym/counter")
    sessions = (calls + 200) // PER_SESSION + 1  # a session makes at most 1000 calls (its limits)
    async with app.router.lifespan_context(app):
        cookie = (await post(bare, "/seed_session", {"initial_count": 0}, {})).cookie()
        cookies = [
            (await post(port, "/seed_session", {"initial_count": 0}, headers)).cookie()
            for _ in range(sessions)
        ]
        native = []
        for _ in range(sessions):
            opened = await post(app, "/sessions/open", {"env": "example_session_state_mgmt"}, headers)
            call = {
                "token": json.loads(opened.body)["token"],
                "tool": "increment_counter",
                "arguments": {"count": 1},
            }
            native.append((app, "/sessions/call", call, headers))
        nemo = [(port, "/increment_counter", {"count": 1}, {**headers, "cookie": c}) for c in cookies]
        targets: dict[str, Call] = {
            BARE: lambda: post(bare, "/increment_counter", {"count": 1}, {"cookie": cookie}),
            NEMO: Rotating(nemo),
            NATIVE: Rotating(native),
        }
        return await timed(targets, calls, profiles)


class Rotating:
    """The same call on each session in turn, PER_SESSION calls each."""

    def __init__(self, calls: list[tuple[ASGI, str, Any, dict[str, str]]]) -> None:
        self.calls = calls
        self.done = 0

    def __call__(self) -> Awaitable[Answer]:
        app, path, body, headers = self.calls[self.done // PER_SESSION]
        self.done += 1
        return post(app, path, body, headers)


def layers(profile: cProfile.Profile, calls: int) -> list[tuple[str, float]]:
    stats = pstats.Stats(profile)
    rows = []
    for label, name, suffix in LAYERS:
        total = sum(
            row[3]
            for (file, _, func), row in stats.stats.items()  # type: ignore[attr-defined]
            if func == name and file.endswith(suffix)
        )
        if total:
            rows.append((label, total / calls * 1e6))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--keys", action="store_true", help="with an API key (auth on)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    profiles = {NEMO: cProfile.Profile(), NATIVE: cProfile.Profile()} if args.profile else {}
    rows = asyncio.run(run(args.calls, args.keys, profiles))
    base = rows[BARE]
    print(f"{'target (in-process ASGI)':34} {'us/call':>8} {'/bare':>6}")
    for label, us in rows.items():
        print(f"{label:34} {us:8.1f} {us / base:6.2f}")
    done = max(1, args.calls // SLICES) * SLICES
    for name, profile in profiles.items():
        print(f"\n{name}: inclusive us a call under cProfile (its overhead inflates every row)")
        for label, us in layers(profile, done):
            print(f"  {label:36} {us:8.1f}")


if __name__ == "__main__":
    main()
