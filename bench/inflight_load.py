"""What the in-flight benchmarks (inflight.py, inflight_memory.py, inflight_attribution.py) share: the judged
reward function they load, the load generator that holds every post in flight at once, and the gateway's
in-flight count, memory and CPU as /metrics and /proc give them."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os

import httpx

JUDGE_FN = """
import zlib

PORTS = {ports}
LATENCY_S = {latency_s}


async def compute_score(data_source, solution_str, ground_truth, extra_info=None, uid=None, http_client=None):
    port = PORTS[zlib.crc32(uid.encode()) % len(PORTS)]
    body = {{"response": solution_str, "latency_s": LATENCY_S}}
    async with http_client.post(f"http://127.0.0.1:{{port}}/judge", json=body) as resp:
        resp.raise_for_status()
        return float((await resp.json())["score"])
"""


def gateway_inflight(port: int) -> float:
    """The gateway's in-flight count (all processes, summed by /metrics), less the scrape asking."""
    try:  # a scrape waits in the same accept queue as the burst: it may be late
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    except httpx.HTTPError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("rewardfleet_gateway_inflight_requests "):
            return float(line.split()[1]) - 1
    return 0.0


def rss_and_cpu(pids: list[int]) -> tuple[int, float]:
    page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    rss, cpu = 0, 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                rss += int(f.read().split()[1]) * page
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return rss, cpu


def burst_client(
    source: str, port: int, first: int, count: int, latency_s: float, out: multiprocessing.Queue
) -> None:
    """One load generator: `count` posts, each on its own connection from `source`, all in flight at once."""
    import uvloop

    async def main() -> dict[str, int]:
        connecting = asyncio.Semaphore(256)  # connects in progress at once (the listen backlog is finite)
        results: dict[str, int] = {}

        async def one(i: int) -> None:
            body = json.dumps(
                {
                    "reward_fn": "judged",
                    "data_source": "x",
                    "solution_str": f"answer {i} yes",
                    "ground_truth": "",
                    "uid": f"p{i}",
                }
            ).encode()
            head = (
                f"POST /score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            key = "ok"
            try:
                async with connecting:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
                writer.write(head + body)
                async with asyncio.timeout(latency_s * 4 + 120):
                    answer = await reader.read()
                writer.close()
                status = answer.split(b" ", 2)[1].decode() if answer else "empty"
                if status != "200":
                    key = f"HTTP {status}"
                else:
                    result = json.loads(answer.split(b"\r\n\r\n", 1)[1])
                    if result["status"] != "ok":
                        key = f"{result['status']}: {(result.get('error') or {}).get('type')}"
            except (OSError, TimeoutError) as exc:
                key = type(exc).__name__
            results[key] = results.get(key, 0) + 1

        await asyncio.gather(*(one(i) for i in range(first, first + count)))
        return results

    out.put(uvloop.run(main()))
