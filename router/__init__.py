"""A thin layer over the sglang-router binary: its config, its exact command line, its admin API.

Running and supervising routers is the fleet's job (`rewardfleet.services.fleet`), not this package's.
"""

from rewardfleet.router.admin import Readiness, RouterAdmin, RouterAdminError, WorkerInfo
from rewardfleet.router.command import RouterBinaryNotFound, build_command, sglang_router_binary
from rewardfleet.router.config import RouterConfig

__all__ = [
    "Readiness",
    "RouterAdmin",
    "RouterAdminError",
    "RouterBinaryNotFound",
    "RouterConfig",
    "WorkerInfo",
    "build_command",
    "sglang_router_binary",
]
