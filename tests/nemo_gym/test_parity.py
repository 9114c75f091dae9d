"""Parity with NeMo Gym's own recorded verify results: every rule-decided row of the servers' recorded
rollouts (read from NeMo Gym's wheel at test time), posted to the gateway's `/verify` over real uvicorn,
gets the reward NeMo Gym recorded; and NeMo Gym's own response models accept our answers.

Rows are generic: a `ParityCase` names the rollouts file, the task file its rows are joined to (by prompt
text: recorded rollouts keep only some task fields), the server (gateway mapping), and the recorded keys to
compare. SQL is not here: bird_sql's databases are not shipped and text_to_sql's rows are judged by an LLM
(docs/nemo_gym.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.nemo_gym.nemo_gym_source import jsonl, prompt_text, wheel_path
from tests.support.gateway import Gateway

DATA = "resources_servers/{server}/data/{name}"


@dataclass(frozen=True)
class ParityCase:
    server: str  # the gateway's nemo_gym server (tests/nemo_gym/conftest.py)
    rollouts: str
    tasks: str | None  # joined by prompt text; None: the rollout rows carry their task fields
    outputs: tuple[str, ...]  # keys NeMo Gym's verify added: removed before posting, compared after
    response_model: str  # NeMo Gym's response class in the server's app.py
    source_server: str = ""  # NeMo Gym's server directory, when it differs from `server`
    extra_task: dict[str, Any] = field(default_factory=dict)  # task fields the rows lost (see its case)
    skip_rows: dict[int, str] = field(default_factory=dict)  # row index -> why it cannot be scored
    compare: tuple[str, ...] | None = None  # the outputs compared (None: all of them)

    @property
    def directory(self) -> str:
        return self.source_server or self.server


CASES = [
    ParityCase(
        "mcqa",
        "example_rollouts.jsonl",
        "example.jsonl",
        ("reward", "extracted_answer"),
        "MCQAVerifyResponse",
    ),
    ParityCase(
        "mcqa",
        "example_rollouts_with_template_metadata.jsonl",
        "example_with_template_metadata.jsonl",
        ("reward", "extracted_answer"),
        "MCQAVerifyResponse",
    ),
    ParityCase(
        "equivalence_rule",
        "example_rollouts.jsonl",
        None,
        ("reward", "equivalence_score"),
        "EquivalenceRuleVerifyResponse",
    ),
    ParityCase(
        "format_verification",
        "example_rollouts.jsonl",
        None,
        ("reward", "match_details"),
        "FormatVerificationVerifyResponse",
    ),
    ParityCase(
        "instruction_following",
        "example_rollouts.jsonl",
        None,
        ("reward", "follow_all_instructions", "follow_instruction_list"),
        "InstructionFollowingVerifyResponse",
    ),
    ParityCase(
        "ifbench",
        "example_rollouts.jsonl",
        None,
        ("reward", "follow_all_instructions", "follow_instruction_list"),
        "IFBenchVerifyResponse",
        skip_rows={
            0: "ratio:stop_words needs NLTK's stopwords data, which no PyPI package ships",
            1: "words:start_verb needs NLTK's part-of-speech tagger data",
            4: "words:start_verb needs NLTK's part-of-speech tagger data",
        },
    ),
    # math_with_judge as NeMo Gym ships it (configs/math_with_judge.yaml: should_use_judge false): the reward
    # is math-verify's. Rows 0 and 4 were recorded with a judge on, which agreed with the library's 0.
    ParityCase(
        "math_with_judge",
        "example_rollouts.jsonl",
        None,
        ("reward", "library_reward", "extracted_answer", "judge_evaluations"),
        "LibraryJudgeMathVerifyResponse",
        compare=("reward",),
    ),
    # The recorded structured_outputs rollouts carry no `schema_str` and their prompts match no task file of
    # the wheel. Rows 0, 1, 3, 4 answered JSON inside a markdown fence: NeMo Gym parses the text as it is, so
    # they fail to parse whatever the schema (reward 0); any valid schema decides them. Row 2 (reward 1.0)
    # needs its real schema: not scored (docs/nemo_gym.md).
    ParityCase(
        "structured_outputs",
        "example_rollouts.jsonl",
        None,
        ("reward",),
        "StructuredOutputsVerifyResponse",
        extra_task={"schema_str": '{"type": "object"}', "schema_type": "json"},
        skip_rows={2: "its schema_str is not in the recorded row nor in any task file of the wheel"},
    ),
]


def _bodies(case: ParityCase) -> list[tuple[int, dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(row index, verify body, recorded outputs, recorded answer) of every scorable row."""
    rows = jsonl(DATA.format(server=case.directory, name=case.rollouts))
    tasks = {}
    if case.tasks is not None:
        tasks = {prompt_text(t): t for t in jsonl(DATA.format(server=case.directory, name=case.tasks))}
    out = []
    for i, row in enumerate(rows):
        if i in case.skip_rows:
            continue
        task = tasks[prompt_text(row)] if case.tasks is not None else {}
        body = {k: v for k, v in task.items() if k != "responses_create_params"}
        body.update(case.extra_task)
        body.update({k: v for k, v in row.items() if k not in case.outputs})
        compared = case.compare if case.compare is not None else case.outputs
        out.append((i, body, {k: row[k] for k in compared if k in row}, {**body, **row}))
    return out


