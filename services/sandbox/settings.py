"""The `sandbox:` section a service's config holds (`provider: local` or `provider: kubernetes`), and
`make_provider`, which builds the provider it names. Nothing is started by parsing; `make_provider` checks
the host (local) or loads the cluster's credentials (kubernetes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from rewardfleet.services.sandbox.api import SandboxProvider


class LocalSandboxSettings(BaseModel):
    """bubblewrap sandboxes on this host: their folders under `root`, unpacked images under `image_cache`."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal["local"] = "local"
    root: Path = Path("/var/lib/rewardfleet/sandboxes")
    image_cache: Path = Path("/var/cache/rewardfleet/images")
    build_timeout_s: float = Field(1800.0, gt=0)


class KubernetesSandboxSettings(BaseModel):
    """Pods in `namespace`; `images` maps a spec's image reference to the registry image pods run;
    credentials from `kubeconfig`, else the in-cluster service account."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal["kubernetes"]
    namespace: str = Field(min_length=1, max_length=63)
    images: dict[str, str] = Field(default_factory=dict)
    runtime_class: str | None = None
    kubeconfig: Path | None = None
    ready_timeout_s: float = Field(120.0, gt=0)


SandboxSettings = Annotated[LocalSandboxSettings | KubernetesSandboxSettings, Field(discriminator="provider")]


def make_provider(settings: LocalSandboxSettings | KubernetesSandboxSettings) -> SandboxProvider:
    """The provider `settings` names; SandboxUnavailable when this host cannot run it."""
    if isinstance(settings, LocalSandboxSettings):
        from rewardfleet.services.sandbox.images import ImageStore
        from rewardfleet.services.sandbox.local import LocalProvider

        store = ImageStore(settings.image_cache, build_timeout_s=settings.build_timeout_s)
        local = LocalProvider(settings.root, store)
        local.check()
        return local
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    from rewardfleet.services.sandbox.k8s import KubernetesProvider

    configuration = k8s_client.Configuration()
    if settings.kubeconfig is not None:
        k8s_config.load_kube_config(str(settings.kubeconfig), client_configuration=configuration)
    else:
        k8s_config.load_incluster_config(client_configuration=configuration)
    return KubernetesProvider(
        k8s_client.ApiClient(configuration),
        settings.namespace,
        images=settings.images,
        runtime_class=settings.runtime_class,
        ready_timeout_s=settings.ready_timeout_s,
    )
