"""The pure parts of the pairwise group judge: pairs, outcomes and scores.

Which pairs to compare (per mode), how two ordered verdicts make one outcome, and how outcomes make scores
(win rate, Bradley-Terry). No I/O here.

Modes and judge calls for a group of N (double them with `swap`):

- `all_pairs`: every pair, N(N-1)/2 — the most information, quadratic cost;
- `circular`: each member against the next (i, i+1 mod N), N pairs (1 for N=2) — every member is compared
  twice, linear cost;
- `swiss`: `rounds` rounds (default ceil(log2 N)), each pairing members of equal standing that have not met,
  about N/2 pairs a round — N/2 * rounds pairs; rounds run one after another (a round's pairing depends on
  the last), so its wall time is `rounds` comparisons, not one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MODES = ("all_pairs", "circular", "swiss")
AGGREGATES = ("win_rate", "bradley_terry")
Pair = tuple[int, int]


def scheduled_pairs(mode: str, members: Sequence[int]) -> list[Pair]:
    """The pairs a one-shot mode compares, over the member indices `members` (in order)."""
    n = len(members)
    if mode == "all_pairs":
        return [(members[a], members[b]) for a in range(n) for b in range(a + 1, n)]
    if mode == "circular":
        if n == 2:
            return [(members[0], members[1])]
        return [(members[a], members[(a + 1) % n]) for a in range(n)] if n > 2 else []
    raise ValueError(f"mode {mode!r} is not one-shot; one of {MODES}")


def swiss_rounds(n: int, rounds: int | None) -> int:
    return rounds if rounds is not None else max(1, math.ceil(math.log2(n))) if n > 1 else 0


def swiss_pairing(members: Sequence[int], standing: dict[int, float], met: set[Pair]) -> list[Pair]:
    """One Swiss round: members sorted by standing (then index) and paired greedily with the nearest member
    they have not met; with an odd count the lowest left over sits out."""
    order = sorted(members, key=lambda m: (-standing.get(m, 0.0), m))
    pairs: list[Pair] = []
    free = list(order)
    while len(free) > 1:
        first = free.pop(0)
        partner = next((m for m in free if (min(first, m), max(first, m)) not in met), free[0])
        free.remove(partner)
        pairs.append((min(first, partner), max(first, partner)))
    return pairs


def combine(first: str, second: str | None) -> tuple[str, bool]:
    """One pair's outcome from its verdicts, both in the pair's own terms ("first", "second", "tie"):
    `second` is the swapped call's verdict already mapped back, or None without swap. Verdicts that disagree
    are a tie, and the second value says they disagreed (the judge's position bias)."""
    if second is None or first == second:
        return first, False
    return "tie", True


@dataclass
class Tally:
    """One member's record: judge calls that involved it, outcomes, failures."""

    comparisons: int = 0
    wins: int = 0
    losses: int = 0
    ties: int = 0
    failed: int = 0
    swap_disagreements: int = 0
    last_error: str = ""

    @property
    def decided(self) -> int:
        return self.wins + self.losses + self.ties


def win_rates(tallies: dict[int, Tally]) -> dict[int, float]:
    """(wins + ties/2) / decided pairs, for members with a decided pair."""
    return {m: (t.wins + 0.5 * t.ties) / t.decided for m, t in tallies.items() if t.decided}


def bradley_terry(n: int, outcomes: Sequence[tuple[int, int, str]], alpha: float = 0.01) -> list[float]:
    """Bradley-Terry log-strengths by choix's ILSR (`alpha` regularises: a member that won everything stays
    finite). A tie counts as half a win each way (one win each way, which weighs the same against the
    decided pairs counted twice). choix is the `groups` extra: without it this aggregate is an error that
    says so (the default, `win_rate`, needs nothing)."""
    try:
        import choix
    except ImportError as exc:
        raise RuntimeError(
            "aggregate bradley_terry needs the choix package: pip install 'reward-fleet[groups]'"
        ) from exc

    data: list[tuple[int, int]] = []
    for a, b, result in outcomes:
        if result == "first":
            data += [(a, b), (a, b)]
        elif result == "second":
            data += [(b, a), (b, a)]
        else:
            data += [(a, b), (b, a)]
    if not data:
        return [0.0] * n
    return [float(v) for v in choix.ilsr_pairwise(n, data, alpha=alpha)]


def min_max(values: dict[int, float]) -> dict[int, float]:
    """Values scaled to [0, 1] within the group; all equal (or one) -> 0.5 each."""
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high - low < 1e-9:
        return {m: 0.5 for m in values}
    return {m: (v - low) / (high - low) for m, v in values.items()}
