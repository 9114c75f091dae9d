"""GenRM: an LLM judge, reached through the `judge` pool's sglang-router, scores the response in [0, 1].

Three methods (reward_kwargs `method`):

- `verdict` (default): the template's question, answered by generation — `POST /v1/chat/completions`, or with
  `generation.use_generate` the chat rendered with the judge's tokenizer (`reward_model_tokenizer`) and
  `POST /generate {"input_ids", "sampling_params"}` (SGLang's native route, as verl's FAPO recipe does);
- `probability`: no generation; `POST /v1/score` with the "Yes"/"No" label-token ids and score
  P(Yes) / (P(Yes) + P(No)). The router does not proxy `/v1/score`, so this goes straight to the pool's
  model servers, named by `probability.score_server_address` (one `host:port`, a list, or a comma-separated
  string): one is picked at random and the call fails over to the next on a connect error, a timeout or a
  5xx. The chat is sent as token ids rendered by the judge's tokenizer without adding special tokens: SGLang
  tokenises text `query`/`items` with special tokens, so a template that writes its own BOS (Llama 3) would
  get a second one; token ids are used as given;
- `answer_match`: the response's final answer is found and compared with the reference by rule
  (`_answer_match`); the model is asked only which of the response's numbers is its final answer
  (constrained to them) or, for free text the rule cannot settle, for the template's verdict. The embedded
  default fleet uses it: a 135 M model's own verdict carries no signal.

Settings come in groups (`settings.py`): `generation`, `verdict`, `probability`, and `guards`
(`guards.py`: empty, opener-only and over-long answers are scored without a judge call).

Constrained verdicts (`verdict.constrain`, on by default): the request carries SGLang's `regex` (a
top-level field of the chat request, `sampling_params.regex` on `/generate`) from `_verdict_grammar`, so a
backend that constrains decoding (SGLang, our CPU model server) can only answer in the format the parser
reads. Set it to False for a backend that rejects unknown fields; the free-text parser reads either answer.

The verdict is parsed by `_verdicts.parse_verdict`; a judge that cannot be read, or a call that fails, raises
(`VerdictParseError`, `JudgeTruncatedError`, `JudgeCallError`, `JudgeConfigError`) and never scores 0.
Extras keep the raw verdict and the judge's text, with the same keys for every sample of one configuration.

Images (`images`, and `image_url` parts of the `prompt` messages) go to the judge as `image_url` parts of
its chat request (`_judge_images`): a VLM pool sees them. Only the chat route carries them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.answer_match import (
    decide,
    number_choice_messages,
    number_choice_regex,
    number_strings,
    pick_value,
    reference_number,
)
from rewardfleet.reward_fns.judging.guards import GuardSettings, GuardSettingsError, check_answer
from rewardfleet.reward_fns.judging.images import image_parts, with_images
from rewardfleet.reward_fns.judging.seed import routing_headers, sample_seed
from rewardfleet.reward_fns.judging.settings import (
    GenerationSettings,
    JudgeSettingsError,
    ProbabilitySettings,
    VerdictSettings,
    settings_from,
)
from rewardfleet.reward_fns.judging.templates import (
    DEFAULT_RUBRIC,
    JudgeTemplate,
    TemplateError,
    as_text,
    get_template,
    number_steps,
    problem_text,
)
from rewardfleet.reward_fns.judging.verdict_grammar import verdict_regex
from rewardfleet.reward_fns.judging.verdicts import Verdict, VerdictParseError, parse_verdict
from rewardfleet.services.common.router_http import RemoteCallError, post_json, resolve_address

DATA_SOURCES: tuple[str, ...] = ()

# verdict: the template's question, the model's verdict. answer_match: the response's final answer found and
# compared by rule (_answer_match.py); the model only picks the final answer among the response's numbers, or
# gives its verdict on free text the rule cannot settle.
METHODS = ("verdict", "probability", "answer_match")


class JudgeCallError(RemoteCallError):
    """The judge's router or server did not answer with a usable 2xx (see `RemoteCallError.kind`)."""


class JudgeTruncatedError(VerdictParseError):
    """The judge hit its token limit (`finish_reason: length`) before stating a verdict."""


