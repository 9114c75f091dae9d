"""The Kubernetes provider: a sandbox is a pod (one container idling as PID 1) created, exec'd into, copied
to and deleted with the official `kubernetes` client. For sandboxes off the gateway's host; the engine's own
isolation applies (a RuntimeClass such as gVisor or Kata when `runtime_class` is set).

The image reference of a spec is mapped to a registry image by `images` (a cluster pulls from registries;
`dir:`/`oci:` folders of the gateway's host mean nothing to it). The container must hold `sh`, `env`,
`timeout`, `cat`, `wc`, `mkdir`, `chmod`, `rm`, `tar` and `kill` (any Debian or busybox image does).
How it differs from the local provider (processes between execs, network, pids): docs/sandboxes.md.
"""

from __future__ import annotations

import asyncio
import io
import os
import posixpath
import secrets
import socket
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubernetes import client as k8s_client
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

from rewardfleet.services.sandbox.api import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_OUTPUT_BYTES
from rewardfleet.services.sandbox.errors import (
    FileTooLarge,
    SandboxFailed,
    SandboxNotFound,
    SandboxSpecInvalid,
)
from rewardfleet.services.sandbox.spec import (
    ExecResult,
    SandboxSpec,
    VerifierMounts,
    check_env,
    check_exec,
    check_path,
)
from rewardfleet.services.sandbox.state import process_start_ticks

MANAGED_BY = "rewardfleet-sandbox"
LABEL_ID = "rewardfleet.io/sandbox"
LABEL_NETWORK = "rewardfleet.io/network"
ANNOTATION_DEADLINE = "rewardfleet.io/deadline"
ANNOTATION_OWNER = "rewardfleet.io/owner"
ANNOTATION_WORKDIR = "rewardfleet.io/workdir"
_CONTAINER = "sandbox"
_NOT_A_FILE = 44
_TOO_LARGE = 45
_GRACE_S = 5.0


def _pod_name(sandbox_id: str) -> str:
    return f"rf-sandbox-{sandbox_id}"


