"""`python -m tests.sglang_standin`: the stand-in as a process, configured like an SGLang server."""

from __future__ import annotations

import argparse

import uvicorn

from tests.sglang_standin.app import create_app
from tests.sglang_standin.state import DEFAULT_CANNED_TEXT, StandinConfig


def parse_args(argv: list[str] | None = None) -> tuple[StandinConfig, str]:
    parser = argparse.ArgumentParser(
        prog="python -m tests.sglang_standin", description="A stand-in for a GPU SGLang server."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=["judge", "reward", "encoder"], default="judge")
    parser.add_argument("--replica-id", default="0")
    parser.add_argument("--canned-text", default=DEFAULT_CANNED_TEXT)
    parser.add_argument("--model-path", default="")
    parser.add_argument("--fail-rate", type=float, default=0.0, help="fraction of work requests that fail")
    parser.add_argument("--fail-status", type=int, default=503)
    parser.add_argument("--startup-delay-s", type=float, default=0.0, help="/health answers 503 until then")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="added latency per work request")
    parser.add_argument("--health-delay-s", type=float, default=1.0, help="/health answers after this long")
    parser.add_argument("--dim", type=int, default=64, help="embedding size in encoder mode")
    parser.add_argument("--seed", type=int, default=0, help="seed of the failure injection")
    args = parser.parse_args(argv)
    if not 0.0 <= args.fail_rate <= 1.0:
        parser.error("--fail-rate must be within [0, 1]")
    config = StandinConfig(
        mode=args.mode,
        replica_id=args.replica_id,
        canned_text=args.canned_text,
        model_path=args.model_path,
        fail_rate=args.fail_rate,
        fail_status=args.fail_status,
        startup_delay_s=args.startup_delay_s,
        delay_ms=args.delay_ms,
        dim=args.dim,
        seed=args.seed,
        port=args.port,
        health_delay_s=args.health_delay_s,
    )
    return config, args.host


def main(argv: list[str] | None = None) -> None:
    config, host = parse_args(argv)
    uvicorn.run(create_app(config), host=host, port=config.port, log_level="warning", access_log=False)