class JudgeConfigError(ValueError):
    """The reward_kwargs or the sample do not allow this judge call (missing tokenizer, address, field...)."""


@dataclass(frozen=True)
class JudgeReply:
    text: str
    finish_reason: str
    usage: dict[str, int] = field(default_factory=dict)  # OpenAI-shaped token counts, when the server says


def _usage(prompt: Any, completion: Any) -> dict[str, int]:
    """`{"prompt_tokens", "completion_tokens", "total_tokens"}`, or {} if the counts are missing: the gateway
    charges a function's TPM budget with these real counts (`extra["usage"]`)."""
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return {}
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def total_usage(replies: Sequence[JudgeReply]) -> dict[str, int]:
    if not replies or any(not r.usage for r in replies):
        return {}
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {k: sum(r.usage[k] for r in replies) for k in keys}


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where and how to ask a judge: the per-call settings shared by `judge` and `rule_then_judge`."""

    session: aiohttp.ClientSession | None
    address: str
    model: str = "default"
    use_generate: bool = False
    tokenizer: Any = None
    max_tokens: int = 1024
    temperature: float = 0.0
    timeout_s: float = 120.0
    regex: str | None = None  # constrain the output to this regex (SGLang's `regex` sampling parameter)
    # Seed each call from (seed_key, messages) (`judging/seed.py`); seed_key is the sample's uid, or "".
    sampling_seed: bool = True
    seed_key: str | None = None


async def ask_judge(endpoint: JudgeEndpoint, messages: list[dict[str, Any]]) -> JudgeReply:
    """One judge generation for `messages`, through the router."""
    if endpoint.use_generate:
        return await _ask_generate(endpoint, messages)
    payload = {
        "model": endpoint.model,
        "messages": messages,
        "max_tokens": endpoint.max_tokens,
        "temperature": endpoint.temperature,
    }
    if endpoint.regex is not None:
        payload["regex"] = endpoint.regex
    seed = sample_seed(endpoint.seed_key, messages)
    if endpoint.sampling_seed:
        payload["seed"] = seed
    body = await post_json(
        endpoint.session,
        endpoint.address,
        "/v1/chat/completions",
        payload,
        timeout_s=endpoint.timeout_s,
        error_cls=JudgeCallError,
        headers=routing_headers(seed),
    )
    try:
        choice = body["choices"][0]
        content = choice["message"]["content"]
        finish = str(choice.get("finish_reason") or "")
    except (KeyError, IndexError, TypeError) as exc:
        raise _bad_response(endpoint, "/v1/chat/completions", body, "no choices[0].message.content") from exc
    if not isinstance(content, str):
        # A reasoning parser on the server may have moved everything into `reasoning_content`.
        raise _bad_response(endpoint, "/v1/chat/completions", body, "message.content is not text")
    reported = body.get("usage")
    usage: Mapping[str, Any] = reported if isinstance(reported, Mapping) else {}
    return JudgeReply(
        text=content,
        finish_reason=finish,
        usage=_usage(usage.get("prompt_tokens"), usage.get("completion_tokens")),
    )


async def _ask_generate(endpoint: JudgeEndpoint, messages: list[dict[str, Any]]) -> JudgeReply:
    tokenizer = _require_tokenizer(endpoint.tokenizer, "use_generate=True")
    input_ids = await asyncio.to_thread(_chat_token_ids, tokenizer, messages)
    sampling: dict[str, Any] = {"max_new_tokens": endpoint.max_tokens, "temperature": endpoint.temperature}
    if endpoint.regex is not None:
        sampling["regex"] = endpoint.regex
    seed = sample_seed(endpoint.seed_key, messages)
    if endpoint.sampling_seed:
        sampling["sampling_seed"] = seed
    payload = {"input_ids": input_ids, "sampling_params": sampling}
    body = await post_json(
        endpoint.session,
        endpoint.address,
        "/generate",
        payload,
        timeout_s=endpoint.timeout_s,
        error_cls=JudgeCallError,
        headers=routing_headers(seed),
    )
    if not isinstance(body, Mapping):
        raise _bad_response(endpoint, "/generate", body, "expected one JSON object")
    text = body.get("text")
    if not isinstance(text, str):
        output_ids = body.get("output_ids")
        if not isinstance(output_ids, list):
            raise _bad_response(endpoint, "/generate", body, "neither text nor output_ids")
        # A server started with --skip-tokenizer-init answers with ids only.
        text = await asyncio.to_thread(tokenizer.decode, output_ids, skip_special_tokens=True)
    meta_info = body.get("meta_info")
    meta: Mapping[str, Any] = meta_info if isinstance(meta_info, Mapping) else {}
    finish = meta.get("finish_reason") or {}
    return JudgeReply(
        text=str(text),
        finish_reason=str(finish.get("type", "")) if isinstance(finish, dict) else "",
        usage=_usage(meta.get("prompt_tokens"), meta.get("completion_tokens")),
    )


def _chat_token_ids(tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    if isinstance(ids, Mapping):  # transformers 5 returns a BatchEncoding by default
        ids = ids["input_ids"]
    return [int(i) for i in ids]


def read_verdict(reply: JudgeReply, template: JudgeTemplate, scale_min: float, scale_max: float) -> Verdict:
    try:
        return parse_verdict(reply.text, template.verdict_kind, scale_min=scale_min, scale_max=scale_max)
    except VerdictParseError as exc:
        if reply.finish_reason == "length":
            raise JudgeTruncatedError(f"judge output cut at max_tokens: {exc}", reply.text) from exc
        raise


def _bad_response(endpoint: JudgeEndpoint, path: str, body: Any, what: str) -> JudgeCallError:
    shown = str(body)[:500]
    url = f"{endpoint.address}{path}"
    return JudgeCallError(
        f"unusable answer from {url}: {what}: {shown}", url=url, kind="bad_response", body=shown
    )


def _require_tokenizer(tokenizer: Any, why: str) -> Any:
    if tokenizer is None:
        raise JudgeConfigError(
            f"{why} needs the judge's tokenizer: configure the pool's model so the gateway "
            "injects reward_model_tokenizer"
        )
    return tokenizer


# --- probability mode --------------------------------------------------------------------------------


async def judge_probability(
    endpoint: JudgeEndpoint,
    score_server_address: str | Sequence[str],
    messages: list[dict[str, Any]],
    label_tokens: Sequence[str],
) -> tuple[float, float, float]:
    """(score, p_yes, p_no) from a model server's `/v1/score` for the next token after the rendered chat."""
    tokenizer = _require_tokenizer(endpoint.tokenizer, "probability=True")
    if len(label_tokens) != 2:
        raise JudgeConfigError(f"label_tokens must be [positive, negative], got {list(label_tokens)}")
    query, item, label_ids = await asyncio.to_thread(_score_inputs, tokenizer, messages, label_tokens)
    payload = {
        "model": endpoint.model,
        "query": query,
        "items": [item],
        "label_token_ids": label_ids,
        "apply_softmax": True,
    }
    body = await _post_score(endpoint, score_addresses(score_server_address), payload)
    try:
        p_yes, p_no = (float(p) for p in body["scores"][0])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise _bad_response(endpoint, "/v1/score", body, "expected scores: [[p_yes, p_no]]") from exc
    total = p_yes + p_no
    if not (0.0 <= p_yes <= 1.0 and 0.0 <= p_no <= 1.0) or total <= 0.0:
        raise _bad_response(endpoint, "/v1/score", body, "label probabilities outside [0, 1] or both zero")
    return p_yes / total, p_yes, p_no


