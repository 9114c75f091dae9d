"""The fleet installs one import name, `rewardfleet`, so a trainer's own `services`, `router` or `reward_fns`
modules keep working next to it. The repository's folders keep their names; the wheel maps them
under `rewardfleet/` and an editable install reaches them through the `.editable/rewardfleet` symlinks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

from bench.harness.processes import REPO_ROOT

FOLDERS = ("services", "router", "reward_fns")


def _tracked(folder: str) -> set[str]:
    out = subprocess.run(
        ["git", "ls-files", folder], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


def test_the_wheel_has_one_top_level_package_holding_every_tracked_file(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path)],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        entry_points = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    tops = {n.split("/", 1)[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"rewardfleet"}
    shipped = {n.removeprefix("rewardfleet/") for n in names if n.startswith("rewardfleet/")}
    for folder in FOLDERS:
        assert _tracked(folder) <= shipped, f"{folder}/ files missing from the wheel"
    assert "rewardfleet = rewardfleet.services.cli:main" in entry_points


def test_editable_links_point_at_the_folders() -> None:
    for folder in FOLDERS:
        link = REPO_ROOT / ".editable" / "rewardfleet" / folder
        assert link.is_symlink(), link
        assert link.resolve() == (REPO_ROOT / folder).resolve()


def test_a_trainers_own_services_router_and_reward_fns_coexist_with_the_fleet(tmp_path: Path) -> None:
    """A trainer's project with top-level modules of the same three names, run from its own folder."""
    for name in FOLDERS:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"OWNER = 'trainer:{name}'\n")
    script = textwrap.dedent(
        """
        import services, router, reward_fns
        import rewardfleet.services.gateway.app as gateway_app
        import rewardfleet.reward_fns.gsm8k as gsm8k
        import rewardfleet.router.config
        print(services.OWNER, router.OWNER, reward_fns.OWNER)
        print(gateway_app.create_app.__module__, gsm8k.compute_score("gsm8k", "#### 4", "4"))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    trainer_line, fleet_line = proc.stdout.splitlines()
    assert trainer_line == "trainer:services trainer:router trainer:reward_fns"
    assert fleet_line == "rewardfleet.services.gateway.app 1.0"


def test_the_old_names_do_not_import_outside_the_repository(tmp_path: Path) -> None:
    for name in FOLDERS:
        proc = subprocess.run(
            [sys.executable, "-c", f"import {name}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin"},
        )
        assert proc.returncode != 0 and f"No module named '{name}'" in proc.stderr, proc.stderr
