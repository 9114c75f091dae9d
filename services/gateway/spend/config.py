"""`pool_prices.<pool>`: what a judge pool's tokens cost, and an optional cap.

What a judge pool's tokens cost, and an optional hard cap on its spend (spend/meter.py;
docs/judge_monitoring.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PoolPrice(BaseModel):
    """Prices in US dollars per million tokens, as providers publish them. A fleet pool's price is whatever
    its GPU-hours are worth to you per token; an external pool's is the provider's list price."""

    model_config = ConfigDict(extra="forbid")

    input_usd_per_million_tokens: float = Field(ge=0, description="Price of prompt (input) tokens.")
    output_usd_per_million_tokens: float = Field(ge=0, description="Price of completion (output) tokens.")
    max_spend_usd: float | None = Field(
        default=None,
        gt=0,
        description="Hard cap on this pool's spend (all functions, fleet-wide with state_url): a call is "
        "admitted only while the spend so far is below it; past it, samples get BudgetExhausted.",
    )
