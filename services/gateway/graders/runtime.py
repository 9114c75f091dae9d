"""Checking and running declarative graders.

`GraderRuntime.problems(spec)` lists what would stop a grader from ever working (a python path that does not
import, a pool with no router, a `multi` naming an unknown grader); `run(spec, sample)` grades one sample and
returns `(score, extra)` or raises `GraderError` (bad input) / the model pool's call error;
`timeout_s(spec)` is the limit a grader's call runs under. A reload builds a new runtime (python graders
follow an edited file).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns import judge, similarity
from rewardfleet.reward_fns.contract import GenerationSettings, VerdictSettings
from rewardfleet.services.gateway.errors import GraderError, InvalidReturn
from rewardfleet.services.gateway.execution.contain import awaited, in_thread
from rewardfleet.services.gateway.execution.loader import parse_ref, resolve
from rewardfleet.services.gateway.execution.results import normalise_return
from rewardfleet.services.gateway.graders import text
from rewardfleet.services.gateway.graders.config import (
    TEMPLATE_RE,
    GraderSpec,
    MultiGrader,
    PythonGrader,
    ScoreModel,
    StringCheck,
    TextSimilarity,
)
from rewardfleet.services.gateway.graders.formula import Formula
from rewardfleet.services.gateway.schemas import ScoreRequest

MAX_MULTI_DEPTH = 8


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _lookup(path: str, sample: ScoreRequest) -> Any:
    root, _, rest = path.partition(".")
    if root == "sample":
        return sample.solution_str
    head, *tail = rest.split(".")
    if head == "ground_truth" and not tail:
        return sample.ground_truth
    if head == "data_source" and not tail:
        return sample.data_source
    if head == "prompt" and not tail:
        return sample.prompt
    value: Any = sample.extra_info
    for key in [head, *tail]:
        if not isinstance(value, Mapping) or key not in value:
            raise GraderError(f"{{{{ {path} }}}}: the sample's extra_info has no {key!r}")
        value = value[key]
    return value


def render(template: str, sample: ScoreRequest) -> str:
    return TEMPLATE_RE.sub(lambda m: _as_text(_lookup(m.group(1), sample)), template)


class GraderRuntime:
    def __init__(
        self,
        graders: Mapping[str, GraderSpec],
        router_addresses: Mapping[str, str] | Callable[[], Mapping[str, str]],
        reward_router_address: str | None,
        http_client: aiohttp.ClientSession | None,
    ) -> None:
        self.graders = dict(graders)
        if callable(router_addresses):
            self._addresses = router_addresses
        else:
            fixed = dict(router_addresses)
            self._addresses = lambda: fixed
        self.reward_router_address = reward_router_address
        self.http_client = http_client
        self._python: dict[str, Callable[..., Any]] = {}

    @property
    def router_addresses(self) -> Mapping[str, str]:
        """The pools' addresses as of this call: with tenants, external pools' forwarding addresses name the
        calling tenant (tenants/pool_tokens.py), so a grader's spend is charged to it."""
        return self._addresses()

    # ---- checks -------------------------------------------------------------------------------------------
    def problems(self, spec: GraderSpec, where: str = "grader", depth: int = 0) -> list[str]:
        if depth > MAX_MULTI_DEPTH:
            return [f"{where}: multi graders nest deeper than {MAX_MULTI_DEPTH} (a cycle?)"]
        if isinstance(spec, PythonGrader):
            try:
                self._load_python(spec.path)
            except Exception as exc:
                return [f"{where}.path {spec.path!r}: {type(exc).__name__}: {exc}"]
        elif isinstance(spec, ScoreModel) or (
            isinstance(spec, TextSimilarity) and spec.evaluation_metric == "cosine"
        ):
            if spec.pool not in self.router_addresses and self.reward_router_address is None:
                return [
                    f"{where}.pool: no router named {spec.pool!r} (routers: {sorted(self.router_addresses)})"
                ]
        elif isinstance(spec, MultiGrader):
            found: list[str] = []
            for name, sub in spec.graders.items():
                if isinstance(sub, str):
                    if sub not in self.graders:
                        found.append(f"{where}.graders.{name}: no grader named {sub!r} in graders")
                        continue
                    sub = self.graders[sub]
                found += self.problems(sub, f"{where}.graders.{name}", depth + 1)
            return found
        return []

    def timeout_s(self, spec: GraderSpec, depth: int = 0) -> float:
        """The grader's own time limit: a multi grader runs its graders at once, so its limit is theirs."""
        if isinstance(spec, MultiGrader):
            if depth > MAX_MULTI_DEPTH:
                return 0.0
            subs = [self.graders.get(s) if isinstance(s, str) else s for s in spec.graders.values()]
            return max((self.timeout_s(s, depth + 1) for s in subs if s is not None), default=0.0)
        return float(getattr(spec, "timeout_s", 0.0))

    def code_versions(self, spec: GraderSpec, depth: int = 0) -> list[str]:
        """What a grader's version depends on besides its spec: the (content-addressed) module of each python
        grader in it, so an edited grader file is a new version."""
        if isinstance(spec, PythonGrader):
            return [parse_ref(spec.path).module]
        if isinstance(spec, MultiGrader) and depth <= MAX_MULTI_DEPTH:
            subs = [self.graders.get(s) if isinstance(s, str) else s for s in spec.graders.values()]
            return [v for s in subs if s is not None for v in self.code_versions(s, depth + 1)]
        return []

    def _load_python(self, path: str) -> Callable[..., Any]:
        """Loaded once per runtime: a reload builds a new runtime; the loader names an edited file anew."""
        fn = self._python.get(path)
        if fn is None:
            _, _, fn = resolve(path)
            params = inspect.signature(fn).parameters
            if not {"sample", "item"} <= set(params) and not any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
            ):
                raise TypeError("a python grader is called as grade(sample=..., item=...)")
            self._python[path] = fn
        return fn

    # ---- running ------------------------------------------------------------------------------------------
    async def run(
        self, spec: GraderSpec, sample: ScoreRequest, depth: int = 0
    ) -> tuple[float, dict[str, Any]]:
        if isinstance(spec, StringCheck):
            return self._string_check(spec, sample)
        if isinstance(spec, TextSimilarity):
            return await self._text_similarity(spec, sample)
        if isinstance(spec, ScoreModel):
            return await self._score_model(spec, sample)
        if isinstance(spec, PythonGrader):
            return await self._python_grade(spec, sample)
        return await self._multi(spec, sample, depth)

    def _string_check(self, spec: StringCheck, sample: ScoreRequest) -> tuple[float, dict[str, Any]]:
        got, ref = render(spec.input, sample), render(spec.reference, sample)
        op = spec.operation
        if op == "eq":
            ok = got == ref
        elif op == "ne":
            ok = got != ref
        elif op == "like":
            ok = ref in got
        else:
            ok = ref.lower() in got.lower()
        return (1.0 if ok else 0.0), {"operation": op}

    async def _text_similarity(
        self, spec: TextSimilarity, sample: ScoreRequest
    ) -> tuple[float, dict[str, Any]]:
        got, ref = render(spec.input, sample), render(spec.reference, sample)
        metric = spec.evaluation_metric
        if metric == "cosine":
            out = await similarity.compute_score(
                sample.data_source,
                got,
                ref,
                None,
                reward_router_address=self.reward_router_address,
                router_addresses=self.router_addresses,
                http_client=self.http_client,
                pool=spec.pool,
                model=spec.model,
                rescale="none",  # OpenAI's `cosine` metric is the raw cosine
                timeout_s=spec.timeout_s,
            )
            score = float(out["score"])
        elif metric == "fuzzy_match":
            score = text.fuzzy_match(got, ref)
        elif metric == "bleu":
            score = text.bleu(got, ref)
        elif metric == "rouge_l":
            score = text.rouge_l(got, ref)
        else:
            score = text.rouge_n(got, ref, int(metric.rsplit("_", 1)[1]))
        extra: dict[str, Any] = {"evaluation_metric": metric}
        if spec.pass_threshold is not None:
            extra["passed"] = score >= spec.pass_threshold
        return score, extra

    async def _score_model(self, spec: ScoreModel, sample: ScoreRequest) -> tuple[float, dict[str, Any]]:
        out = await judge.compute_score(
            sample.data_source,
            render(spec.input, sample),
            render(spec.reference, sample),
            sample.extra_info,
            reward_router_address=self.reward_router_address,
            router_addresses=self.router_addresses,
            http_client=self.http_client,
            prompt=sample.prompt,
            pool=spec.pool,
            template=spec.template,
            model=spec.model,
            timeout_s=spec.timeout_s,
            generation=GenerationSettings(max_tokens=spec.max_tokens, temperature=spec.temperature),
            verdict=VerdictSettings(
                user_template=spec.user_template,
                system_prompt=spec.system_prompt,
                rubric=spec.rubric,
                scale_min=spec.scale_min,
                scale_max=spec.scale_max,
            ),
        )
        low, high = spec.range
        score = low + float(out.pop("score")) * (high - low)
        if spec.pass_threshold is not None:
            out["passed"] = score >= spec.pass_threshold
        return score, out

    async def _python_grade(self, spec: PythonGrader, sample: ScoreRequest) -> tuple[float, dict[str, Any]]:
        fn = self._load_python(spec.path)
        sample_arg = {"output_text": sample.solution_str}
        item = {
            **sample.extra_info,
            "ground_truth": sample.ground_truth,
            "data_source": sample.data_source,
            "prompt": sample.prompt,
        }
        async with asyncio.timeout(spec.timeout_s):
            if inspect.iscoroutinefunction(fn):
                value = await awaited(fn(sample=sample_arg, item=item))
            else:  # a thread: it cannot be killed on timeout, only abandoned (docs/advanced_rewards.md)
                value = await in_thread(fn, sample=sample_arg, item=item)
        score, extra = normalise_return(value)
        if score is None:  # a grader's python returns a score, never only per-step scores
            raise InvalidReturn("a python grader must return a score, not only step_scores/turn_scores")
        return score, extra

    async def _multi(
        self, spec: MultiGrader, sample: ScoreRequest, depth: int
    ) -> tuple[float, dict[str, Any]]:
        if depth > MAX_MULTI_DEPTH:
            raise GraderError(f"multi graders nest deeper than {MAX_MULTI_DEPTH}")
        names = list(spec.graders)
        subs = [self.graders[s] if isinstance(s, str) else s for s in spec.graders.values()]
        results = await asyncio.gather(*(self.run(s, sample, depth + 1) for s in subs))
        values = {name: score for name, (score, _) in zip(names, results, strict=True)}
        formula = Formula(spec.calculate_output, frozenset(names))
        try:
            score = formula.evaluate(values)
        except ValueError as exc:
            raise GraderError(str(exc)) from None
        return score, {"graders": values}
