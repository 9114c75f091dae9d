"""A thin layer over the sglang-router binary: its config and its exact command line.

Running and supervising routers is the fleet's job (`rewardfleet.services.fleet`), not this package's.
"""

from rewardfleet.router.command import RouterBinaryNotFound, build_command, sglang_router_binary
from rewardfleet.router.config import RouterConfig

__all__ = [
    "RouterBinaryNotFound",
    "RouterConfig",
    "build_command",
    "sglang_router_binary",
]
