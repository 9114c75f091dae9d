"""The sandbox API's exceptions, in one tree.

A command that fails or times out is not an exception: it is an `ExecResult`. Exceptions are for what is not
the command's doing.

- `SandboxError`: the base class.
- `SandboxFailed`: the sandbox itself failed (its root file system is gone, the provider or its engine
  errored, bwrap could not start). The episode cannot go on in this sandbox.
- `SandboxUnavailable` (a `SandboxFailed`): this host cannot make sandboxes at all (no bubblewrap, no
  namespaces, no overlay mounts); raised when a provider starts, naming what is missing.
- `SandboxNotFound`: the id is unknown or the sandbox was stopped (or reaped).
- `SandboxSpecInvalid`: a spec, exec or file argument is invalid; `field` names it (`resources.pids`,
  `files['/etc/x']`, `cwd`) so a route can answer 4xx with it.
- `FileTooLarge`: a file read or written is over its cap; `path`, `size` (None when unknown) and `limit`.
- `ImageError`: an image reference cannot be resolved, unpacked or verified (`ImageNotFound`,
  `ImageUnsafe` for an archive that tries to escape its root, make devices or setuid files, or whose
  digest does not match).
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base class of every error the sandbox API raises."""


class SandboxFailed(SandboxError):
    """The sandbox itself failed, not the command run in it."""


class SandboxUnavailable(SandboxFailed):
    """This host cannot make sandboxes of this provider; the message names what is missing."""


class SandboxNotFound(SandboxError):
    """No running sandbox has this id (never created, stopped or reaped)."""

    def __init__(self, sandbox_id: str) -> None:
        super().__init__(f"no sandbox {sandbox_id!r} (unknown, stopped or reaped)")
        self.sandbox_id = sandbox_id


class SandboxSpecInvalid(SandboxError, ValueError):
    """An argument is invalid; `field` names it as a caller wrote it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class FileTooLarge(SandboxError):
    """A file read from or written to a sandbox is over its size cap."""

    def __init__(self, path: str, size: int | None, limit: int) -> None:
        what = f"{size} bytes" if size is not None else "larger"
        super().__init__(f"{path}: {what}, over the limit of {limit} bytes")
        self.path = path
        self.size = size
        self.limit = limit


class ImageError(SandboxError):
    """An image reference could not be resolved, unpacked or verified."""


class ImageNotFound(ImageError):
    """The reference names nothing that exists (no such folder, file or layout entry)."""


class ImageUnsafe(ImageError):
    """The image's archive tries something an image may not: paths outside its root, device nodes,
    setuid/setgid files, links that escape, or a digest that does not match."""
