"""NeMo Gym's catalogue at the pinned commit (read at test time from its snapshot, else from its wheel:
tests/nemo_gym/gym_mirror.py): every server classified, and every recorded row of each reproduced server
posted to `/nemo_gym/<server>/verify` of a real gateway configured from deploy/nemo_gym/catalog.yaml, getting
the reward and the extras NeMo Gym recorded. A test whose files neither source gives skips, naming them."""

from __future__ import annotations

import copy
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.nemo_gym import catalog, catalog_serving, gym_mirror
from tests.nemo_gym.judge_rows import judge_kwargs
from tests.support.gateway import Gateway

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with catalog_serving.serving(tmp_path_factory.mktemp("catalog")) as gateway:
        yield gateway


@pytest.mark.parametrize("server", sorted(catalog.REPLAYS))
def test_recorded_rows_reproduced(gateway: Gateway, server: str) -> None:
    replay = catalog.REPLAYS[server]
    catalog_serving.require_judge_sources(server)
    with gym_mirror.skip_unavailable():
        rows = gym_mirror.rollouts(server)
        assert rows, f"{server} has no recorded rows at {gym_mirror.COMMIT}"
        results = catalog.replay_server(gateway.url, server, replay)
    # every recorded row is either compared or listed with its reason
    assert sorted([r.row for r in results] + list(replay.skip_rows)) == list(range(len(rows)))
    assert [(r.row, r.detail) for r in results if not r.ok] == []


AGGREGATED = sorted(s for s in catalog.REPLAYS if gym_mirror.exists(catalog.aggregate_path(s)))


@pytest.mark.parametrize("server", AGGREGATED)
def test_aggregate_metrics_equal_the_recorded_ones(gateway: Gateway, server: str) -> None:
    """`/aggregate_metrics` over our verify answers equals NeMo Gym's recorded one
    (`example_rollouts_aggregate_metrics.json`: every agent metric it reports, and the key metrics)."""
    replay = catalog.REPLAYS[server]
    url = f"{gateway.url}/nemo_gym/{server}"
    with gym_mirror.skip_unavailable():
        theirs = catalog.recorded_aggregate(server) or {}
        bodies = catalog.bodies(server, replay)
    answers = [httpx.post(f"{url}/verify", json=b, timeout=60).json() for _, b, _ in bodies]
    ours = httpx.post(f"{url}/aggregate_metrics", json={"verify_responses": answers}, timeout=60).json()
    for part in ("agent_metrics", "key_metrics"):
        want = {k: v for k, v in theirs[part].items() if not k.startswith(replay.own_metrics)}
        assert {k: ours[part].get(k) for k in want} == pytest.approx(want), part


def test_every_server_is_classified_and_every_reproduced_one_is_served() -> None:
    """Every server whose rows can be read (all of them from the snapshot; without it, those the wheel holds
    at the pinned version) is classified."""
    assert len(gym_mirror.servers()) == 114  # the pinned commit's resources servers
    entries = catalog.entries(readable_only=True)
    assert [e.server for e in entries if e.cls not in catalog.CLASS_NAMES] == []
    assert all(e.reason or e.replay is not None for e in entries)
    served = yaml.safe_load((ROOT / "deploy" / "nemo_gym" / "catalog.yaml").read_text())["gateway"]
    assert set(catalog.REPLAYS) == set(served["nemo_gym"]["servers"])


def test_docs_table_is_the_generated_one() -> None:
    """docs/nemo_gym.md's table (tests/nemo_gym/sweep.py writes it) lists every server at the pinned commit,
    each whose rows can be read with its class and row count as the catalogue has them now, and README.md
    carries the same totals line."""
    doc = (ROOT / "docs" / "nemo_gym.md").read_text()
    listed = {
        m["server"]: (int(m["cls"]), int(m["rows"]))
        for m in re.finditer(r"^\| (?P<server>[\w.-]+) \| (?P<cls>\d) [^|]+\| (?P<rows>\d+) \|", doc, re.M)
    }
    assert sorted(listed) == gym_mirror.servers()
    entries = catalog.entries(readable_only=True)
    assert {e.server: listed[e.server] for e in entries} == {e.server: (e.cls, e.rows) for e in entries}
    totals = re.findall(r"^reproduced: .*$", doc, re.M)
    assert len(totals) == 1 and totals[0] in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("server", sorted(s for s, r in catalog.REPLAYS.items() if r.judge is not None))
def test_judge_requests_are_the_recorded_ones(gateway: Gateway, server: str) -> None:
    """The stand-in judge answers only a request equal to a recorded one: a row replayed with its answer
    changed asks a question NeMo Gym never recorded, and fails as a judge error (never a made-up reward)."""
    catalog_serving.require_judge_sources(server)
    with gym_mirror.skip_unavailable():
        (_, body, _), *_ = catalog.bodies(server, catalog.REPLAYS[server])
    output = copy.deepcopy(body["response"]["output"])
    for item in output:
        for part in item.get("content") or [] if item.get("type") == "message" else []:
            part["text"] = catalog.JUDGED_ANSWER.get(server, "a different answer")
    changed = {**body, "response": {**body["response"], "output": output}}
    resp = httpx.post(f"{gateway.url}/nemo_gym/{server}/verify", json=changed, timeout=60)
    assert resp.status_code == 500, resp.text[:300]
    assert "no recorded judge request matches" in resp.text
    same = httpx.post(f"{gateway.url}/nemo_gym/{server}/verify", json=body, timeout=60)
    assert same.status_code == 200, same.text[:300]


@pytest.mark.parametrize("server", sorted(s for s, r in catalog.REPLAYS.items() if r.judge is not None))
def test_catalogue_judge_settings_are_the_servers_own(server: str) -> None:
    """deploy/nemo_gym/catalog.yaml's judge settings (besides the pool) are those of the server's config."""
    config = yaml.safe_load((ROOT / "deploy" / "nemo_gym" / "catalog.yaml").read_text())["gateway"]
    judge = catalog.REPLAYS[server].judge
    given = dict(config["functions"][judge]["reward_kwargs"])
    given.pop("pool")
    fn = importlib.import_module(f"rewardfleet.reward_fns.{judge}").compute_score
    with gym_mirror.skip_unavailable():
        theirs = judge_kwargs(server, fn)
    assert {k: theirs.get(k) for k in given} == given
