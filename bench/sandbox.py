"""Task sandboxes (local provider): start-up, exec overhead and what an idle sandbox costs.

1. Start to first exec (`create` + `exec(["true"])`), p50/p99: cold image (an OCI layout unpacked into an
   empty cache each time) and warm image (cached).
2. Exec overhead: `sandbox.exec(["true"])` ÷ a bare `bwrap` of the same command over the same root with the
   same namespaces (no cgroup, no checks, no asyncio reader tasks), run alternately in the same run, medians
   (target <= 1.2).
3. Per idle sandbox: kernel memory (Slab + Shmem + page tables from /proc/meminfo, before and after holding
   `--held` idle sandboxes) and disk (the tmpfs layer's usage), and how many were held at once.

    .venv/bin/python -m bench.sandbox [--warm 40] [--cold 8] [--execs 200] [--held 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import BenchResult, Row, median, print_result
from bench.harness.image_layouts import layer_from_folder, write_oci_layout
from bench.harness.sandbox_rootfs import make_rootfs
from rewardfleet.services.sandbox import SandboxSpec
from rewardfleet.services.sandbox.bwrap_exec import bwrap_argv
from rewardfleet.services.sandbox.images import ImageStore
from rewardfleet.services.sandbox.local import LocalProvider


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else values[0]


def _meminfo_kib() -> int:
    fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return sum(int(fields[k].split()[0]) for k in ("Slab", "Shmem", "PageTables", "KernelStack"))


async def _first_exec(provider: LocalProvider, image: str) -> float:
    started = time.perf_counter()
    sandbox = await provider.create(SandboxSpec(image), owner="bench")
    result = await sandbox.exec(["true"], timeout_s=30)
    took = time.perf_counter() - started
    await sandbox.stop()
    if result.exit_code != 0:
        raise RuntimeError(f"first exec failed: {result}")
    return took


async def _bare_bwrap(root: str) -> float:
    argv = bwrap_argv(root, ["true"], cwd="/", env={}, network=False)
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    await proc.communicate()
    return time.perf_counter() - started


async def run_async(warm: int, cold: int, execs: int, held: int) -> BenchResult:
    result = BenchResult("sandbox")
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp_name:
        tmp = Path(tmp_name)
        rootfs = make_rootfs(tmp / "rootfs")
        layout = write_oci_layout(tmp / "layout", [layer_from_folder(rootfs)])
        provider = LocalProvider(tmp / "sandboxes", ImageStore(tmp / "cache"))
        provider.check()

        cold_s = []
        for i in range(cold):
            fresh = LocalProvider(tmp / "sandboxes", ImageStore(tmp / f"cold-cache-{i}"))
            cold_s.append(await _first_exec(fresh, f"oci:{layout}"))
        warm_s = [await _first_exec(provider, f"oci:{layout}") for _ in range(warm)]
        for name, values in (("cold image", cold_s), ("warm image", warm_s)):
            result.rows.append(Row("sandbox", f"start to first exec, {name}, p50 (ms)", median(values) * 1e3))
            result.rows.append(Row("sandbox", f"start to first exec, {name}, p99 (ms)", _p99(values) * 1e3))

        sandbox = await provider.create(SandboxSpec(f"oci:{layout}"), owner="bench")
        root = str(provider.folder(sandbox.id) / "root")
        ours, bare = [], []
        for _ in range(execs):
            started = time.perf_counter()
            await sandbox.exec(["true"], timeout_s=30)
            ours.append(time.perf_counter() - started)
            bare.append(await _bare_bwrap(root))
        await sandbox.stop()
        ratio = median(ours) / median(bare)
        result.rows.append(Row("sandbox", "exec ['true'] (ms, median)", median(ours) * 1e3))
        result.rows.append(Row("sandbox", "bare bwrap of the same (ms, median)", median(bare) * 1e3))
        result.rows.append(
            Row(
                "sandbox",
                "exec overhead ÷ bare bwrap",
                ratio,
                target="<= 1.2",
                met=ratio <= 1.2,
                fmt="{:.3f}",
            )
        )

        before = _meminfo_kib()
        started = time.perf_counter()
        idle = [await provider.create(SandboxSpec(f"oci:{layout}"), owner="bench") for _ in range(held)]
        create_s = time.perf_counter() - started
        after = _meminfo_kib()
        disk_kib = []
        for s in idle:
            upper = provider.folder(s.id) / "disk"
            usage = sum(f.stat().st_size for f in upper.rglob("*") if f.is_file())
            disk_kib.append(usage / 1024)
        check = await asyncio.gather(*(s.exec(["true"], timeout_s=60) for s in idle[:32]))
        if any(r.exit_code != 0 for r in check):
            raise RuntimeError("an idle sandbox failed its exec")
        await asyncio.gather(*(s.stop() for s in idle))
        result.rows.append(Row("sandbox", "idle sandboxes held at once", held, fmt="{:.0f}"))
        result.rows.append(Row("sandbox", "kernel memory per idle sandbox (KiB)", (after - before) / held))
        result.rows.append(
            Row("sandbox", "disk per idle sandbox (KiB, its writable layer)", median(disk_kib))
        )
        result.rows.append(Row("sandbox", "create one idle sandbox (ms, mean)", create_s / held * 1e3))
        image_mib = sum(f.stat().st_size for f in rootfs.rglob("*") if f.is_file()) >> 20
        result.notes.append(
            f"{cold} cold and {warm} warm starts; {execs} alternating exec pairs; "
            f"image: a {image_mib} MiB rootfs of host binaries"
        )
    return result


def run(warm: int = 40, cold: int = 8, execs: int = 200, held: int = 200) -> BenchResult:
    return asyncio.run(run_async(warm, cold, execs, held))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warm", type=int, default=40)
    parser.add_argument("--cold", type=int, default=8)
    parser.add_argument("--execs", type=int, default=200)
    parser.add_argument("--held", type=int, default=200)
    args = parser.parse_args()
    print_result(run(args.warm, args.cold, args.execs, args.held))


if __name__ == "__main__":
    main()
