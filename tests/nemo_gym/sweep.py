"""NeMo Gym's catalogue sweep: every resources server at the pinned commit classified, its recorded rows
counted, and the reproduced ones replayed through a real gateway configured from
`deploy/nemo_gym/catalog.yaml`. Writes the table into docs/nemo_gym.md and the totals line into README.md
(between their `nemo-gym-catalog` markers), and prints verify throughput per class (one run).

    .venv/bin/python -m tests.nemo_gym.sweep [--no-write]

It reads NeMo Gym's snapshot (tests/nemo_gym/gym_mirror.py), which the product never reads: so it is a
tool beside the tests, not part of the fleet; the mapping it exercises is the product's config file.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import tempfile
import time
from pathlib import Path

from tests.nemo_gym import catalog, catalog_serving, gym_mirror

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "nemo_gym" / "catalog.yaml"
DOC = ROOT / "docs" / "nemo_gym.md"
README = ROOT / "README.md"
START, END = "<!-- nemo-gym-catalog:start -->", "<!-- nemo-gym-catalog:end -->"
# optional packages a reproduction may use, reported with the table
EXTRAS = ("math_verify", "jsonschema", "nltk", "toml", "xmltodict", "jiwer", "whisper_normalizer")


def totals_line(entries: list[catalog.Entry], ok_rows: dict[str, int]) -> str:
    reproduced = sum(1 for e in entries if e.replay is not None and e.rows and ok_rows[e.server] == e.rows)
    rows = sum(e.rows for e in entries)
    return (
        f"reproduced: {reproduced} of {len(entries)} servers, {sum(ok_rows.values())} of {rows} rows "
        f"(NeMo Gym {gym_mirror.COMMIT[:12]})"
    )


def table(entries: list[catalog.Entry], ok_rows: dict[str, int], why: dict[str, str]) -> str:
    lines = ["| server | class | rows | reproduced | reason / note |", "|---|---|---:|---:|---|"]
    for e in entries:
        name = catalog.CLASS_NAMES.get(e.cls, "unclassified")
        reason = why.get(e.server) or e.reason
        lines.append(f"| {e.server} | {e.cls} {name} | {e.rows} | {ok_rows[e.server]} | {reason} |")
    counts = {c: sum(1 for e in entries if e.cls == c) for c in catalog.CLASS_NAMES}
    by_class = ", ".join(f"class {c} ({catalog.CLASS_NAMES[c]}): {n}" for c, n in counts.items())
    extras = ", ".join(f"{m} {'yes' if importlib.util.find_spec(m) else 'no'}" for m in EXTRAS)
    return "\n".join([*lines, "", f"Servers by class: {by_class}. Optional packages present: {extras}."])


def splice(path: Path, text: str) -> None:
    """`text` between the markers of `path`, each line indented as the start marker is."""
    old = path.read_text()
    pattern = re.compile(r"^([ \t]*)" + re.escape(START) + ".*?" + re.escape(END), re.S | re.M)
    if not pattern.search(old):
        raise SystemExit(f"{path}: no {START} ... {END} markers")

    def block(m: re.Match[str]) -> str:
        pad = m.group(1)
        body = "\n".join(pad + line if line else line for line in text.splitlines())
        return f"{pad}{START}\n{body}\n{pad}{END}"

    path.write_text(pattern.sub(block, old))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print the table, leave the docs alone")
    args = parser.parse_args()
    if (why_not := gym_mirror.missing()) is not None:
        sys.exit(why_not)
    entries = catalog.entries()
    ok_rows = {e.server: 0 for e in entries}
    why: dict[str, str] = {}
    timing: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, catalog_serving.serving(Path(tmp)) as gateway:
        for e in entries:
            if e.replay is None:
                continue
            started = time.perf_counter()
            results = catalog.replay_server(gateway.url, e.server, e.replay)
            elapsed = time.perf_counter() - started
            timing.setdefault(e.cls, [0.0, 0.0])
            timing[e.cls][0] += len(results)
            timing[e.cls][1] += elapsed
            ok_rows[e.server] = sum(r.ok for r in results)
            notes = [f"row {r.row}: {r.detail}" for r in results if not r.ok]
            notes += [f"row {i}: {reason}" for i, reason in e.replay.skip_rows.items()]
            if e.replay.note:
                notes.insert(0, e.replay.note)
            why[e.server] = "; ".join(notes).replace("|", "\\|")
            print(f"{e.server}: {ok_rows[e.server]} of {e.rows}", *notes, sep="\n  ", flush=True)
    line = totals_line(entries, ok_rows)
    print(line)
    for cls, (n, seconds) in sorted(timing.items()):
        print(f"verify throughput, class {cls}: {n / seconds:.1f} samples/s ({int(n)} rows, one client)")
    unclassified = [e.server for e in entries if e.cls == 0]
    if unclassified:
        print("unclassified:", ", ".join(unclassified))
    if not args.no_write:
        splice(DOC, f"{line}\n\n{table(entries, ok_rows, why)}")
        splice(README, line)


if __name__ == "__main__":
    main()