class KubernetesSandbox:
    """One pod of a `KubernetesProvider` (see `Sandbox` for each method's contract)."""

    def __init__(self, provider: KubernetesProvider, sandbox_id: str, workdir: str, env: Mapping[str, str]):
        self.id = sandbox_id
        self._provider = provider
        self._workdir = workdir
        self._env = dict(env)

    async def exec(
        self,
        cmd: Sequence[str] | str,
        *,
        timeout_s: float,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        verifier: VerifierMounts | None = None,
    ) -> ExecResult:
        argv = check_exec(cmd, timeout_s, cwd, max_output_bytes)
        variables = {**self._env, **check_env("env", env or {})}
        workdir = check_path("cwd", cwd) if cwd is not None else self._workdir
        wrapped = [
            *("timeout", "-s", "KILL", f"{timeout_s:.3f}s"),
            *("env", *(f"{k}={v}" for k, v in variables.items())),
            *("sh", "-c", 'cd "$0" && exec "$@"', workdir, *argv),
        ]
        if verifier is not None:
            await self._prepare_verifier(verifier)
        try:
            result = await self._provider.run(self.id, wrapped, stdin, timeout_s + _GRACE_S, max_output_bytes)
            if result.exit_code == 137 and result.duration_s >= timeout_s:
                result = ExecResult(
                    -9, result.stdout, result.stderr, True, result.truncated, result.duration_s
                )
            if verifier is not None and verifier.fresh:
                collected = await self._collect(verifier)
                result = ExecResult(**{**result.__dict__, "collected": collected})
            return result
        finally:
            if verifier is not None:
                targets = [*verifier.read_only, *verifier.fresh]
                await self._shell('rm -rf -- "$@"; mkdir -p -- "$@"', targets)

    async def _shell(self, script: str, args: Sequence[str], stdin: bytes | None = None) -> ExecResult:
        return await self._provider.run(self.id, ["sh", "-c", script, "sh", *args], stdin, 120, 1 << 16)

    async def _prepare_verifier(self, verifier: VerifierMounts) -> None:
        """Kills every process the agent left in the container (a pod has no pid namespace per exec), then
        empties each target and copies each read-only folder in."""
        await self._shell("kill -9 -1 2>/dev/null; true", [])
        targets = [*verifier.read_only, *verifier.fresh]
        await self._shell('rm -rf -- "$@" && mkdir -p -- "$@"', targets)
        for target, source in verifier.read_only.items():
            copied = await self._shell('tar -x -C "$1" && chmod -R a-w "$1"', [target], _tar_of(source))
            if copied.exit_code != 0:
                raise SandboxFailed(f"copying {source} to {target}: {copied.stderr[-300:]!r}")

    async def _collect(self, verifier: VerifierMounts) -> dict[str, bytes]:
        collected: dict[str, bytes] = {}
        for target in verifier.fresh:
            packed = await self._provider.run(
                self.id, ["tar", "-c", "-C", target, "."], None, 120, verifier.max_collected_bytes * 2 + 65536
            )
            room = verifier.max_collected_bytes - sum(map(len, collected.values()))
            collected.update(_regular_files(packed.stdout, target, room))
        return collected

    async def read_file(self, path: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
        path = check_path("path", path)
        script = (
            f'[ -f "$1" ] || exit {_NOT_A_FILE}; s=$(wc -c < "$1"); '
            f'[ "$s" -le "$2" ] || {{ echo "$s"; exit {_TOO_LARGE}; }}; cat "$1"'
        )
        done = await self._provider.run(
            self.id, ["sh", "-c", script, "sh", path, str(max_bytes)], None, 120, max_bytes + 1
        )
        if done.exit_code == _NOT_A_FILE:
            raise FileNotFoundError(2, "no such regular file in the sandbox", path)
        if done.exit_code == _TOO_LARGE:
            raise FileTooLarge(path, int(done.stdout.strip() or 0), max_bytes)
        if done.exit_code != 0:
            raise SandboxFailed(f"reading {path}: {done.stderr[-300:]!r}")
        return done.stdout

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        path = check_path("path", path)
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1" && chmod "$2" "$1"'
        done = await self._provider.run(
            self.id, ["sh", "-c", script, "sh", path, f"{mode & 0o777:o}"], bytes(data), 120, 1 << 16
        )
        if done.exit_code != 0:
            if b"No space" in done.stderr:
                raise FileTooLarge(path, len(data), -1)
            raise SandboxFailed(f"writing {path}: {done.stderr[-300:]!r}")

    async def stop(self) -> None:
        await self._provider.stop(self.id)


def _tar_of(folder: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            tar.add(os.path.join(folder, name), arcname=name)
    return buffer.getvalue()


def _regular_files(packed: bytes, prefix: str, max_bytes: int) -> dict[str, bytes]:
    """The regular files of a tar stream the sandbox produced (hostile: names are only keys here)."""
    found: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(packed), mode="r:") as tar:
            for member in tar:
                if not member.isreg() or total + member.size > max_bytes:
                    continue
                extracted = tar.extractfile(member)
                if extracted is None:
                    continue
                data = extracted.read(member.size)
                total += len(data)
                name = posixpath.normpath(member.name).lstrip("./")
                found[posixpath.join(prefix, name)] = data
    except tarfile.TarError:
        return found
    return found


class KubernetesProvider:
    """Sandboxes as pods in `namespace`, through `api` (a configured `kubernetes.client.ApiClient`)."""

    name = "kubernetes"

    def __init__(
        self,
        api: k8s_client.ApiClient,
        namespace: str,
        *,
        images: Mapping[str, str] | Callable[[str], str],
        runtime_class: str | None = None,
        ready_timeout_s: float = 120.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.core = k8s_client.CoreV1Api(api)
        self.namespace = namespace
        self._images = images
        self.runtime_class = runtime_class
        self.ready_timeout_s = ready_timeout_s
        self._clock = clock
        pid = os.getpid()
        self.owner_tag = f"{socket.gethostname()}/{pid}/{process_start_ticks(pid) or 0}"

    def _image(self, ref: str) -> str:
        image = self._images(ref) if callable(self._images) else self._images.get(ref)
        if not image:
            raise SandboxSpecInvalid("image", f"{ref!r} has no registry image for the kubernetes provider")
        return image

    def pod_manifest(self, sandbox_id: str, spec: SandboxSpec, owner: str) -> dict[str, Any]:
        """The pod of a sandbox: limits, no service account token, no service links, no privilege
        escalation, a deadline the cluster enforces (activeDeadlineSeconds = ttl_s)."""
        res = spec.resources
        limits = {
            "cpu": f"{int(res.cpus * 1000)}m",
            "memory": f"{res.memory_mb}Mi",
            "ephemeral-storage": f"{res.disk_mb}Mi",
        }
        pod_spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "activeDeadlineSeconds": max(1, int(spec.ttl_s)),
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": _CONTAINER,
                    "image": self._image(spec.image),
                    "command": ["sleep", "infinity"],
                    "workingDir": spec.workdir,
                    "env": [{"name": k, "value": v} for k, v in spec.env.items()],
                    "resources": {"limits": limits, "requests": limits},
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["NET_RAW", "MKNOD", "AUDIT_WRITE"]},
                    },
                }
            ],
        }
        if self.runtime_class:
            pod_spec["runtimeClassName"] = self.runtime_class
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": _pod_name(sandbox_id),
                "labels": {
                    "app.kubernetes.io/managed-by": MANAGED_BY,
                    LABEL_ID: sandbox_id,
                    LABEL_NETWORK: "on" if spec.network else "off",
                },
                "annotations": {
                    ANNOTATION_DEADLINE: f"{self._clock() + spec.ttl_s:.3f}",
                    ANNOTATION_OWNER: f"{self.owner_tag} {owner}"[:256],
                    ANNOTATION_WORKDIR: spec.workdir,
                },
            },
            "spec": pod_spec,
        }

    async def create(self, spec: SandboxSpec, *, owner: str) -> KubernetesSandbox:
        sandbox_id = secrets.token_hex(16)
        manifest = self.pod_manifest(sandbox_id, spec, owner)
        await self._call(self.core.create_namespaced_pod, self.namespace, manifest, sandbox_id=sandbox_id)
        try:
            await self._wait_running(sandbox_id)
            sandbox = KubernetesSandbox(self, sandbox_id, spec.workdir, {})
            for path, data in spec.files.items():
                await sandbox.write_file(path, data)
        except BaseException:
            await asyncio.shield(self.stop(sandbox_id))
            raise
        return sandbox

    async def _wait_running(self, sandbox_id: str) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            pod = await self._call(
                self.core.read_namespaced_pod, _pod_name(sandbox_id), self.namespace, sandbox_id=sandbox_id
            )
            phase = pod.status.phase if pod.status else None
            if phase == "Running":
                return
            if phase in ("Failed", "Succeeded"):
                raise SandboxFailed(f"sandbox pod {_pod_name(sandbox_id)} ended before it ran: {phase}")
            if time.monotonic() > deadline:
                raise SandboxFailed(
                    f"sandbox pod {_pod_name(sandbox_id)} not running after {self.ready_timeout_s} s"
                )
            await asyncio.sleep(0.25)

    async def attach(self, sandbox_id: str) -> KubernetesSandbox:
        if len(sandbox_id) != 32 or not all(c in "0123456789abcdef" for c in sandbox_id):
            raise SandboxNotFound(sandbox_id)
        pod = await self._call(
            self.core.read_namespaced_pod, _pod_name(sandbox_id), self.namespace, sandbox_id=sandbox_id
        )
        labels = pod.metadata.labels or {}
        if labels.get("app.kubernetes.io/managed-by") != MANAGED_BY or (
            pod.status and pod.status.phase != "Running"
        ):
            raise SandboxNotFound(sandbox_id)
        annotations = pod.metadata.annotations or {}
        return KubernetesSandbox(self, sandbox_id, annotations.get(ANNOTATION_WORKDIR, "/"), {})

    async def stop(self, sandbox_id: str) -> None:
        try:
            await self._call(
                self.core.delete_namespaced_pod,
                _pod_name(sandbox_id),
                self.namespace,
                sandbox_id=sandbox_id,
                grace_period_seconds=0,
            )
        except SandboxNotFound:
            return

    async def reap(self) -> int:
        """Deletes pods past their deadline, and pods whose owner process (on this host) is gone."""
        pods = await self._call(
            self.core.list_namespaced_pod,
            self.namespace,
            label_selector=f"app.kubernetes.io/managed-by={MANAGED_BY}",
        )
        host = socket.gethostname()
        stopped = 0
        for pod in pods.items:
            annotations = pod.metadata.annotations or {}
            deadline = float(annotations.get(ANNOTATION_DEADLINE, "0") or 0)
            owner = annotations.get(ANNOTATION_OWNER, "").split(" ")[0].split("/")
            gone = (
                len(owner) == 3 and owner[0] == host and process_start_ticks(int(owner[1])) != int(owner[2])
            )
            if self._clock() >= deadline or gone:
                await self.stop((pod.metadata.labels or {}).get(LABEL_ID, ""))
                stopped += 1
        return stopped

    async def run(
        self, sandbox_id: str, argv: list[str], stdin: bytes | None, wait_s: float, max_output_bytes: int
    ) -> ExecResult:
        """One exec through the API server's exec subresource (websocket), in a worker thread."""
        return await asyncio.to_thread(self._run_sync, sandbox_id, argv, stdin, wait_s, max_output_bytes)

    def _run_sync(
        self, sandbox_id: str, argv: list[str], stdin: bytes | None, wait_s: float, cap: int
    ) -> ExecResult:
        started = time.monotonic()
        try:
            ws = stream(
                self.core.connect_get_namespaced_pod_exec,
                _pod_name(sandbox_id),
                self.namespace,
                container=_CONTAINER,
                command=argv,
                stdin=stdin is not None,
                stdout=True,
                stderr=True,
                tty=False,
                binary=True,
                _preload_content=False,
            )
        except ApiException as exc:
            raise self._error(exc, sandbox_id) from None
        out, err = bytearray(), bytearray()
        truncated = False
        try:
            if stdin is not None:
                ws.write_stdin(stdin)
                ws.close_channel(0)
            while ws.is_open() and time.monotonic() - started < wait_s:
                ws.update(timeout=min(1.0, wait_s))
                for kept, channel in ((out, 1), (err, 2)):
                    if ws.peek_channel(channel):
                        chunk = ws.read_channel(channel)
                        truncated |= len(kept) + len(chunk) > cap
                        kept += chunk[: max(0, cap - len(kept))]
            timed_out = ws.is_open()
            code = -9 if timed_out else ws.returncode
        except Exception as exc:  # the connection broke mid-exec
            raise SandboxFailed(f"exec in {_pod_name(sandbox_id)}: {exc}") from None
        finally:
            ws.close()
        return ExecResult(int(code), bytes(out), bytes(err), timed_out, truncated, time.monotonic() - started)

    async def _call(self, method: Callable[..., Any], *args: Any, sandbox_id: str = "", **kwargs: Any) -> Any:
        try:
            return await asyncio.to_thread(method, *args, **kwargs)
        except ApiException as exc:
            raise self._error(exc, sandbox_id) from None

    @staticmethod
    def _error(exc: ApiException, sandbox_id: str) -> Exception:
        # A refused exec upgrade comes back as status 0 with the handshake's status in the reason.
        if exc.status == 404 or (exc.status == 0 and "Handshake status 404" in str(exc.reason)):
            return SandboxNotFound(sandbox_id)
        return SandboxFailed(f"kubernetes API: {exc.status} {exc.reason}: {str(exc.body)[:300]}")
