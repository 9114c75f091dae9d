"""Task sandboxes: a sandbox per episode, made from an image, that tools write to and verifiers check.
Imports nothing of the project but `services/common`. What is isolated and how: docs/sandboxes.md.

api.py          the `Sandbox` and `SandboxProvider` protocols every provider implements
spec.py         `SandboxSpec`, `Resources`, `VerifierMounts`, `ExecResult`: each field checked once
errors.py       the exception tree (`SandboxFailed`, `SandboxNotFound`, `SandboxSpecInvalid`, ...)
local.py        the local provider: bubblewrap over an overlay of the image, a record per sandbox
bwrap_exec.py   one local exec: the bwrap command line, the cgroup join, timeouts, output caps
mounts.py       a local sandbox's tmpfs writable layer and overlay, made with mount(2)
cgroups.py      a local sandbox's cgroups (v2 when delegated, else v1): pids, memory, cpu
safe_files.py   host-side file access inside a sandbox's root (openat2 RESOLVE_IN_ROOT)
state.py        a local sandbox's record on disk: owner process and deadline, for attach and reap
images.py       the image store: dir:, oci:, docker-archive:, dockerfile: (buildah), cached by digest
unpack.py       one image layer applied onto a root file system, the archive treated as hostile
k8s.py          the kubernetes provider: a pod per sandbox through the official client (optional extra)
settings.py     the `sandbox:` config section and `make_provider`
"""

from rewardfleet.services.sandbox.api import Sandbox, SandboxProvider
from rewardfleet.services.sandbox.errors import (
    FileTooLarge,
    ImageError,
    ImageNotFound,
    ImageUnsafe,
    SandboxError,
    SandboxFailed,
    SandboxNotFound,
    SandboxSpecInvalid,
    SandboxUnavailable,
)
from rewardfleet.services.sandbox.spec import ExecResult, Resources, SandboxSpec, VerifierMounts

__all__ = [
    "ExecResult",
    "FileTooLarge",
    "ImageError",
    "ImageNotFound",
    "ImageUnsafe",
    "Resources",
    "Sandbox",
    "SandboxError",
    "SandboxFailed",
    "SandboxNotFound",
    "SandboxProvider",
    "SandboxSpec",
    "SandboxSpecInvalid",
    "SandboxUnavailable",
    "VerifierMounts",
]
