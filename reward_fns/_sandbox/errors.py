"""The sandbox's typed failures. Each is raised for one sample; the gateway reports its class name as the
sample's `error.type` (status "error"), never a silent 0.

- `SandboxUnavailable`: the backend cannot run programs here (bubblewrap cannot create namespaces, no
  interpreter, Sandbox Fusion unreachable). Code is then not run at all — never unsandboxed.
- `SandboxTimeout`: the whole sample ran past `sample_timeout_s`; everything it started was killed.
- `SandboxOutputTooLarge`: the sandbox wrote more than `max_output_bytes`; it was killed.
- `SandboxCrashed`: the sandboxed harness died or broke its protocol (for example the program killed its own
  parent process).
- `SandboxFusionError`: Sandbox Fusion answered with an error status or a body that is not its protocol.
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base class: the program could not be judged, so the sample has no score."""


class SandboxUnavailable(SandboxError):
    pass


class SandboxTimeout(SandboxError):
    pass


class SandboxOutputTooLarge(SandboxError):
    pass


class SandboxCrashed(SandboxError):
    pass


class SandboxFusionError(SandboxError):
    pass
