"""Dispatch precedence: reward_fn > config dispatch > exact DATA_SOURCES > glob > default > 404."""

from __future__ import annotations

import pytest

from tests.support.gateway import Gateway


@pytest.mark.parametrize(
    ("body", "reward_fn", "score"),
    [
        ({"data_source": "test/exact", "reward_fn": "verl_sync"}, "verl_sync", 0.0),  # reward_fn wins
        ({"data_source": "test/overridden"}, "verl_sync", 0.0),  # config dispatch beats claims_exact
        ({"data_source": "test/exact"}, "claims_exact", 0.1),  # exact claim beats the glob test/*
        ({"data_source": "test/anything"}, "claims_glob", 0.2),  # glob
        ({"data_source": "test/fallback"}, "raises_fallback", -1.0),  # config data_sources claim
    ],
)
def test_precedence(gw: Gateway, body: dict, reward_fn: str, score: float) -> None:
    resp = gw.score(solution_str="x", ground_truth="y", **body)
    assert resp.status_code == 200, resp.text
    assert (resp.json()["reward_fn"], resp.json()["score"]) == (reward_fn, score)


def test_builtin_claims_dispatch(gw: Gateway) -> None:
    """verl's data_source names reach the built-ins (gsm8k claims openai/gsm8k)."""
    resp = gw.score(data_source="openai/gsm8k", solution_str="so #### 72", ground_truth="72")
    assert resp.status_code == 200, resp.text
    assert resp.json()["reward_fn"] == "gsm8k" and resp.json()["score"] == 1.0


def test_undispatchable_lists_what_exists(gw: Gateway) -> None:
    resp = gw.score(data_source="nothing/claims/this", solution_str="x")
    assert resp.status_code == 404
    err = resp.json()["error"]
    assert err["type"] == "Undispatchable" and "nothing/claims/this" in err["message"]
    assert {"verl_sync", "claims_glob", "gsm8k"} <= set(err["available_reward_fns"])
    assert {"test/exact", "test/*", "test/overridden", "openai/gsm8k"} <= set(err["available_data_sources"])


def test_unknown_reward_fn_is_404(gw: Gateway) -> None:
    resp = gw.score(data_source="test/exact", reward_fn="no_such_fn", solution_str="x")
    assert resp.status_code == 404
    err = resp.json()["error"]
    assert err["type"] == "UnknownRewardFunction" and "no_such_fn" in err["message"]
    assert "verl_sync" in err["available_reward_fns"]


def test_user_file_overrides_builtin_without_shadowing_stdlib(gw: Gateway) -> None:
    """The user folder's math.py replaces the built-in `math` and does not shadow the standard library's."""
    assert gw.score(data_source="x", reward_fn="math", solution_str="x").json()["score"] == 0.25
    assert gw.score(data_source="x", reward_fn="uses_stdlib", solution_str="x").json()["score"] == 1.0
    assert "overrides the one from" in gw.proc.log()
