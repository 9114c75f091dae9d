"""A stand-in Kubernetes API server for the kubernetes provider's tests: the pod routes the provider calls
(create, read, list by label, delete, and the exec subresource over a `v5.channel.k8s.io` / `v4` websocket)
answering in the shapes a real API server answers (Pod, PodList, Status objects; exec frames of one channel
byte then data; the exit status as a Status on channel 3), with each pod's container run as a local
sandbox. It is not a cluster: no scheduler, kubelet, image pulls or NetworkPolicy; what the tests check is
what the provider sends and how it reads the answers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from bench.harness.processes import free_port
from rewardfleet.services.sandbox import SandboxSpec
from rewardfleet.services.sandbox.local import LocalProvider, LocalSandbox

STDIN, STDOUT, STDERR, ERROR, CLOSE = 0, 1, 2, 3, 255


def status(code: int, reason: str, message: str, name: str = "") -> JSONResponse:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {"name": name, "kind": "pods"},
        "code": code,
    }
    return JSONResponse(body, status_code=code)


class FakeApiServer:
    """Pods in memory; each pod's container a LocalSandbox of `images[pod image]`."""

    def __init__(self, provider: LocalProvider, images: dict[str, str]) -> None:
        self.provider = provider
        self.images = images
        self.pods: dict[str, dict[str, Any]] = {}
        self.sandboxes: dict[str, LocalSandbox] = {}
        self.requests: list[tuple[str, str]] = []
        self.execs: list[list[str]] = []
        self.app = Starlette(
            routes=[
                Route("/api/v1/namespaces/{ns}/pods", self.pods_route, methods=["GET", "POST"]),
                Route("/api/v1/namespaces/{ns}/pods/{name}", self.pod_route, methods=["GET", "DELETE"]),
                WebSocketRoute("/api/v1/namespaces/{ns}/pods/{name}/exec", self.exec_route),
            ]
        )

    async def pods_route(self, request: Request) -> JSONResponse:
        self.requests.append((request.method, request.url.path))
        ns = request.path_params["ns"]
        if request.method == "GET":
            selector = dict(
                p.split("=", 1) for p in request.query_params.get("labelSelector", "").split(",") if p
            )
            items = [
                pod
                for pod in self.pods.values()
                if pod["metadata"]["namespace"] == ns
                and all(pod["metadata"].get("labels", {}).get(k) == v for k, v in selector.items())
            ]
            return JSONResponse(
                {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}
            )
        pod = await request.json()
        name = pod["metadata"]["name"]
        if name in self.pods:
            return status(409, "AlreadyExists", f'pods "{name}" already exists', name)
        image = pod["spec"]["containers"][0]["image"]
        if image not in self.images:
            return status(422, "Invalid", f"image {image} cannot be pulled here", name)
        container = pod["spec"]["containers"][0]
        spec = SandboxSpec(
            self.images[image],
            workdir=container.get("workingDir", "/"),
            env={e["name"]: e["value"] for e in container.get("env", [])},
        )
        self.sandboxes[name] = await self.provider.create(spec, owner="fake-kubelet")
        pod["metadata"].update(
            namespace=ns, uid=f"uid-{name}", resourceVersion="1", creationTimestamp="2026-12-07T23:00:00Z"
        )
        pod["status"] = {"phase": "Pending", "qosClass": "Guaranteed"}
        self.pods[name] = pod
        return JSONResponse(pod, status_code=201)

    async def pod_route(self, request: Request) -> JSONResponse:
        self.requests.append((request.method, request.url.path))
        name = request.path_params["name"]
        pod = self.pods.get(name)
        if pod is None:
            return status(404, "NotFound", f'pods "{name}" not found', name)
        if request.method == "DELETE":
            del self.pods[name]
            await self.sandboxes.pop(name).stop()
            pod["metadata"]["deletionTimestamp"] = "2026-12-07T23:30:00Z"
            return JSONResponse(pod)
        if pod["status"]["phase"] == "Pending":  # the next read finds it started, as a kubelet would
            pod["status"] = {"phase": "Running", "podIP": "10.0.0.7", "qosClass": "Guaranteed"}
            return JSONResponse({**pod, "status": {"phase": "Pending"}})
        return JSONResponse(pod)

    async def exec_route(self, websocket: WebSocket) -> None:
        name = websocket.path_params["name"]
        offered = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",")]
        protocol = next(p for p in ("v5.channel.k8s.io", "v4.channel.k8s.io") if p in offered)
        if name not in self.sandboxes:  # the API server's answer to the upgrade request: a 404 Status
            await websocket.send_denial_response(status(404, "NotFound", f'pods "{name}" not found', name))
            return
        await websocket.accept(subprotocol=protocol)
        argv = websocket.query_params.getlist("command")
        self.execs.append(argv)
        stdin = b""
        if websocket.query_params.get("stdin") in ("True", "true", "1"):
            while True:
                frame = await websocket.receive_bytes()
                if frame[:1] == bytes([STDIN]):
                    stdin += frame[1:]
                elif frame == bytes([CLOSE, STDIN]):
                    break
        result = await self.sandboxes[name].exec(
            argv, timeout_s=600, stdin=stdin or None, max_output_bytes=1 << 24
        )
        for channel, data in ((STDOUT, result.stdout), (STDERR, result.stderr)):
            for start in range(0, len(data), 1 << 15):
                await websocket.send_bytes(bytes([channel]) + data[start : start + (1 << 15)])
        if result.exit_code == 0:
            outcome: dict[str, Any] = {"metadata": {}, "status": "Success"}
        else:
            outcome = {
                "metadata": {},
                "status": "Failure",
                "message": f"command terminated with non-zero exit code: exit status {result.exit_code}",
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": str(result.exit_code)}]},
            }
        await websocket.send_bytes(bytes([ERROR]) + json.dumps(outcome).encode())
        await websocket.close()


@contextmanager
def serving(api: FakeApiServer) -> Iterator[str]:
    """Runs the stand-in under uvicorn on 127.0.0.1 in a thread; yields its URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(api.app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the stand-in API server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
