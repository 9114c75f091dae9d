"""NeMo Gym's workplace_assistant files at `nemo_gym_mirror.COMMIT`, read at test time and extracted into a
temporary folder (nothing of NeMo Gym is committed here): its CSV tables, which our environment takes as
its configured data folder, and its tool modules, which the differential test runs as an oracle.

Each file comes from the local mirror and from NeMo Gym 0.4.0's wheel (.ci/setup): when both hold it their
bytes must be equal (`SourcesDiffer` otherwise), and its SHA-256 must be the one pinned here from the
commit, so CI (which has only the wheel) checks the same bytes. A file no source gives raises
`MirrorMissing`, which the tests skip with.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import subprocess
import tempfile
import zipfile
from functools import cache
from pathlib import Path

from tests.reward_fns import nemo_gym_rows
from tests.reward_fns.environments.nemo_gym_mirror import COMMIT, MIRROR, MirrorMissing

SERVER_DIR = "resources_servers/workplace_assistant"
# SHA-256 at COMMIT of each file read, by its path under SERVER_DIR.
_CSV = "csv_data/processed"
PINNED = {
    f"{_CSV}/emails.csv": "1809e341a0e4f1fd78cf1b759964a42abd28db8c9b9dca364456efc31f82bb31",
    f"{_CSV}/calendar_events.csv": "6c9df1872d54d0b0d068d1b066766a8ddbc29c3933f1d56c9efd554926312295",
    f"{_CSV}/analytics_data.csv": "4a0df10aabc07980f1cc074dc9ab36406ce98dead7e14fe11f72a9f1ba788688",
    f"{_CSV}/project_tasks.csv": "fa0c05d5609f49e905342bd12592b09f23eff6147dcf607b808703f45ddbeaeb",
    f"{_CSV}/customer_relationship_manager_data.csv": (
        "599057e4eec3a7c25ac04b4d655ea2c034b7b7782205dc367a28122756e04c41"
    ),
    "csv_data/raw/email_addresses.csv": "1f3465b92eb41b90a973a9b00f35757a23d16839652b5e352e9d217d8e404b0b",
}
CSV_FILES = tuple(PINNED)
_TOOLS = "workplace_assistant_tools"
UPSTREAM_CODE = {
    f"{_TOOLS}/analytics.py": "96fc35e61ceed6dc323485960cdf644ec8c7390421bb65eadab86b28a6a919e0",
    f"{_TOOLS}/calendar.py": "88016c51f7fcecc98897c1a4060bece2ee3804d60b5f85a80f85869303088fef",
    f"{_TOOLS}/company_directory.py": "7d5f3bbe1b2e6d6f41d1b8a06db0bc1c4eaacb423915b44e058af15fcd09c7dd",
    f"{_TOOLS}/customer_relationship_manager.py": (
        "1db9d57324ce097aeb41cbdde06655442de0a34138293e90bdfeca6ae44a2b2c"
    ),
    f"{_TOOLS}/email.py": "2c710f6cc5d6d7d3b2830b4567dec8ab34bb04b2249765152bc41f2864a64ac5",
    f"{_TOOLS}/project_management.py": "1eccec5636e01dee6fcda583dbb6189b3a998c3f5572c2038194ac223995dbc9",
    "utils.py": "3d0f578251c25226a006c45ea2988eed61de45d8858a5eed79cc74ac63dce5d6",
}
PINNED.update(UPSTREAM_CODE)


class SourcesDiffer(AssertionError):
    """The mirror and the wheel hold different bytes for one path."""


def _from_mirror(path: str) -> bytes | None:
    if not MIRROR.is_dir():
        return None
    done = subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{COMMIT}:{path}"], capture_output=True, check=False
    )
    return done.stdout if done.returncode == 0 else None


def _from_wheel(path: str) -> bytes | None:
    try:
        with zipfile.ZipFile(nemo_gym_rows.wheel_path()) as wheel:
            return wheel.read(path)
    except (FileNotFoundError, KeyError):
        return None


@cache
def read(relative: str) -> bytes:
    """A file of the server at COMMIT (`relative` to its folder), the same from every source that has it."""
    path = f"{SERVER_DIR}/{relative}"
    found = {
        name: data for name, data in (("mirror", _from_mirror(path)), ("wheel", _from_wheel(path))) if data
    }
    if len(set(found.values())) > 1:
        raise SourcesDiffer(f"{path}: the mirror at {COMMIT[:12]} and NeMo Gym's wheel differ")
    if not found:
        raise MirrorMissing(
            f"{path}: not in the mirror {MIRROR} (NEMO_GYM_MIRROR) nor in NeMo Gym {nemo_gym_rows.VERSION}'s "
            "wheel (.ci/setup)"
        )
    data = next(iter(found.values()))
    if hashlib.sha256(data).hexdigest() != PINNED[relative]:
        raise MirrorMissing(
            f"{path} from {', '.join(found)} is not the file of {COMMIT[:12]} (SHA-256 differs)"
        )
    return data


def _scratch(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@cache
def data_dir() -> Path:
    """NeMo Gym's csv_data folder (processed/, raw/), extracted once per test process."""
    root = _scratch("workplace-data-") / "csv_data"
    for relative in CSV_FILES:
        target = root / relative.removeprefix("csv_data/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read(relative))
    return root


@cache
def upstream_tree() -> Path:
    """A folder holding NeMo Gym's workplace_assistant package (tool modules, utils.py, csv_data) as
    `resources_servers/workplace_assistant/`, for importing its tools as the oracle."""
    root = _scratch("workplace-upstream-")
    for relative in (*CSV_FILES, *UPSTREAM_CODE):
        target = root / SERVER_DIR / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read(relative))
    return root
