"""Idempotency: in-flight deduplication and a bounded result cache (LRU with a TTL).

A trainer that retries a sample whose answer was lost, or a GRPO group holding the same completion twice,
should not pay for a second judge call. The key of a sample (`idempotency` in the config):

- `"uid"` (default): function name + function version + the sample's `uid` + a digest of its inputs. The
  digest is there because verl's `uid` names a *prompt*, shared by every response of its group: the same uid
  with another response is another sample. Samples without a uid are not deduplicated.
- `"inputs"`: function name + version + the digest of the inputs, whatever the uid: equal samples share one
  call (assumes the function is deterministic for equal inputs).
- `"off"`.

The digest (BLAKE2b-128) covers data_source, solution_str, ground_truth, extra_info, prompt and images (and
the uid in `"uid"` mode): no client string is kept in a key, so the keys' memory is the same whatever clients
send. A function's new version changes the key, so a reloaded function is never answered from the old one's
results.

While a call is running, later requests with the same key wait for it and get its result. Only results with
status "ok" are cached (an error or a timeout may be transient; the next attempt calls again). An answer
served from the cache or from another request's call has `cached: true`; its `uid` is the caller's own.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Literal, Protocol

import orjson

from rewardfleet.services.gateway.metrics import GatewayMetrics
from rewardfleet.services.gateway.schemas import ScoreRequest, ScoreResult, canonical_json

IdempotencyMode = Literal["uid", "inputs", "off"]


def inputs_digest(request: ScoreRequest, with_uid: bool = False) -> bytes:
    """BLAKE2b-128 of the sample's inputs (and its uid, `with_uid`): the whole of a cache key's client part,
    so a key's size never depends on what the client sent (a 10 MB uid is 16 bytes here)."""
    h = hashlib.blake2b(digest_size=16)
    if with_uid:
        uid = str(request.uid).encode("utf-8", "surrogatepass")
        h.update(len(uid).to_bytes(8, "little"))
        _update(h, uid)
    for part in (
        request.data_source.encode("utf-8", "surrogatepass"),
        request.solution_str.encode("utf-8", "surrogatepass"),
        _value_bytes(request.ground_truth),
        _value_bytes(request.extra_info),
        _value_bytes(request.prompt),
        _value_bytes(request.images),
    ):
        h.update(len(part).to_bytes(8, "little"))  # length-prefixed: no two splits of one string collide
        _update(h, part)
    if request.messages is not None:  # two trajectories with one final answer are two samples
        data = _value_bytes(request.messages)
        h.update(len(data).to_bytes(8, "little"))
        _update(h, data)
    return h.digest()


# hashlib lets go of the GIL for an update of 2048 bytes or more. On the event loop that is a wait to get it
# back from the worker pool's threads (pebble's, pickling and piping calls): a 4.5 KB digest took 18 us
# instead of 6 beside one busy thread (micro-measured), and idempotency cost a GRPO step of single posts
# ~0.3 s of gateway CPU. Updates in pieces under that size keep the GIL; past `_RELEASE_OK` the hashing
# itself is long enough that one wait does not matter.
_GIL_KEPT_BYTES = 2047
_RELEASE_OK = 256 * 1024


def _update(h: Any, data: bytes) -> None:
    if len(data) <= _GIL_KEPT_BYTES or len(data) > _RELEASE_OK:
        h.update(data)
        return
    view = memoryview(data)
    for start in range(0, len(view), _GIL_KEPT_BYTES):
        h.update(view[start : start + _GIL_KEPT_BYTES])


# Tags that no JSON text starts with: a value's bytes below are unambiguous whichever form they take.
_STR_TAG = b"s"
_NULL = b"null"
_EMPTY_DICT = b"{}"


