"""docs/architecture.md's map holds to the code: the services are the folders of `services/` (and the other
source roots), and the gateway's parts sit in the layers of pyproject.toml's layers contract, listed once.

Read from pyproject.toml and the filesystem, so a package added anywhere fails here until the map has its
line; the failure names the exact line to add (the lead fills in what it owns at merge) and where it goes.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT

MAP = REPO_ROOT / "docs" / "architecture.md"
GATEWAY = "rewardfleet.services.gateway"
LAYERS = "docs/architecture.md, table 'The gateway's packages, by layer'"
OUTSIDE = "-"  # the layer column of a part the contract ignores (cli, __main__)

# "| `services/gateway/` | what it owns |"
SERVICE_ROW = re.compile(r"^\| `((?:services/)?[A-Za-z_]\w*(?:/|\.py))` \| (.*) \|$")
# "| 8 | `groups/` | what it owns |"
LAYER_ROW = re.compile(r"^\| (\d+|-) \| `([A-Za-z_]\w*(?:/|\.py))` \| (.*) \|$")
# "| `cache/` | in-process | shared |"
STATE_ROW = re.compile(r"^\| `([A-Za-z_]\w*)/` \| (.*) \| (.*) \|$")


def section(text: str, heading: str) -> list[str]:
    """The lines under `### heading` up to the next heading."""
    lines = text.splitlines()
    start = lines.index(f"### {heading}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start:end]


def rows(lines: list[str], pattern: re.Pattern[str]) -> list[tuple[str, ...]]:
    return [m.groups() for line in lines if (m := pattern.match(line))]


def map_text() -> str:
    return MAP.read_text()


def layers_contract(pyproject: Path = REPO_ROOT / "pyproject.toml") -> tuple[list[list[str]], list[str]]:
    """The gateway's layers, top first (each a list of parts), and the parts the contract ignores."""
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["type"] == "layers" and c.get("containers") == [GATEWAY]]
    layers = [[part.strip() for part in layer.split("|")] for layer in contract["layers"]]
    return layers, list(contract.get("exhaustive_ignores", []))


def gateway_parts(root: Path = REPO_ROOT) -> dict[str, str]:
    """Every module and subpackage of services/gateway, by import name -> as the map writes it."""
    folder = root / "services" / "gateway"
    parts = {p.stem: p.name for p in folder.glob("*.py") if p.name != "__init__.py"}
    parts |= {p.name: p.name + "/" for p in folder.iterdir() if (p / "__init__.py").is_file()}
    return parts


def service_parts(root: Path = REPO_ROOT) -> set[str]:
    """The rows the services table must have: each child of services/, and router/ and reward_fns/."""
    folder = root / "services"
    parts = {f"services/{p.name}" for p in folder.glob("*.py") if p.name != "__init__.py"}
    parts |= {f"services/{p.name}/" for p in folder.iterdir() if (p / "__init__.py").is_file()}
    return parts | {"router/", "reward_fns/"}


def map_problems(text: str, root: Path = REPO_ROOT) -> list[str]:
    """What the map gets wrong about the code, each as the edit that fixes it."""
    problems: list[str] = []
    layers, ignored = layers_contract(root / "pyproject.toml")
    parts = gateway_parts(root)
    layer_of = {part: str(i) for i, layer in enumerate(layers, 1) for part in layer}
    layer_of |= dict.fromkeys(ignored, OUTSIDE)

    # The services.
    listed = rows(section(text, "The services"), SERVICE_ROW)
    names = [name for name, _ in listed]
    for name in sorted(service_parts(root) - set(names)):
        problems.append(
            f"docs/architecture.md, table 'The services': add the line `| `{name}` | <what it owns> |`"
        )
    for name in sorted(set(names) - service_parts(root)):
        problems.append(
            f"docs/architecture.md, table 'The services': remove the line of `{name}` (no such part)"
        )
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"docs/architecture.md, table 'The services': `{name}` is listed more than once")

    # The gateway's parts, in their layers.
    listed_layers = rows(section(text, "The gateway's packages, by layer"), LAYER_ROW)
    written = [name for _, name, _ in listed_layers]
    for module, name in sorted(parts.items()):
        if module not in layer_of:
            problems.append(
                f"pyproject.toml, the gateway's layers contract: put `{module}` in a layer;"
                f" then {LAYERS}: add its line"
                f" `| <layer> | `{name}` | <what it owns> |`"
            )
        elif name not in written:
            layer = layer_of[module]
            before = [w for (lay, w, _) in listed_layers if lay == layer]
            where = f"after the line of `{before[-1]}`" if before else "in its place, top to bottom"
            problems.append(f"{LAYERS}: add the line `| {layer} | `{name}` | <what it owns> |` {where}")
    by_name = {name: module for module, name in parts.items()}
    for layer, name, owns in listed_layers:
        module = by_name.get(name)
        if module is None:
            problems.append(
                f"{LAYERS}: remove the line of `{name}` (no such module or package in services/gateway)"
            )
        elif module in layer_of and layer_of[module] != layer:
            problems.append(
                f"{LAYERS}: `{name}` is in layer"
                f" {layer_of[module]} of the contract: change its line to"
                f" `| {layer_of[module]} | `{name}` | {owns} |`"
            )
        if not owns.strip():
            problems.append(f"docs/architecture.md: say in one line what `{name}` owns")
    for name in sorted({n for n in written if written.count(n) > 1}):
        problems.append(f"{LAYERS}: `{name}` is listed more than once")
    order = [int(lay) if lay != OUTSIDE else len(layers) + 1 for lay, _, _ in listed_layers]
    if order != sorted(order):
        problems.append(f"{LAYERS}: keep the rows in layer order, top first")

    # Where state lives: every feature with a backend chooser or a Redis store has a row.
    state = [name for name, _, _ in rows(section(text, "Where state lives, per backend"), STATE_ROW)]
    folder = root / "services" / "gateway"
    keeping = {
        p.name
        for p in folder.iterdir()
        if (p / "choose_store.py").is_file() or any(f.name.startswith("redis_") for f in p.glob("*.py"))
    } - {"state_store"}
    for name in sorted(keeping - set(state)):
        problems.append(
            "docs/architecture.md, table 'Where state lives, per backend': add the line"
            f" `| `{name}/` | <its in-process store> | <its Redis store> |`"
        )
    for name in sorted(set(state) - set(gateway_parts(root))):
        problems.append(f"docs/architecture.md, table 'Where state lives, per backend': remove `{name}/`")
    return problems


