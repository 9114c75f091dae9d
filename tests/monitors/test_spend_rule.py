"""The spend cap rule (spend/meter.py) on the in-process ledger and on one real redis-server shared by
three "replicas": a call is admitted only while the spend so far is below the cap."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from rewardfleet.services.gateway.errors import BudgetExhausted
from rewardfleet.services.gateway.spend.choose_store import spend_ledger_for
from rewardfleet.services.gateway.spend.config import PoolPrice
from rewardfleet.services.gateway.spend.meter import (
    MemorySpendLedger,
    SpendLedger,
    SpendMeter,
    cost_nano_usd,
)
from rewardfleet.services.gateway.state_store.redis_backend import RedisBackend

# 1000 prompt tokens at $1/M + 500 completion tokens at $2/M = $0.002 per call.
PRICE = PoolPrice(input_usd_per_million_tokens=1.0, output_usd_per_million_tokens=2.0, max_spend_usd=0.006)


def meter(ledger: SpendLedger, price: PoolPrice = PRICE) -> SpendMeter:
    return SpendMeter({"judge": price}, ledger, CollectorRegistry(), known_pools={"judge", "other"})


def test_cost_is_exact_in_nano_dollars() -> None:
    assert cost_nano_usd(PRICE, 1000, 500) == 2_000_000
    cheap = PoolPrice(input_usd_per_million_tokens=0.15, output_usd_per_million_tokens=0.6)
    assert cost_nano_usd(cheap, 1, 1) == 750  # $0.00000075


def test_unknown_pool_in_prices_is_a_config_error() -> None:
    with pytest.raises(ValueError, match=r"pool_prices: \['nope'\] name no pool"):
        SpendMeter({"nope": PRICE}, MemorySpendLedger(), CollectorRegistry(), known_pools={"judge"})


async def test_pool_cap_admits_while_below_and_stops_exactly_at_it() -> None:
    spend = meter(MemorySpendLedger())
    admitted = 0
    for _ in range(6):
        try:
            await spend.admit("fn", None, "judge")
        except BudgetExhausted as exc:
            assert "pool judge has spent $0.006000 of its max_spend_usd $0.006" in str(exc)
            break
        admitted += 1
        await spend.charge("fn", "judge", 1000, 500)
    assert admitted == 3  # spend before each call: 0, 0.002, 0.004 < 0.006; then 0.006 is not below it
    summary = await spend.summary()
    assert summary["pools"]["judge"]["spent_usd"] == pytest.approx(0.006, abs=0)


async def test_crossing_call_is_admitted_and_charged_in_full() -> None:
    spend = meter(MemorySpendLedger())
    await spend.admit("fn", 0.003, None)
    await spend.charge("fn", "judge", 1000, 500)  # 0.002 < 0.003: the next is admitted
    await spend.admit("fn", 0.003, None)
    await spend.charge("fn", "judge", 1000, 500)  # 0.004: crossed
    with pytest.raises(BudgetExhausted, match=r"fn has spent \$0.004000 of its max_spend_usd \$0.003"):
        await spend.admit("fn", 0.003, None)
    # another function still runs (its own cap is not reached; it names no capped pool)
    await spend.admit("other_fn", 0.003, None)


async def test_a_pool_learnt_from_charges_is_checked() -> None:
    spend = meter(MemorySpendLedger())
    for _ in range(3):
        await spend.admit("fn", None, None)  # names no pool: nothing to check yet
        await spend.charge("fn", "judge", 1000, 500)
    with pytest.raises(BudgetExhausted):
        await spend.admit("fn", None, None)  # it was charged on judge: judge's cap applies now


async def test_unpriced_pool_costs_nothing() -> None:
    ledger = MemorySpendLedger()
    await meter(ledger).charge("fn", "other", 10**6, 10**6)
    assert ledger.totals == {}


async def test_three_replicas_share_spend_through_redis(replicas: list[RedisBackend]) -> None:
    meters = [meter(spend_ledger_for(backend)) for backend in replicas]
    outcomes = []
    for i in range(6):  # round robin over the replicas, one call after another
        m = meters[i % 3]
        try:
            await m.admit(f"fn{i % 2}", None, "judge")
        except BudgetExhausted:
            outcomes.append("refused")
            continue
        await m.charge(f"fn{i % 2}", "judge", 1000, 500)
        outcomes.append("ok")
    assert outcomes == ["ok", "ok", "ok", "refused", "refused", "refused"]
    for m in meters:  # every replica sees the fleet-wide totals
        summary = await m.summary()
        assert summary["pools"]["judge"]["spent_usd"] == 0.006
        assert summary["functions"]["fn0"]["spent_usd"] == 0.004
        assert summary["functions"]["fn1"]["spent_usd"] == 0.002