def _value_bytes(value: Any) -> bytes:
    """One byte string per JSON value, whatever the dict order: the common values without a JSON encoder (a
    string, null, an empty dict), containers by orjson with sorted keys (in C), and what orjson refuses (an
    integer beyond 64 bits, NaN kept apart from null) by `canonical_json`. Each form is a JSON text but the
    tagged string, and one JSON text decodes to one value, so two different values never share bytes."""
    if value is None:
        return _NULL
    if type(value) is str:
        return _STR_TAG + value.encode("utf-8", "surrogatepass")
    if type(value) is dict and not value:
        return _EMPTY_DICT
    if not _has_special_float(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            pass
    return canonical_json(value)


def _has_special_float(value: Any) -> bool:
    """True when a NaN or an infinity sits in `value` (orjson writes them as null): visits each value once,
    never reads a string."""
    if type(value) is float:
        return not math.isfinite(value)
    if not isinstance(value, dict | list):
        return False
    stack = [value]
    while stack:
        node = stack.pop()
        for child in node.values() if isinstance(node, dict) else node:
            if type(child) is float:
                if not math.isfinite(child):
                    return True
            elif isinstance(child, dict | list):
                stack.append(child)
    return False


class TTLCache:
    """An LRU of at most `max_entries` JSON texts, each valid for `ttl_s` after it was stored.

    Text, not the result objects: a full cache of results (65,536 by default, each a few container
    objects) would sit in the cyclic collector's oldest generation, and every full collection walked all
    of it (40-50 ms a time on a 2-core host, under load). A string is not tracked by the collector; a hit
    parses it again (~5 µs)."""

    def __init__(self, max_entries: int, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self.clock = clock  # injectable: tests move time instead of sleeping through the TTL
        self._data: OrderedDict[Hashable, tuple[float, str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable) -> str | None:
        item = self._data.get(key)
        if item is None:
            return None
        expires, value = item
        if expires < self.clock():
            del self._data[key]
            return None
        self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: str) -> None:
        self._data[key] = (self.clock() + self.ttl_s, value)
        self._data.move_to_end(key)
        while len(self._data) > self.max_entries:
            self._data.popitem(last=False)


class Results(Protocol):
    """Result cache + in-flight join (`ResultCache` in-process; cache/redis_cache.py fleet-wide)."""

    def key(self, request: ScoreRequest, fn_name: str, fn_version: str) -> Hashable | None: ...

    async def run(
        self, key: Hashable, request: ScoreRequest, compute: Callable[[], Awaitable[ScoreResult]]
    ) -> ScoreResult: ...


class ResultCache:
    def __init__(
        self, mode: IdempotencyMode, max_entries: int, ttl_s: float, metrics: GatewayMetrics
    ) -> None:
        self.mode = mode
        self.cache = TTLCache(max_entries, ttl_s)
        self.metrics = metrics
        self._inflight: dict[Hashable, asyncio.Future[ScoreResult]] = {}

    def key(self, request: ScoreRequest, fn_name: str, fn_version: str) -> Hashable | None:
        if self.mode == "off" or (self.mode == "uid" and request.uid is None):
            return None
        if self.mode == "uid":
            return (fn_name, fn_version, "uid", inputs_digest(request, with_uid=True))
        return (fn_name, fn_version, inputs_digest(request))

    @staticmethod
    def _as_cached(result: ScoreResult, request: ScoreRequest) -> ScoreResult:
        return result.model_copy(update={"uid": request.uid, "cached": True})

    async def run(
        self, key: Hashable, request: ScoreRequest, compute: Callable[[], Awaitable[ScoreResult]]
    ) -> ScoreResult:
        hit = self.cache.get(key)
        if hit is not None:
            self.metrics.result_cache_answered("hit")
            # A fresh object, this request's alone: set its two fields in place (no copy).
            answer = ScoreResult.model_validate_json(hit)
            answer.uid, answer.cached = request.uid, True
            return answer
        running = self._inflight.get(key)
        if running is not None:
            try:
                result = await asyncio.shield(running)
            except asyncio.CancelledError:
                if not running.cancelled():
                    raise  # this request was cancelled
                # the first request was cancelled (its client went away): compute here instead
            else:
                self.metrics.result_cache_answered("join")
                return self._as_cached(result, request)
        future: asyncio.Future[ScoreResult] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            result = await compute()
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # mark retrieved: nobody may be waiting
            raise
        finally:
            if self._inflight.get(key) is future:
                del self._inflight[key]
        future.set_result(result)
        if result.status == "ok" and self.cache.max_entries > 0:
            self.cache.put(key, result.model_dump_json())
        return result