def score_addresses(value: str | Sequence[str]) -> list[str]:
    """`host:port`, `"a:1, b:2"` or `["a:1", "b:2"]` as a list of addresses."""
    items = value.split(",") if isinstance(value, str) else list(value)
    out = [str(a).strip() for a in items if str(a).strip()]
    if not out:
        raise JudgeConfigError("score_server_address names no model server")
    return out


async def _post_score(endpoint: JudgeEndpoint, addresses: list[str], payload: dict[str, Any]) -> Any:
    """The router does not proxy /v1/score, so this is the failover it would do: start at a random server
    (spreading the load) and move on after a connect error, a timeout or a 5xx; a 4xx is the request's fault
    and is raised at once. Every server failing raises the last error, naming how many were tried."""
    start = random.randrange(len(addresses))
    order = addresses[start:] + addresses[:start]
    last: JudgeCallError | None = None
    for address in order:
        try:
            return await post_json(
                endpoint.session, address, "/v1/score", payload, timeout_s=endpoint.timeout_s,
                error_cls=JudgeCallError,
            )  # fmt: skip
        except JudgeCallError as exc:
            if exc.kind == "http_status" and exc.status is not None and exc.status < 500:
                raise
            last = exc
    if last is None:
        raise JudgeConfigError("score_server_address names no model server")
    if len(order) > 1:
        raise JudgeCallError(
            f"/v1/score failed on all {len(order)} model servers; last: {last}",
            url=last.url, kind=last.kind, status=last.status, body=last.body,
        )  # fmt: skip
    raise last


