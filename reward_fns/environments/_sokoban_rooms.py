"""Seeded Sokoban rooms, dealt exactly as NeMo Gym's `grl_sokoban` deals them from the same seed.

The algorithm is gym-sokoban's (a random walk carves the room, targets and the player are placed, then a
depth-first search plays the game backwards from the solved room, pulling boxes off their targets, and keeps
the position that displaced them most; the player then wanders a few steps). NeMo Gym seeds Python's
`random` and NumPy's legacy `np.random` with the task's seed; here both streams are rebuilt without NumPy:
`random.Random(seed)` is Python's, and `LegacyNumpyRandom` is NumPy's `RandomState(seed).randint` (the same
Mersenne Twister, seeded as NumPy seeds it, bounded by the same masked rejection).

Cells: 0 wall, 1 floor, 2 target, 3 box on target, 4 box, 5 player.
"""

from __future__ import annotations

import hashlib
import random

Grid = list[list[int]]
Cell = tuple[int, int]

WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER = range(6)
# up, down, left, right: the order of gym-sokoban's CHANGE_COORDINATES
MOVES: tuple[Cell, ...] = ((-1, 0), (1, 0), (0, -1), (0, 1))
_WALK_DIRECTIONS: list[Cell] = [(1, 0), (0, 1), (-1, 0), (0, -1)]
_WALK_MASKS: list[Grid] = [
    [[0, 0, 0], [1, 1, 1], [0, 0, 0]],
    [[0, 1, 0], [0, 1, 0], [0, 1, 0]],
    [[0, 0, 0], [1, 1, 0], [0, 1, 0]],
    [[0, 0, 0], [1, 1, 0], [1, 1, 0]],
    [[0, 0, 0], [0, 1, 1], [0, 1, 0]],
]
_MAX_EXPLORED = 300_000


class RoomGenerationFailed(Exception):
    """This seed gives no usable room (too few free cells, or no box could be moved off its target)."""


class LegacyNumpyRandom:
    """`numpy.random.RandomState(seed).randint(n)`, without NumPy: its MT19937 seeding and masked bound."""

    def __init__(self, seed: int) -> None:
        key = [seed & 0xFFFFFFFF]
        for i in range(1, 624):
            previous = key[-1]
            key.append((1812433253 * (previous ^ (previous >> 30)) + i) & 0xFFFFFFFF)
        self._mt = random.Random()
        self._mt.setstate((3, (*key, 624), None))

    def randint(self, n: int) -> int:
        """An int in [0, n), n < 2**32."""
        bound = n - 1
        if bound == 0:
            return 0
        mask = (1 << bound.bit_length()) - 1
        while (draw := self._mt.getrandbits(32) & mask) > bound:
            pass
        return draw


def fallback_seed(seed: int) -> int:
    """The next seed to try when `seed` gives no room (NeMo Gym hashes `str(seed)` with Python's per-process
    salted `hash`, so its retry differs between processes; this one is the same everywhere)."""
    return int.from_bytes(hashlib.sha256(str(seed).encode()).digest()[:4], "big")


def generate_room(
    seed: int, dim: tuple[int, int], num_boxes: int, search_depth: int, tries: int = 4
) -> tuple[Grid, Grid]:
    """(the fixed room: walls, floor, targets; the room's state: boxes and player) for `seed`."""
    rng, numpy_rng = random.Random(seed), LegacyNumpyRandom(seed)
    walk_steps = int(1.7 * (dim[0] + dim[1]))
    for _ in range(tries):
        room = _place_targets_and_player(_carve(rng, dim, walk_steps), num_boxes, numpy_rng)
        fixed = [[FLOOR if cell == PLAYER else cell for cell in row] for row in room]
        start = [[BOX if cell == TARGET else cell for cell in row] for row in room]
        state, mapping = _play_backwards(start, fixed, search_depth)
        state = [[BOX if cell == BOX_ON_TARGET else cell for cell in row] for row in state]
        if (displacement := _displacement(mapping)) > 0:
            break
    if displacement == 0:
        raise RoomGenerationFailed(f"seed {seed}: no box could be moved off its target")
    _wander(rng, state, fixed, move_probability=0.8 if displacement == 1 else 0.5)
    return fixed, state


def cells(grid: Grid, value: int) -> list[Cell]:
    """The cells holding `value`, row by row (NumPy's `where` order)."""
    return [(r, c) for r, row in enumerate(grid) for c, cell in enumerate(row) if cell == value]


