"""Task sandboxes: a sandbox per episode, made from an image, that tools write to and verifiers check.

One small API (`api.py`: `Sandbox`, `SandboxProvider`; `spec.py`: `SandboxSpec`, `Resources`, `ExecResult`,
`VerifierMounts`; `errors.py`: the exception tree) and its providers: `local` (bubblewrap over an overlay
of the image's root file system), `k8s` (pods through the official client, an optional extra) and the
image store that turns `dir:`, `oci:`, `docker-archive:` and
`dockerfile:` references into cached root file systems. Imports nothing of the project but
`services/common`. What is isolated and how: docs/sandboxes.md.
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