def _score_inputs(
    tokenizer: Any, messages: list[dict[str, Any]], labels: Sequence[str]
) -> tuple[list[int], list[int], list[int]]:
    """Token ids of (query, item, labels). Query = the chat without the assistant header, item = the header:
    SGLang scores the next token after query + item, i.e. the first token of the judge's answer. The chat
    template writes any BOS itself, so the text is tokenised without adding special tokens."""
    label_ids = []
    for label in labels:
        ids = tokenizer.encode(label, add_special_tokens=False)
        if len(ids) != 1:
            raise JudgeConfigError(f"label {label!r} is {len(ids)} tokens for this tokenizer; it must be one")
        label_ids.append(int(ids[0]))
    full_text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    head_text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    full = [int(t) for t in tokenizer.encode(full_text, add_special_tokens=False)]
    head = [int(t) for t in tokenizer.encode(head_text, add_special_tokens=False)]
    if len(full) > len(head) and full[: len(head)] == head:
        return head, full[len(head) :], label_ids
    # No separate assistant header (or it merges with the chat's last token): split off the last token.
    return full[:-1], full[-1:], label_ids


# --- the reward function --------------------------------------------------------------------------------


def template_values(
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    prompt: Any,
    rubric: str | None,
) -> dict[str, str | None]:
    reference = as_text(ground_truth)
    info = extra_info or {}
    return {
        "problem": problem_text(prompt, extra_info),
        "response": solution_str,
        "reference": reference,
        "rubric": rubric or as_text(info.get("rubric")) or DEFAULT_RUBRIC,
        "steps": number_steps(solution_str),
        # Pairwise: the response is compared with a reference *response*, else with the ground truth.
        "other_response": as_text(info.get("reference_response")) or reference,
    }