def _carve(rng: random.Random, dim: tuple[int, int], steps: int) -> Grid:
    rows, cols = dim
    direction = rng.sample(_WALK_DIRECTIONS, 1)[0]
    position = (rng.randint(1, rows - 1), rng.randint(1, cols - 1))
    level = [[0] * cols for _ in range(rows)]
    for _ in range(steps):
        if rng.random() < 0.35:
            direction = rng.sample(_WALK_DIRECTIONS, 1)[0]
        position = (
            max(min(position[0] + direction[0], rows - 2), 1),
            max(min(position[1] + direction[1], cols - 2), 1),
        )
        mask = rng.sample(_WALK_MASKS, 1)[0]
        for i in range(3):
            for j in range(3):
                level[position[0] - 1 + i][position[1] - 1 + j] += mask[i][j]
    return [
        [FLOOR if cell > 0 and 0 < r < rows - 1 and 0 < c < cols - 1 else WALL for c, cell in enumerate(row)]
        for r, row in enumerate(level)
    ]


def _place_targets_and_player(room: Grid, num_boxes: int, numpy_rng: LegacyNumpyRandom) -> Grid:
    free = cells(room, FLOOR)
    if len(free) <= num_boxes + 1:
        raise RoomGenerationFailed(f"{len(free)} free cells cannot hold a player and {num_boxes} boxes")
    r, c = free[numpy_rng.randint(len(free))]
    room[r][c] = PLAYER
    for _ in range(num_boxes):
        free = cells(room, FLOOR)
        r, c = free[numpy_rng.randint(len(free))]
        room[r][c] = TARGET
    return room


def _displacement(mapping: dict[Cell, Cell]) -> int:
    return sum(abs(t[0] - b[0]) + abs(t[1] - b[1]) for t, b in mapping.items())


def _pull(state: Grid, fixed: Grid, mapping: dict[Cell, Cell], last_pull: Cell, move: int) -> Cell:
    """One backwards move in place: the player steps, dragging a box that was behind it."""
    (r, c), (dr, dc) = cells(state, PLAYER)[0], MOVES[move]
    if state[r + dr][c + dc] not in (FLOOR, TARGET):
        return last_pull
    state[r][c] = fixed[r][c]
    state[r + dr][c + dc] = PLAYER
    br, bc = r - dr, c - dc
    if state[br][bc] in (BOX_ON_TARGET, BOX):
        state[r][c] = BOX_ON_TARGET
        state[br][bc] = fixed[br][bc]
        for target, at in mapping.items():
            if at == (br, bc):
                mapping[target] = (r, c)
                last_pull = target
    return last_pull


def _play_backwards(start: Grid, fixed: Grid, depth: int) -> tuple[Grid, dict[Cell, Cell]]:
    targets = cells(fixed, TARGET)
    mapping = {t: t for t in targets}
    explored: set[bytes] = set()
    best_score, best_state, best_mapping = -1, [row[:] for row in start], dict(mapping)
    stack = [(start, mapping, 0, (-1, -1), depth)]
    while stack:
        state, mapping, swaps, last_pull, ttl = stack.pop()
        ttl -= 1
        if ttl <= 0 or len(explored) >= _MAX_EXPLORED:
            continue
        key = bytes(cell for row in state for cell in row)
        if key in explored:
            continue
        score = swaps * _displacement(mapping) if len(cells(state, TARGET)) == len(targets) else 0
        if score > best_score:
            best_score, best_state, best_mapping = score, [row[:] for row in state], dict(mapping)
        explored.add(key)
        for move in range(4):
            next_state, next_mapping = [row[:] for row in state], dict(mapping)
            pulled = _pull(next_state, fixed, next_mapping, last_pull, move)
            stack.append((next_state, next_mapping, swaps + (pulled != last_pull), pulled, ttl))
    return best_state, best_mapping


def _wander(
    rng: random.Random, state: Grid, fixed: Grid, move_probability: float, max_steps: int = 3
) -> None:
    if rng.random() > move_probability:
        return
    position = cells(state, PLAYER)[0]
    visited = [position]
    for taken in range(1, max_steps + 1):
        options = []
        for dr, dc in MOVES:
            nxt = (position[0] + dr, position[1] + dc)
            if state[nxt[0]][nxt[1]] in (FLOOR, TARGET) and nxt not in visited:
                options.append(nxt)
        if not options:
            return
        nxt = rng.choice(options)
        state[position[0]][position[1]] = fixed[position[0]][position[1]]
        state[nxt[0]][nxt[1]] = PLAYER
        position = nxt
        visited.append(position)
        if taken >= max_steps or rng.random() > 0.5:
            return
