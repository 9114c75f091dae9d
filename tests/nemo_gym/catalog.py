"""Every NeMo Gym resources server at the pinned commit, classified, and the replay of the recorded rows of
those the fleet reproduces (tests/nemo_gym/test_catalog.py, tests/nemo_gym/sweep.py).

Classes: 1 rule-based, 2 judge-based, 3 stateful / tools (served as environments), 4 needs what cannot run
here. Classes 2 and 3 and servers without recorded rows are recognised from the rows themselves; every other
server is classified by reading its `app.py` (`RULE`, `NEEDS` below, each with what it needs).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from rewardfleet.reward_fns import aalcr
from tests.nemo_gym import gym_mirror
from tests.nemo_gym.judge_rows import (
    judge_diffs,
    judge_inputs,
    recorded_judge,
)

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "nemo_gym" / "catalog.yaml"

ENVIRONMENT = "environment: see docs/environments.md"
CLASS_NAMES = {1: "rule-based", 2: "judge-based", 3: "stateful / tools", 4: "needs what cannot run here"}
_JUDGE_KEYS = ("judge", "verdict", "judgement")

# Rule-based servers not reproduced yet: what it takes.
RULE: dict[str, str] = {
    "citation_if": "citation grammar per row's verifier; not written yet",
    "code_gen": "LiveCodeBench unit tests in a sandbox: the `code` built-in's job, not mapped yet",
    "iheval": "instruction-hierarchy rule scorers per task; not written yet",
    "image_tools": "pivot tool-call comparison (IoU, point distance); not written yet",
    "lc_niah": "F1 of a node list times a penalty for reasoning copied from the input: needs the response's"
    " reasoning summaries, which the gateway's NeMo Gym mapping leaves out",
    "litmus_agent": "a value parsed by the row's regex, compared with a tolerance; not written yet",
    "ruler": "reference strings found in the response; the recorded rows lost `outputs` and `subset` and"
    " are of tasks example.jsonl does not hold, so nothing can check a reproduction",
    "string_match": "string match through a long chain of normalisations (numbers, LaTeX, lists, US state"
    " names, units); not written yet",
    "swe_pivot": "pivot edit comparison (tool name, target file, diff similarity); not written yet",
    "verifif": "VerifIF's rule validators (its LLM validators call a judge); not written yet",
    "math_with_judge": "",  # reproduced (as shipped: should_use_judge false); listed for its judge fields
    "polymath": "",  # math_with_judge's scoring, should_use_judge false in its config
}

# Servers that need what cannot run here, with exactly what.
NEEDS: dict[str, str] = {
    "bigcodebench": "BigCodeBench's test harness and its venv of ~70 libraries (setup_bcb_venv)",
    "bird_sql": "BIRD's dev databases (dev_databases/<db_id>/<db_id>.sqlite, not shipped)",
    "code_fim": "HumanEval-infilling's tests and a Ray-run executor",
    "competitive_coding_challenges": "the competitions' test data and grader (ccc_eval)",
    "critpt": "Artificial Analysis' CritPt evaluation API and its key",
    "cvdp": "Docker images with Verilog simulators (cvdp testbench runner)",
    "ether0": "the ether0 rewards package (RDKit, molecule services)",
    "evalplus": "EvalPlus' dataset and executor (Ray)",
    "legal_agent_bench": "its prepared legal task data",
    "longmt_eval": "a GPU actor with LASER2, vecalign and COMETKiwi (SEGALE)",
    "math_formal_lean": "a Lean 4 + Mathlib sandbox service",
    "reasoning_gym": "the reasoning_gym package's generators and scorers",
    "rolemrc": "METEOR (NLTK WordNet data) and BERTScore (a model); judge mode calls a judge",
    "scicode": "SciCode's test data (h5 files) and executor",
    "speed_bench": "a vLLM server's speculative-decoding Prometheus counters (GPU)",
    "spider2_lite": "Spider 2.0-lite's databases",
    "swebench": "Docker and SWE-bench's images",
    "swerl_gen": "Singularity images of the repositories",
    "vlm_eval_kit": "VLMEvalKit and its benchmark images",
    "wmt_translation": "xCOMET-XXL on a GPU (chrF, the reward, is sacrebleu's) and a language-ID model",
}

# Stateful servers whose rows hold no function call (multi-turn games and environments).
STATEFUL = {
    "aviary",
    "blackjack",
    "example_multi_turn_gymnasium",
    "grl_sokoban",
    "grl_tetris",
    "gymnasium",
    "tales",
    "toolsandbox",
}
# Judge-based servers whose rows carry no judge-named field.
JUDGED_NOTES = {
    s: "math-verify, then math_with_judge's judge when it says wrong: every recorded row was decided by"
    " math-verify (library_reward 1, no judge call), so the judge path is unchecked; not served"
    for s in ("physics_judge", "ugphysics_judge")
}
JUDGED = {"bbq", "genrm_compare", "inverse_if", "multichallenge", "proof_judge", "proof_verification"}


@dataclass(frozen=True)
class Replay:
    """How the recorded rows of one server are posted to the gateway and compared."""

    compare: tuple[str, ...]  # recorded keys compared besides `reward` (removed from the posted body)
    tasks: str | None = None  # task file the rows are joined to (rows that lost task fields)
    join: str = "prompt"  # by prompt text, or by "_ng_task_index" (a materialized inputs file)
    extra_task: dict[str, Any] = field(default_factory=dict)  # task fields the recording lost (see its note)
    skip_rows: dict[int, str] = field(default_factory=dict)  # row -> why it cannot be compared
    drop: tuple[str, ...] = ()  # recorded keys removed from the body and not compared
    judge: str | None = None  # the judge function: recorded judge_evaluations replayed and compared
    note: str = ""  # a behaviour of the server the rows show, matched on purpose
    # prefixes of recorded aggregate metrics the server's own compute_metrics adds (per output type, ...):
    # the gateway's /aggregate_metrics does not compute them, so they are left out of that comparison
    own_metrics: tuple[str, ...] = ()


# The reproduced servers: the gateway's mapping for each is deploy/nemo_gym/catalog.yaml's entry of the name.
REPLAYS: dict[str, Replay] = {
    "mcqa": Replay(("extracted_answer",), tasks="example.jsonl"),
    "equivalence_rule": Replay(("equivalence_score",)),
    "format_verification": Replay(("match_details",)),
    "instruction_following": Replay(("follow_all_instructions", "follow_instruction_list")),
    "ifbench": Replay(
        ("follow_all_instructions", "follow_instruction_list"),
        skip_rows={
            0: "ratio:stop_words needs NLTK's stopwords data, which no PyPI package ships",
            1: "words:start_verb needs NLTK's part-of-speech tagger data",
            4: "words:start_verb needs NLTK's part-of-speech tagger data",
        },
    ),
    # as shipped (should_use_judge: false) math-verify decides; rows 0 and 4 were recorded with the judge
    # on, which agreed with the library's 0
    "math_with_judge": Replay((), drop=("library_reward", "extracted_answer", "judge_evaluations")),
    # the rows carry no schema_str and match no task file; rows 0, 1, 3, 4 answered JSON in a markdown
    # fence, which NeMo Gym does not parse whatever the schema: any valid schema decides them
    "structured_outputs": Replay(
        (),
        extra_task={"schema_str": '{"type": "object"}', "schema_type": "json"},
        skip_rows={2: "its schema_str is in neither the recorded row nor a task file"},
    ),
    "polymath": Replay(("library_reward", "extracted_answer"), drop=("judge_evaluations",)),
    "gpqa_diamond": Replay(("extracted_answer",), tasks="example.jsonl"),
    "circle_count": Replay(
        ("predicted_count", "expected_count", "correct"),
        tasks="example_rollouts_materialized_inputs.jsonl",
        join="_ng_task_index",
    ),
    "mrcr": Replay(("prefix_matched", "seq_match_ratio")),
    "graphwalks": Replay(("f1", "parse_failed", "predicted_nodes")),
    "imo_gradingbench": Replay(("extracted_grade", "binary_match", "score_diff")),
    "math_proof_judgement": Replay(("extracted_judgement", "tp", "fp", "fn", "tn")),
    "swerl_llm_judge": Replay(("extracted_answer",), tasks="example.jsonl"),
    "spartqa": Replay(("exact", "parsed", "extracted", "predicted_label")),
    "ragtruth": Replay(("pred_halu", "parse_fail", "extracted")),
    "gui_coordinate": Replay(("extracted_x", "extracted_y", "distance")),
    "xstest": Replay(
        ("label", "prompt_type", "is_refusal", "cleaned_response"),
        tasks="example.jsonl",
        drop=("judge_evaluations",),
        judge="xstest",
    ),
    "calendar": Replay((), tasks="example.jsonl"),
    "ruler2": Replay(("predicted_answer", "extracted_answer")),
    "equivalence_llm_judge": Replay((), drop=("judge_evaluations",), judge="equivalence_llm_judge"),
    "labbench2_vlm": Replay((), tasks="example.jsonl", drop=("judge_evaluations",), judge="labbench2_vlm"),
    "proof_genselect": Replay((), tasks="example.jsonl"),
    "arc_agi": Replay(("predicted_output", "extraction_successful"), tasks="example.jsonl"),
}

# asr_with_pc's recorded extras, and the aggregate figures its own compute_metrics / get_key_metrics add
ASR_COMPARED = ("text", "pred_text", "wer", "wer_c", "wer_pc", "per", "is_correct", "ref_pc_tok",
                "hyp_pc_tok", "ref_c", "hyp_c")  # fmt: skip
ASR_OWN_METRICS = ("wer", "corpus_wer@", "per", "pass@1/per", "pass@1/no_answer", "pass@1/accuracy",
                   "pass@1[avg-of-1]/per", "pass@1[avg-of-1]/no_answer")  # fmt: skip
# Rule-based servers of the wheel-readable batch (a block of their own: parallel additions merge simply).
REPLAYS.update(
    {
        "hotpotqa_qa": Replay(
            (
                "extracted_answer",
                "answer_em",
                "answer_f1",
                "is_correct",
                "is_correct_strict",
                "gt_should_remove",
                "gt_remove_reason",
            )
        ),
        "bunsenbench_chemistry_mcq": Replay(
            ("extracted_answer", "no_answer", "error_mode", "source", "bct_field", "bct_subfield")
        ),
        "structeval": Replay(
            ("render_score", "key_validation_score", "raw_output_score", "error_type", "error_message"),
            own_metrics=("mean/reward_", "mean/render_score_", "mean/key_validation_score_"),
            note="its aggregate's means per output type, input type and task name come from its own"
            " compute_metrics and are not compared",
        ),
        "asr_with_pc": Replay(
            ASR_COMPARED,
            tasks="example_rollouts_materialized_inputs.jsonl",
            join="_ng_task_index",
            own_metrics=ASR_OWN_METRICS,
            note="its aggregate's corpus-level WERs, its per / no_answer pass@k and its key-metric choice"
            " (pass@1/accuracy) come from its own compute_metrics / get_key_metrics and are not compared",
        ),
        "nvarc": Replay(
            ("predicted_output", "extraction_successful"),
            skip_rows={
                i: "inductive mode: NeMo Gym runs the response's transform() program on the test input;"
                " the nvarc built-in scores the transductive mode only (a grid in the response)"
                for i in (3, 4)
            },
        ),
    }
)

# Judge servers whose rows give a replay nothing to answer the judge with.
JUDGED_NOTES |= {
    "proof_judge": "its rows hold only the problem and the reward: neither the judge's requests nor its"
    " answers are recorded, so a replay has nothing to answer the judge with",
    "proof_verification": "its rows hold only the reward: the meta-verifier's answer it multiplies in is not"
    " recorded, so a replay has nothing to answer the judge with",
}

# An answer of another kind that still reaches the judge (test_judge_requests_are_the_recorded_ones), where
# plain text does not.
JUDGED_ANSWER = {
    "text_to_sql": "```sql\nSELECT 1;\n```",
    "imo_proofbench_judge": "\\boxed{42}",
    "terminus_judge": json.dumps({"state_analysis": "s", "explanation": "e", "is_task_complete": False,
                                  "commands": [{"keystrokes": "true\n", "is_blocking": True,
                                                "timeout_sec": 1}]}),
}  # fmt: skip
# Judge servers whose rows record the judge's requests and answers: replayed against the stand-in judge.
REPLAYS |= {
    "aalcr": Replay(
        ("invalid_judge_response", *aalcr.BANDS.values()),
        drop=("judge_responses_create_params", "judge_response"),
        judge="aalcr",
    ),
    "math_with_autograder": Replay(
        ("extracted_answer", "library_reward"),
        drop=("judge_evaluations",),
        judge="math_with_autograder",
        note="every recorded response is empty (the policy wrote only reasoning), so the rows check the judge"
        " path with an empty model solution; the library step and the \\boxed{} extraction are not checked"
        " by them",
    ),
    "omniscience": Replay(
        (
            "extracted_answer",
            "verdict",
            "judge_output",
            "is_correct",
            "is_incorrect",
            "is_partial",
            "is_not_attempted",
            "omniscience_index",
            "is_hallucination",
        ),
        judge="omniscience",
        skip_rows={
            2: "recorded at acf7aefe, when an answer with no closing </think> was dropped as unfinished;"
            " since fa0c2da3 (the pinned code, ours) an answer with no reasoning tags at all is kept, and"
            " this one has none, so the judge would see another answer than the recorded one"
        },
        note="its rows hold the judge's answer, not its request: the stand-in answers the request that holds"
        " the prompt's lines of the row's question, reference and recorded answer (reasoning removed)",
    ),
    "frontierscience_judge": Replay(
        ("extracted_answer", "verdict", "judge_output"),
        judge="frontierscience_judge",
        note="its rows hold the judge's answer, not its request: the stand-in answers the request that holds"
        " the prompt's lines of the row's question, reference and recorded answer",
    ),
    "abstention": Replay(
        (
            "extracted_answer",
            "ground_truth",
            "verdict",
            "judge_output",
            "is_correct",
            "is_abstain",
            "is_incorrect",
            "omniscience_index",
        ),
        judge="abstention",
        note="its rows hold the judge's answer, not its request: the stand-in answers the request that holds"
        " the prompt's lines of the row's question, reference and extracted answer",
    ),
    "longmemeval": Replay(
        (
            "question_id",
            "question_type",
            "abstention",
            "judge_label",
            "judge_raw",
            "judge_error",
            "judge_error_detail",
            "empty_response",
            "generation",
        ),
        judge="longmemeval",
        note="its rows hold the judge's answer, not its request: the stand-in answers the request that holds"
        " the row's question, answer and response; NeMo Gym reads yes anywhere in the judge's reply (in"
        " `yesterday` too), we read the word yes without the word no; a judge that cannot be reached is a"
        " typed error, where NeMo Gym records judge_call_failed and a 0",
    ),
    "imo_proofbench_judge": Replay(
        (
            "extracted_answer",
            "judge_output",
            "judge_points",
            "judge_correct",
            "symbolic_correct",
            "any_correct",
            "no_judge_score",
        ),
        judge="imo_proofbench_judge",
        note="its rows hold the judge's answer, not its request: the stand-in answers the request that holds"
        " the prompt's lines of the row's problem, reference solution, rubric and extracted answer",
    ),
    "physics_judge": Replay(
        ("extracted_answer", "library_reward"),
        drop=("judge_evaluations",),
        judge="physics_judge",
        note="every recorded row was decided by math-verify (library_reward 1, no judge call): the judge path"
        " is checked by test_judge_forgery's cases, not by these rows",
    ),
    "ugphysics_judge": Replay(
        ("extracted_answer", "library_reward", "extracted_verdict"),
        drop=("judge_evaluations",),
        judge="ugphysics_judge",
        note="every recorded row was decided by math-verify (library_reward 1, no judge call): the judge path"
        " is checked by test_judge_forgery's cases, not by these rows",
    ),
    "inverse_if": Replay(
        (
            "prompt",
            "generated_response",
            "reference_response",
            "rubric_evaluations",
            "aggregation_mode",
            "num_passed",
            "num_total",
        ),
        tasks="example.jsonl",
        judge="inverse_if",
        note="its rows record each criterion's judge prompt (the user message, compared whole) and answer,"
        " not the system prompt; PASS / FAIL on the judge's last lines is read as a word (NeMo Gym reads it"
        " inside words too, BYPASS, PASSWORD)",
    ),
    "arena_judge": Replay(
        (
            "judgement_gen_base",
            "judgement_base_gen",
            "verdict_gen_base",
            "verdict_base_gen",
            "invalid_gen_base",
            "invalid_base_gen",
        ),
        judge="arena_judge",
        note="its rows hold the two judgements, not the requests: the stand-in answers the requests its"
        " category's prompt makes of the row's question, baseline and answer (each order), so the prompt is"
        " rendered by the test, not recorded",
    ),
    "simpleqa": Replay(
        ("extracted_answer", "verdict", "judge_output", "is_correct", "is_incorrect", "is_not_attempted"),
        judge="simpleqa",
        note="its rows hold the judge's answer, not its request: the stand-in answers the request that holds"
        " the prompt's lines of the row's question, reference and answer; the rows'"
        " verdicts read the grade at the end of replies like `After reviewing ..., the grade is B.`, where"
        " NeMo Gym's parser (first letter of the reply) reads the A of `After`: we read the last standalone"
        " letter, as the rows show",
    ),
    "terminus_judge": Replay(
        (
            "model_output",
            "parsed_output",
            "similarity_score",
            "schema_check_passed",
            "task_complete_check_passed",
            "string_similarity_passed",
            "judge_passed",
        ),
        drop=("judge_evaluations", "failure_reason"),
        judge="terminus_judge",
        note="its rows were recorded at 987f526e with the settings terminus_judge_simple.yaml keeps (the"
        " simple prompt, the swap pass, threshold 0.9), which the replay uses; their failure_reason"
        " `judge_evaluation_failed` is the name of that time (now `judge_not_equivalent`, which we answer),"
        " so it is not compared",
    ),
    "text_to_sql": Replay(
        ("model_output", "extracted_sql", "judge_passed", "failure_reason"),
        drop=("judge_evaluations",),
        judge="text_to_sql",
        note="its rows were recorded with prompts.py of 05ca5f3d; f19769ac rewrote the judge's system message"
        " after them, so the replay reads the prompt at 05ca5f3d; a predicted SQL that holds a verdict label"
        " gets no verdict read from the judge's reply (NeMo Gym reads the first label anywhere in it)",
    ),
}


@dataclass
class Entry:
    server: str
    cls: int
    rows: int
    reason: str
    replay: Replay | None


def _has_function_call(row: dict[str, Any]) -> bool:
    output = (row.get("response") or {}).get("output") or []
    return any(isinstance(item, dict) and item.get("type") == "function_call" for item in output)


def classify(server: str, rows: list[dict[str, Any]]) -> tuple[int, str]:
    if server in REPLAYS:
        return (2 if REPLAYS[server].judge is not None else 1), ""
    if not rows:
        return 4, "its example_rollouts.jsonl holds placeholder lines, no recorded row"
    if server in STATEFUL or any(_has_function_call(r) for r in rows):
        return 3, ENVIRONMENT
    if server in NEEDS:
        return 4, NEEDS[server]
    if server in RULE:
        return 1, RULE[server]
    keys = {k for r in rows for k in r}
    if server in JUDGED_NOTES:
        return 2, JUDGED_NOTES[server]
    if server in JUDGED or any(any(j in k for j in _JUDGE_KEYS) for k in keys):
        if all(r.get("reward") is None for r in rows):
            return 2, "not written yet; its recorded rows carry no reward (null), so nothing to compare with"
        if (
            any(judge_inputs(e) for r in rows for e in recorded_judge(r))
            or "judge_responses_create_params" in keys
        ):
            return (
                2,
                "not written yet; its rows record the judge's requests and answers, so it can be replayed",
            )
        return 2, (
            "not written yet; its rows record the judge's output or verdict but not its request: a replay"
            " can check the verdict parsing and reward, not the prompt"
        )
    return 0, "not classified"


def entries(readable_only: bool = False) -> list[Entry]:
    """Every server at the pinned commit; `gym_mirror.Unavailable` when one's recorded rows cannot be read,
    or (`readable_only`) those servers left out."""
    out = []
    for server in gym_mirror.servers():
        try:
            rows = gym_mirror.rollouts(server)
        except gym_mirror.Unavailable:
            if readable_only:
                continue
            raise
        cls, reason = classify(server, rows)
        out.append(Entry(server, cls, len(rows), reason, REPLAYS.get(server)))
    return out


def _key(row: dict[str, Any], join: str) -> Any:
    return gym_mirror.prompt_text(row) if join == "prompt" else row.get(join)


def bodies(server: str, replay: Replay) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(row index, verify body, recorded outputs) of every recorded row not skipped."""
    rows = gym_mirror.rollouts(server)
    tasks: dict[str, dict[str, Any]] = {}
    if replay.tasks is not None:
        tasks = {_key(t, replay.join): t for t in gym_mirror.data(server, replay.tasks)}
    outputs = ("reward", *replay.compare)
    out = []
    for i, row in enumerate(rows):
        if i in replay.skip_rows:
            continue
        task = tasks.get(_key(row, replay.join), {}) if replay.tasks is not None else {}
        body = {k: v for k, v in task.items() if k != "responses_create_params"}
        body.update(replay.extra_task)
        body.update({k: v for k, v in row.items() if k not in outputs and k not in replay.drop})
        out.append((i, body, {k: row[k] for k in outputs if k in row}))
    return out


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return got == want
    if isinstance(want, (int, float)):
        return isinstance(got, (int, float)) and not isinstance(got, bool) and abs(got - want) <= 1e-9
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, dict):
        return (
            isinstance(got, dict) and got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
        )
    return got == want