def _pairwise_values(values: Mapping[str, str | None], response_first: bool) -> dict[str, str | None]:
    ours, theirs = values["response"], values["other_response"]
    a, b = (ours, theirs) if response_first else (theirs, ours)
    return {**values, "response_a": a, "response_b": b}


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    reward_model_tokenizer: Any = None,
    prompt: Any = None,
    images: Sequence[str] | None = None,
    uid: str | None = None,
    pool: str = "judge",
    model: str = "default",
    method: str = "verdict",
    template: str | None = None,
    timeout_s: float = 120.0,
    generation: GenerationSettings | Mapping[str, Any] | None = None,
    verdict: VerdictSettings | Mapping[str, Any] | None = None,
    probability: ProbabilitySettings | Mapping[str, Any] | None = None,
    guards: GuardSettings | Mapping[str, Any] | bool | None = None,
) -> dict[str, Any]:
    """Score `solution_str` with an LLM judge; see the module docstring and docs/remote_reward_fns.md.

    Returns {"score": 0..1, "judge_verdict": str, "judge_verdict_source": str, "judge_response": str,
    "judge_template": str, "judge_pool": str, "usage": {prompt/completion/total tokens} or {}, "guard": ""}
    (method probability: verdict "p_yes=…", source "probability", response "", no pool, no usage; method
    answer_match: also "judge_answer", the final answer read). When an answer trips a guard (`guards`):
    the guards' `score` without a judge call, the guard's name in "guard", source "guard", other keys empty.
    """
    settings = JudgeSettings.build(method, template, generation, verdict, probability, guards)
    try:
        address = resolve_address(pool, router_addresses, reward_router_address)
    except ValueError as exc:
        raise JudgeConfigError(str(exc)) from exc
    tmpl, gen, ver = settings.template, settings.generation, settings.verdict
    by_probability = settings.method == "probability"
    shown = image_parts(images, prompt)  # the sample's images, for a VLM judge (_judge_images.py)
    if shown and (by_probability or gen.use_generate):
        raise JudgeConfigError(
            "this sample has images; only the chat route (/v1/chat/completions) carries them: not method "
            "probability or generation.use_generate"
        )
    tripped = check_answer(solution_str, settings.guards)
    if tripped is not None:
        guarded: dict[str, Any] = {
            "score": float(settings.guards.score),
            "judge_verdict": "",
            "judge_verdict_source": "guard",
            "judge_response": "",
            "judge_template": tmpl.name,
            "guard": tripped,
        }
        if settings.method == "answer_match":
            guarded["judge_answer"] = ""
        return guarded if by_probability else {**guarded, "judge_pool": pool, "usage": {}}
    regex = None
    if ver.constrain:
        regex = verdict_regex(
            tmpl, scale_min=ver.scale_min, scale_max=ver.scale_max, max_tokens=gen.max_tokens,
            reasoning_chars=ver.reasoning_chars, line=ver.line,
        )  # fmt: skip
    endpoint = JudgeEndpoint(
        session=http_client,
        address=address,
        model=model,
        use_generate=gen.use_generate,
        tokenizer=reward_model_tokenizer,
        max_tokens=gen.max_tokens,
        temperature=gen.temperature,
        timeout_s=timeout_s,
        regex=regex,
        sampling_seed=gen.sampling_seed,
        seed_key=uid if gen.seed_uid else None,
    )
    values = template_values(solution_str, ground_truth, extra_info, prompt, ver.rubric)

    def render(vals: Mapping[str, str | None]) -> list[dict[str, Any]]:
        try:
            messages = tmpl.render({k: v for k, v in vals.items() if v is not None}, ver.system_prompt)
        except TemplateError as exc:
            raise JudgeConfigError(str(exc)) from exc
        return with_images(list(messages), shown)

    if by_probability:
        prob = settings.probability
        score, p_yes, p_no = await judge_probability(
            endpoint, prob.score_server_address, render(values), prob.label_tokens
        )
        return {
            "score": score,
            "judge_verdict": f"p_yes={p_yes:.6g} p_no={p_no:.6g}",
            "judge_verdict_source": "probability",
            "judge_response": "",
            "judge_template": tmpl.name,
            "guard": "",
        }

    if tmpl.verdict_kind == "pairwise":
        orders = (True, False) if ver.pairwise_both_orders else (True,)
        replies = await asyncio.gather(
            *(ask_judge(endpoint, render(_pairwise_values(values, o))) for o in orders)
        )
        verdicts = [read_verdict(r, tmpl, ver.scale_min, ver.scale_max) for r in replies]
        # A verdict's score is that of response A; flip it when our response was B.
        scores = [v.score if first else 1.0 - v.score for v, first in zip(verdicts, orders, strict=True)]
        return {
            "score": sum(scores) / len(scores),
            "judge_verdict": " / ".join(str(v.value) for v in verdicts),
            "judge_verdict_source": " / ".join(v.source for v in verdicts),
            "judge_response": "\n\n=====\n\n".join(r.text for r in replies),
            "judge_template": tmpl.name,
            "judge_pool": pool,
            "usage": total_usage(replies),
            "guard": "",
        }

    matched: dict[str, Any] = {}
    if settings.method == "answer_match":
        if values["reference"] is None:
            raise JudgeConfigError("method answer_match needs a reference answer (ground_truth)")
        judgment = decide(solution_str, values["reference"])
        matched = {"judge_answer": judgment.answer}
        if judgment.decision in ("match", "mismatch"):
            right = judgment.decision == "match"
            return {
                "score": 1.0 if right else 0.0,
                "judge_verdict": "correct" if right else "incorrect",
                "judge_verdict_source": "rule",
                "judge_response": "",
                "judge_template": tmpl.name,
                "judge_pool": pool,
                "usage": {},
                "guard": "",
                **matched,
            }
        if judgment.decision == "ask_number":
            return await _answer_by_number_choice(endpoint, values, tmpl.name, pool)

    reply = await ask_judge(endpoint, render(values))
    verdict_read = read_verdict(reply, tmpl, ver.scale_min, ver.scale_max)
    return {
        "score": verdict_read.score,
        "judge_verdict": str(verdict_read.value),
        "judge_verdict_source": verdict_read.source,
        "judge_response": reply.text,
        "judge_template": tmpl.name,
        "judge_pool": pool,
        "usage": reply.usage,
        "guard": "",
        **matched,
    }