def test_the_map_holds_to_the_code() -> None:
    problems = map_problems(map_text())
    assert not problems, "docs/architecture.md's map has drifted:\n" + "\n".join(problems)


def test_every_layer_of_the_contract_is_in_the_map() -> None:
    layers, _ = layers_contract()
    written = {
        name.rstrip("/").removesuffix(".py")
        for _, name, _ in rows(section(map_text(), "The gateway's packages, by layer"), LAYER_ROW)
    }
    assert {part for layer in layers for part in layer} <= written


def test_gateway_md_links_to_the_map_instead_of_a_second_list() -> None:
    text = (REPO_ROOT / "docs" / "gateway.md").read_text()
    layout = text[text.index("## Code layout") :]
    layout = layout[: layout.find("\n## ", 1)] if "\n## " in layout[1:] else layout
    assert "architecture.md" in layout
    assert "services/gateway/catalog/" not in layout, "docs/gateway.md keeps a second list of the packages"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the parts the check reads: pyproject.toml and the gateway's and services' folder names."""
    (tmp_path / "pyproject.toml").write_text((REPO_ROOT / "pyproject.toml").read_text())
    for p in (REPO_ROOT / "services").rglob("__init__.py"):
        rel = p.relative_to(REPO_ROOT)
        if len(rel.parts) <= 4 and "__pycache__" not in rel.parts:
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text("")
    for p in [*(REPO_ROOT / "services").glob("*.py"), *(REPO_ROOT / "services" / "gateway").glob("*.py")]:
        (tmp_path / p.relative_to(REPO_ROOT)).write_text("")
    for p in (REPO_ROOT / "services" / "gateway").glob("*/*.py"):
        (tmp_path / p.relative_to(REPO_ROOT)).write_text("")
    return tmp_path


def test_the_copy_holds_as_the_repository_does(tree: Path) -> None:
    assert map_problems(map_text(), tree) == []


def test_a_new_package_names_the_line_to_add(tree: Path) -> None:
    (tree / "services" / "planted").mkdir()
    (tree / "services" / "planted" / "__init__.py").write_text("")
    (tree / "services" / "gateway" / "plantedfeature").mkdir()
    (tree / "services" / "gateway" / "plantedfeature" / "__init__.py").write_text("")
    (tree / "services" / "gateway" / "plantedfeature" / "redis_sessions.py").write_text("")
    problems = map_problems(map_text(), tree)
    assert (
        "docs/architecture.md, table 'The services': add the line `| `services/planted/` | <what it owns> |`"
        in (problems)
    )
    assert any(
        p.startswith("pyproject.toml, the gateway's layers contract: put `plantedfeature`") for p in problems
    )

    # Once the contract has it (here last of layer 8), the map's line is named with its layer and place.
    pyproject = tree / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('| environments"', '| environments | plantedfeature"'))
    problems = map_problems(map_text(), tree)
    assert (
        f"{LAYERS}: add the line `| 8 | `plantedfeature/` | <what it owns> |`"
        " after the line of `environments/`"
    ) in problems
    assert (
        "docs/architecture.md, table 'Where state lives, per backend': add the line"
        " `| `plantedfeature/` | <its in-process store> | <its Redis store> |`"
    ) in problems
