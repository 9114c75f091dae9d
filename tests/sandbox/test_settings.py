"""The `sandbox:` config section: each provider's fields checked (a bad one named), and `make_provider`
building a working provider from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from rewardfleet.services.sandbox import SandboxSpec
from rewardfleet.services.sandbox.k8s import KubernetesProvider
from rewardfleet.services.sandbox.local import LocalProvider
from rewardfleet.services.sandbox.settings import SandboxSettings, make_provider
from tests.sandbox.k8s_apiserver import FakeApiServer, serving
from tests.support.sandbox import needs_local

SETTINGS: TypeAdapter[Any] = TypeAdapter(SandboxSettings)


@pytest.mark.parametrize(
    ("section", "loc"),
    [
        ({"provider": "docker"}, ()),
        ({"provider": "local", "roots": "/x"}, ("local", "roots")),
        ({"provider": "local", "build_timeout_s": 0}, ("local", "build_timeout_s")),
        ({"provider": "kubernetes"}, ("kubernetes", "namespace")),
        ({"provider": "kubernetes", "namespace": "n", "images": ["a"]}, ("kubernetes", "images")),
    ],
)
def test_bad_sections_name_the_field(section: dict[str, Any], loc: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as bad:
        SETTINGS.validate_python(section)
    assert tuple(bad.value.errors()[0]["loc"])[: len(loc)] == loc


@needs_local
async def test_make_provider_local(tmp_path: Path, tiny_rootfs: Path) -> None:
    settings = SETTINGS.validate_python(
        {"provider": "local", "root": str(tmp_path / "sb"), "image_cache": str(tmp_path / "img")}
    )
    provider = make_provider(settings)
    assert isinstance(provider, LocalProvider)
    sandbox = await provider.create(SandboxSpec(f"dir:{tiny_rootfs}"), owner="t")
    assert (await sandbox.exec(["true"], timeout_s=10)).exit_code == 0
    await sandbox.stop()


@needs_local
async def test_make_provider_kubernetes_from_a_kubeconfig(
    tmp_path: Path, provider: LocalProvider, tiny_rootfs: Path
) -> None:
    fake = FakeApiServer(provider, {"registry.example/t:1": f"dir:{tiny_rootfs}"})
    with serving(fake) as url:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: k, cluster: {{server: '{url}'}}}}]\n"
            "users: [{name: u, user: {token: test-token}}]\n"
            "contexts: [{name: c, context: {cluster: k, user: u, namespace: ns}}]\n"
        )
        settings = SETTINGS.validate_python(
            {
                "provider": "kubernetes",
                "namespace": "ns",
                "kubeconfig": str(kubeconfig),
                "images": {"dir:/t": "registry.example/t:1"},
            }
        )
        k8s = make_provider(settings)
        assert isinstance(k8s, KubernetesProvider)
        sandbox = await k8s.create(SandboxSpec("dir:/t"), owner="t")
        assert (await sandbox.exec("echo up", timeout_s=10)).stdout == b"up\n"
        await sandbox.stop()
