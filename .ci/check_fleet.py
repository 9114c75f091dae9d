"""Checks that this environment holds everything `rewardfleet up` runs (what .ci/setup-fleet installs).

It imports every module of the packages the fleet's children load (gateway, model server, fleet, router,
reward functions, the common leaf) and the model server's backends, then plans the embedded default fleet,
which resolves both built-in weight packages and the sglang-router binary.
Run: `.venv/bin/python .ci/check_fleet.py` (.ci/setup-fleet ends with it). With `--load` it also loads each
CPU pool's model the way the model server does (the GGUF judge converted afresh in a temporary cache), which
takes a minute: what a version of transformers can break without failing an import.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
import tempfile
from pathlib import Path
from typing import Any

# What the fleet's children import: the services `rewardfleet up` starts and what they load at run time.
FLEET_PACKAGES = (
    "rewardfleet.services.common",
    "rewardfleet.services.gateway",
    "rewardfleet.services.model_server",
    "rewardfleet.services.fleet",
    "rewardfleet.router",
    "rewardfleet.reward_fns",
)
# Run only inside the code sandbox (they load /sandbox/case_runner.py at import): never in a fleet process.
SANDBOX_ONLY = ("rewardfleet.reward_fns._sandbox.zygote",)
# Modules of an optional extra, imported only when that extra's feature is used (`up --ray`, the first MCP
# call): checked when the extra is installed, else listed as skipped.
# Module prefix -> (extra, a module the extra installs).
OPTIONAL = {
    "rewardfleet.services.fleet.on_ray.actors": ("ray", "ray"),
    "rewardfleet.services.fleet.on_ray.autoscaling": ("ray", "ray"),
    "rewardfleet.services.fleet.on_ray.engine": ("ray", "ray"),
    "rewardfleet.services.gateway.routes.mcp_server": ("environments", "mcp_types"),
}
# Imported lazily by the model server's runners for the default pools (MiniLM encoder, SmolLM2 GGUF judge).
MODEL_BACKENDS = ("torch", "transformers", "safetensors", "gguf", "accelerate", "llguidance", "pybase64")


def module_names(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{package}."):
        names.append(info.name)
    return names


def load_models(pools: list[Any]) -> list[str]:
    """Load each CPU pool's checkpoint with the model server's own loader; the failures, one line each."""
    from rewardfleet.services.model_server.checkpoints import resolve_builtin
    from rewardfleet.services.model_server.config import ModelServerSettings
    from rewardfleet.services.model_server.runners.loader import load_runner

    failures = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache  # convert the GGUF file afresh, as on a new machine
        for pool in pools:
            try:
                settings = ModelServerSettings(model_path=Path(resolve_builtin(pool.config.model_path)))
                runner = load_runner(settings)
                print(f"check_fleet: pool {pool.name} loaded ({type(runner).__name__})")
            except Exception as exc:
                failures.append(f"loading pool {pool.name}: {type(exc).__name__}: {exc}")
    return failures


def missing_extra(name: str) -> str | None:
    """The optional extra `name` belongs to when that extra is not installed, else None."""
    for prefix, (extra, probe) in OPTIONAL.items():
        if name == prefix or name.startswith(prefix + "."):
            return None if importlib.util.find_spec(probe) is not None else extra
    return None


def main() -> int:
    failures: list[str] = []
    skipped: list[str] = []
    count = 0
    for package in FLEET_PACKAGES:
        try:
            names = module_names(package)
        except Exception as exc:  # a failing package import is the finding, whatever it raises
            failures.append(f"{package}: {type(exc).__name__}: {exc}")
            continue
        for name in [n for n in names if n not in SANDBOX_ONLY]:
            extra = missing_extra(name)
            if extra is not None:
                skipped.append(f"{name} (extra [{extra}] not installed)")
                continue
            count += 1
            try:
                importlib.import_module(name)
            except Exception as exc:
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
    for name in MODEL_BACKENDS:
        count += 1
        try:
            importlib.import_module(name)
        except Exception as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    try:
        from rewardfleet.services.fleet.config import load_fleet_config
        from rewardfleet.services.fleet.plan import plan_fleet

        cfg = load_fleet_config(None)
        with tempfile.TemporaryDirectory() as run_dir:
            cfg.run_dir = Path(run_dir)  # planning writes the gateway's config file there
            plan = plan_fleet(cfg)
        for pool in plan.pools:
            if not all(r.spec for r in pool.replicas):
                failures.append(f"default fleet: pool {pool.name} has a replica this machine cannot run")
        if "--load" in sys.argv[1:]:
            failures += load_models(plan.pools)
    except Exception as exc:
        failures.append(f"planning the default fleet: {type(exc).__name__}: {exc}")
    for line in skipped:
        print(f"check_fleet: skipped {line}")
    for line in failures:
        print(f"MISSING {line}", file=sys.stderr)
    print(
        f"check_fleet: {count} modules imported ({len(skipped)} of uninstalled extras skipped), "
        f"the default fleet planned: {len(failures)} failure(s)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
