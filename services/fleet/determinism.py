"""What `deterministic: true` on a pool adds to its servers' command lines.

CPU pools: `serve-model --enable-deterministic-inference` (fixed-shape forwards; generation decodes alone;
services/model_server/runners/deterministic.py). SGLang pools: SGLang 0.5.23's own flag, which switches on its
batch-invariant kernels (`srt/batch_invariant_ops/`), forces the pytorch sampling backend (seeded per
request) and needs one of its deterministic attention backends (`arg_groups/choices.py`
`DETERMINISTIC_ATTENTION_BACKEND_CHOICES`). Left unset SGLang picks fa3 on Hopper and older GPUs, which fails
before Hopper; the fleet asks for triton, which runs on every CUDA and ROCm GPU and keeps the radix cache
(`RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND`). A pool's `server_args` may name another one of the list.
"""

from __future__ import annotations

from typing import Any

DETERMINISTIC_FLAG = "--enable-deterministic-inference"
# SGLang 0.5.23 arg_groups/choices.py: DETERMINISTIC_ATTENTION_BACKEND_CHOICES.
SGLANG_DETERMINISTIC_ATTENTION_BACKENDS = ("ascend", "fa3", "fa4", "flashinfer", "intel_xpu", "triton")
SGLANG_DEFAULT_DETERMINISTIC_BACKEND = "triton"
_BACKEND_KEYS = ("attention-backend", "attention_backend")


def check_deterministic_args(backend: str, server_args: dict[str, Any]) -> None:
    """Refuse an attention backend SGLang would refuse with --enable-deterministic-inference (it raises at
    start-up on the GPU host; say it when the config loads)."""
    if backend != "sglang":
        return
    for key in _BACKEND_KEYS:
        chosen = server_args.get(key)
        if chosen is not None and str(chosen) not in SGLANG_DETERMINISTIC_ATTENTION_BACKENDS:
            raise ValueError(
                f"server_args.{key}: {chosen!r} has no deterministic mode in SGLang 0.5.23; with "
                f"deterministic: true use one of {list(SGLANG_DETERMINISTIC_ATTENTION_BACKENDS)}"
            )


def deterministic_flags(backend: str, deterministic: bool, server_args: dict[str, Any]) -> list[str]:
    """Flags to append to a replica's command line (none when the pool is not deterministic)."""
    if not deterministic:
        return []
    flags = [DETERMINISTIC_FLAG]
    if backend == "sglang" and not any(k in server_args for k in _BACKEND_KEYS):
        flags += ["--attention-backend", SGLANG_DEFAULT_DETERMINISTIC_BACKEND]
    return flags
