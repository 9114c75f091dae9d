"""The sandbox's typed failures.

Each is raised for one sample; the gateway reports its class name as the sample's `error.type` (status
"error"), never a silent 0.

- `SandboxUnavailable`: the backend cannot run programs here (bubblewrap cannot create namespaces, no
  interpreter, Sandbox Fusion unreachable). Code is then not run at all — never unsandboxed.
- `SandboxTimeout`: the whole sample ran past `sample_timeout_s`; everything it started was killed.
- `SandboxCrashed`: a sandbox never started its runner (so none of the program ran). A program cannot cause
  it: what a program does is a verdict (an output over `max_output_bytes` is the verdict `output_limit`).
- `SandboxNotStarted` (a `SandboxCrashed`): a case's sandbox had not started its runner at the case's
  deadline. When that deadline was cut short by the sample's `sample_timeout_s` (which the program's
  slowness used up), `code` scores the case as a timeout instead.
- `SandboxFusionError`: Sandbox Fusion answered with an error status or a body that is not its protocol.
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base class: the program could not be judged, so the sample has no score."""


class SandboxUnavailable(SandboxError):
    pass


class SandboxTimeout(SandboxError):
    pass


class SandboxCrashed(SandboxError):
    pass


class SandboxNotStarted(SandboxCrashed):
    pass


class SandboxFusionError(SandboxError):
    pass