@dataclass(frozen=True)
class JudgeSettings:
    """Every setting of one `judge` configuration, checked together (at start-up and at each call)."""

    method: str
    template: JudgeTemplate
    generation: GenerationSettings
    verdict: VerdictSettings
    probability: ProbabilitySettings
    guards: GuardSettings

    @classmethod
    def build(
        cls,
        method: str,
        template: str | None,
        generation: GenerationSettings | Mapping[str, Any] | None,
        verdict: VerdictSettings | Mapping[str, Any] | None,
        probability: ProbabilitySettings | Mapping[str, Any] | None,
        guards: GuardSettings | Mapping[str, Any] | bool | None,
    ) -> JudgeSettings:
        if method not in METHODS:
            raise JudgeConfigError(f"method must be one of {list(METHODS)}, not {method!r}")
        try:
            gen = settings_from(GenerationSettings, generation, "generation")
            ver = settings_from(VerdictSettings, verdict, "verdict")
            prob = settings_from(ProbabilitySettings, probability, "probability")
            guard = GuardSettings.coerce(guards)
            default = "correctness_yes_no" if method == "probability" else "correctness"
            tmpl = get_template(
                template or default, user_template=ver.user_template, verdict_kind=ver.verdict_kind
            )
        except (TemplateError, JudgeSettingsError, GuardSettingsError) as exc:
            raise JudgeConfigError(str(exc)) from exc
        if method == "probability":
            if tmpl.verdict_kind != "binary":
                raise JudgeConfigError(
                    f"method probability needs a yes/no (binary) template, not {tmpl.verdict_kind}"
                )
            if not prob.score_server_address:
                raise JudgeConfigError(
                    "method probability needs reward_kwargs probability.score_server_address (the judge "
                    "pool's model servers, host:port or a list: the router does not proxy /v1/score)"
                )
        elif probability is not None:
            raise JudgeConfigError(
                f"probability settings are given but method is {method!r}, not 'probability'"
            )
        return cls(method, tmpl, gen, ver, prob, guard)


def startup_check(reward_kwargs: dict[str, Any]) -> None:
    """Check the settings groups (and guards) once at start-up, naming a misspelt or mistyped setting."""
    JudgeSettings.build(
        str(reward_kwargs.get("method", "verdict")),
        reward_kwargs.get("template"),
        reward_kwargs.get("generation"),
        reward_kwargs.get("verdict"),
        reward_kwargs.get("probability"),
        reward_kwargs.get("guards"),
    )


# Number-choice answers are a few tokens; the reply is constrained to one of the response's numbers.
_NUMBER_CHOICE_MAX_TOKENS = 16


async def _answer_by_number_choice(
    endpoint: JudgeEndpoint, values: Mapping[str, str | None], template_name: str, pool: str
) -> dict[str, Any]:
    """The model picks which of the response's numbers is its final answer (constrained to them); the rule
    compares that number with the reference."""
    response, reference = values["response"] or "", values["reference"] or ""
    choices = number_strings(response)
    asked = replace(
        endpoint,
        regex=number_choice_regex(choices) if endpoint.regex is not None else None,
        max_tokens=min(endpoint.max_tokens, _NUMBER_CHOICE_MAX_TOKENS),
    )
    reply = await ask_judge(asked, number_choice_messages(values["problem"], response))
    picked = pick_value(reply.text)
    if picked is None:
        raise VerdictParseError(f"the judge named no single number of {choices}", reply.text)
    right = picked == reference_number(reference)
    return {
        "score": 1.0 if right else 0.0,
        "judge_verdict": "correct" if right else "incorrect",
        "judge_verdict_source": "model_answer",
        "judge_response": reply.text,
        "judge_template": template_name,
        "judge_pool": pool,
        "usage": reply.usage,
        "guard": "",
        "judge_answer": reply.text.strip(),
    }
