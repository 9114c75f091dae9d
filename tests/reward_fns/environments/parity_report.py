"""Prints the parity table of docs/environments.md: for each ported server, the recorded rows our
environment reproduces (in process; tests/reward_fns/environments/test_parity_gateway.py checks the same rows
through a gateway). Run: `python -m tests.reward_fns.environments.parity_report`."""

from __future__ import annotations

import asyncio

from tests.reward_fns.environments import nemo_gym_mirror
from tests.reward_fns.environments.ports import PORTS, Port, rows
from tests.reward_fns.environments.replay import InProcess, replay_gymnasium_row, replay_tool_row


async def reproduced(port: Port) -> tuple[int, int, int]:
    """(rows equal, rows, tool calls replayed)."""
    equal = calls = 0
    recorded = rows(port)
    for row, task in recorded:
        if port.gymnasium:
            replay = await replay_gymnasium_row(InProcess(port.make()), row, task)
        else:
            replay = await replay_tool_row(
                InProcess(port.make()), row, task, port.verify_keys, port.output_view
            )
        equal += not replay.mismatches
        calls += replay.tool_calls
    return equal, len(recorded), calls


async def main() -> None:
    print(f"NeMo Gym at {nemo_gym_mirror.COMMIT}\n")
    print("| server | environment | rows equal / rows | tool calls replayed |")
    print("|---|---|---|---|")
    totals = [0, 0]
    for port in PORTS:
        equal, total, calls = await reproduced(port)
        totals[0] += equal
        totals[1] += total
        module = port.env.__module__.rsplit(".", 1)[1]
        print(f"| `{port.server}` | `{module}.{port.env.__name__}` | {equal} / {total} | {calls} |")
    print(f"\nreproduced: {len(PORTS)} environments, {totals[0]} of {totals[1]} rows")


if __name__ == "__main__":
    asyncio.run(main())
