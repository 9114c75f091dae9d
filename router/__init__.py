"""A thin layer over the sglang-router binary: one router per model pool, started, watched and supervised."""

from router.admin import Readiness, RouterAdmin, RouterAdminError, WorkerInfo
from router.command import RouterBinaryNotFound, build_command, sglang_router_binary
from router.config import RouterConfig
from router.process import RouterProcess, RouterStartError, router_child_spec
from router.supervisor import Backoff, ChildEvent, ChildFailed, ChildSpec, ChildState, Supervisor

__all__ = [
    "Backoff",
    "ChildEvent",
    "ChildFailed",
    "ChildSpec",
    "ChildState",
    "Readiness",
    "RouterAdmin",
    "RouterAdminError",
    "RouterBinaryNotFound",
    "RouterConfig",
    "RouterProcess",
    "RouterStartError",
    "Supervisor",
    "WorkerInfo",
    "build_command",
    "router_child_spec",
    "sglang_router_binary",
]
