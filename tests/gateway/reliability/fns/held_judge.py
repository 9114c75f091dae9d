"""Async judge-style: its whole work is one awaited remote call. Connects to the stand-in judge at
`extra_info["judge_port"]` (127.0.0.1) and scores the byte it answers (b"1" -> 1.0)."""

import asyncio


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    reader, writer = await asyncio.open_connection("127.0.0.1", int(extra_info["judge_port"]))
    try:
        return float(await reader.readexactly(1) == b"1")
    finally:
        writer.close()