@dataclass
class RowResult:
    row: int
    ok: bool
    detail: str  # the differing keys (ok: empty)


def replay_server(
    url: str, server: str, replay: Replay, post: Callable[..., httpx.Response] = httpx.post
) -> list[RowResult]:
    """Every recorded row posted to `<url>/nemo_gym/<server>/verify`, compared with what NeMo Gym recorded."""
    results = []
    for i, body, recorded in bodies(server, replay):
        resp = post(f"{url}/nemo_gym/{server}/verify", json=body, timeout=120)
        if resp.status_code != 200:
            results.append(RowResult(i, False, f"HTTP {resp.status_code}: {resp.text[:200]}"))
            continue
        answer = resp.json()
        diffs = [
            f"{k}: {json.dumps(answer.get(k))[:80]} != {json.dumps(v)[:80]}"
            for k, v in recorded.items()
            if not _same(answer.get(k), v)
        ]
        if replay.judge is not None:
            diffs += judge_diffs(recorded_judge(answer), recorded_judge(gym_mirror.rollouts(server)[i]))
        echoed = answer.get("response") == body["response"]
        results.append(RowResult(i, not diffs and echoed, "; ".join(diffs) or ("" if echoed else "body")))
    return results


def aggregate_path(server: str) -> str:
    return f"{gym_mirror.SERVERS}/{server}/data/example_rollouts_aggregate_metrics.json"


def recorded_aggregate(server: str) -> dict[str, Any] | None:
    """NeMo Gym's `/aggregate_metrics` answer over the server's recorded rows, where it ships one."""
    text = gym_mirror.show(aggregate_path(server))
    if text is None:
        return None
    value = json.loads(text)
    return value[0] if isinstance(value, list) and value else value