def _ids(case: ParityCase) -> str:
    return f"{case.server}:{case.rollouts}"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_verify_matches_recorded_rewards(gym: Gateway, case: ParityCase, tmp_path: Path) -> None:
    bodies = _bodies(case)
    assert len(bodies) == 5 - len(case.skip_rows)  # every recorded row is either compared or listed
    answers = []
    for i, body, recorded, recording in bodies:
        resp = httpx.post(f"{gym.url}/nemo_gym/{case.server}/verify", json=body, timeout=60)
        assert resp.status_code == 200, (i, resp.text)
        answer = resp.json()
        for key, value in recorded.items():
            assert answer.get(key) == pytest.approx(value), (case.server, i, key, answer.get(key), value)
        # the body comes back untouched beside the reward
        assert answer["response"] == body["response"]
        assert answer["responses_create_params"] == body["responses_create_params"]
        answers.append([case.directory, case.response_model, answer, recording])
    # NeMo Gym's own response model (from its files, in a child interpreter) finds no error in our answers
    # that it does not find in its own recordings (validate_models.py says why it finds some there)
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers))
    child = Path(__file__).with_name("validate_models.py")
    done = subprocess.run(
        [sys.executable, str(child), str(wheel_path()), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok ") == len(answers)


def test_own_port_serves_the_protocol_at_its_root(gym: Gateway, mcqa_port: int) -> None:
    """NeMo Gym's client calls `http://{host}:{port}/verify`: the mcqa server's own port answers there."""
    (_, body, recorded, _), *_ = _bodies(CASES[0])
    base = f"http://127.0.0.1:{mcqa_port}"
    resp = httpx.post(f"{base}/verify", json=body, timeout=60)
    assert resp.status_code == 200, resp.text
    assert resp.json()["reward"] == recorded["reward"]
    assert httpx.post(f"{base}/seed_session", json={}, timeout=10).json() == {}
    # NeMo Gym's readiness poll is a GET on the bare address: any answer counts
    assert httpx.get(base, timeout=10).status_code == 404
    # a path of the gateway that is not the protocol's is not reachable through the server's port
    assert httpx.post(f"{base}/score", json={}, timeout=10).status_code == 404


def test_aggregate_metrics_over_recorded_rollouts(gym: Gateway) -> None:
    """pass@k / majority@k over our verify answers, checked against figures computed by hand."""
    (_, body, _, _), *_ = _bodies(CASES[0])
    gold = body["expected_answer"]
    wrong = [next(iter(o)) for o in body["options"] if next(iter(o)) != gold][:2]
    answers = []
    for rollout, letter in enumerate([gold, gold, *wrong]):  # two right, two wrong (two different letters)
        text = f"so the answer is \\boxed{{{letter}}}"
        output = [{"type": "message", "role": "assistant", "id": "m", "status": "completed",
                   "content": [{"type": "output_text", "text": text, "annotations": []}]}]  # fmt: skip
        verify = {**body, "response": {**body["response"], "output": output},
                  "_ng_task_index": 0, "_ng_rollout_index": rollout}  # fmt: skip
        resp = httpx.post(f"{gym.url}/nemo_gym/mcqa/verify", json=verify, timeout=60)
        answers.append(resp.json())
    assert [a["reward"] for a in answers] == [1.0, 1.0, 0.0, 0.0]
    resp = httpx.post(
        f"{gym.url}/nemo_gym/mcqa/aggregate_metrics", json={"verify_responses": answers}, timeout=60
    )
    assert resp.status_code == 200, resp.text
    agent = resp.json()["agent_metrics"]
    assert agent["mean/reward"] == 0.5
    assert agent["pass@1/accuracy"] == pytest.approx(50.0)
    assert agent["pass@2/accuracy"] == pytest.approx(100 * (1 - 1 / 6))  # 1 - C(2,2)/C(4,2)
    assert agent["pass@4/accuracy"] == 100.0
    assert agent["pass@1[avg-of-4]/accuracy"] == 50.0
    assert agent["majority@4/accuracy"] == 100.0  # the gold letter twice beats two others once each
    assert agent["majority@3/accuracy"] == 100.0
    assert resp.json()["key_metrics"]["majority@4/accuracy"] == 100.0
    groups = resp.json()["group_level_metrics"]
    assert len(groups) == 1 and groups[0]["std/reward"] == pytest.approx(0.5773502691896257)
