"""Speech transcripts by word error rate, as NeMo Gym's `asr_with_pc` server grades them.

`ground_truth` is the reference transcript (NeMo Gym's `expected_answer`), the response the hypothesis (both
stripped). `extra_info["task_type"]` (default `ASR-PC`) picks the scoring:

- `ASR-PC`: `wer` on Whisper-normalised text (lower-cased, Whisper's English normaliser, spaces
  collapsed), `wer_c` on text without punctuation (case kept), `wer_pc` on words and punctuation marks as
  separate tokens, and `per`, the punctuation error rate (punctuation marks aligned by edit distance). The
  score is 1 when `wer_pc < 0.5`.
- `ASR`: `wer` only (an empty normalised reference has no WER: 0 and not correct; an empty hypothesis counts
  as the word `empty`); 1 when `wer < 0.5`.
- `ASR_LEADERBOARD`: as `ASR`, plus `wer_<name>` / `is_correct_<name>` against each task field named in
  `extra_info["reference_fields"]` (`<name>` without a leading `text_`).
- `Hallucination`: 1 unless the hypothesis runs over 1,500 characters per minute of
  `extra_info["audio_duration"]` (seconds; without it, 1), with `hallucination_rate` and `char_rate`.

Returns `{"score", "is_correct", "wer", "wer_c", "wer_pc", "per", "text" / "pred_text" (the normalised
reference / hypothesis), "ref_pc_tok", "hyp_pc_tok", "ref_c", "hyp_c", ...}` (the PC fields 0 / empty outside
`ASR-PC`). Word error rates are jiwer's and the normaliser is `whisper_normalizer`'s (the
`nemo-gym-catalog` extra). Punctuation alignment is quadratic: over `MAX_PUNCTUATION_CELLS` (marks in the
reference times marks in the hypothesis) the response scores 0 with the reason.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "punctuation_error_rate"]

TASK_TYPES = ("ASR-PC", "ASR", "Hallucination", "ASR_LEADERBOARD")
MAX_CHARS_PER_MINUTE = 1500.0
MAX_PUNCTUATION_CELLS = 1_000_000
_PC_TOKEN = re.compile(r"\w+|[^\w\s]")
_NOT_WORD_OR_SPACE = re.compile(r"[^\w\s]")


def _spaced(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@functools.cache
def _whisper() -> Any:
    from whisper_normalizer.english import EnglishTextNormalizer  # the nemo-gym-catalog extra

    return EnglishTextNormalizer()


def _normalised(text: str) -> str:
    return _spaced(_whisper()(text.lower()))


def _wer(reference: str, hypothesis: str) -> float:
    import jiwer  # the nemo-gym-catalog extra

    return float(jiwer.wer(reference, hypothesis))


def _marks(text: str) -> list[str]:
    return [c for c in text if not c.isalnum() and not c.isspace()]


def punctuation_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / all aligned marks; on equal cost a substitution is
    preferred to a deletion, a deletion to an insertion."""
    ref, hyp = _marks(reference), _marks(hypothesis)
    if not ref and not hyp:
        return 0.0
    # each cell: (correct, substituted, deleted, inserted)
    previous = [(0, 0, 0, j) for j in range(len(hyp) + 1)]
    for i, mark in enumerate(ref, 1):
        current = [(0, 0, i, 0)]
        for j, other in enumerate(hyp, 1):
            if mark == other:
                c, s, d, n = previous[j - 1]
                current.append((c + 1, s, d, n))
                continue
            c, s, d, n = previous[j - 1]
            substitute = (c, s + 1, d, n)
            c, s, d, n = previous[j]
            delete = (c, s, d + 1, n)
            c, s, d, n = current[j - 1]
            insert = (c, s, d, n + 1)
            current.append(min((substitute, delete, insert), key=lambda m: m[1] + m[2] + m[3]))
        previous = current
    correct, substituted, deleted, inserted = previous[-1]
    total = correct + substituted + deleted + inserted
    return (substituted + deleted + inserted) / total if total else 0.0


def _pc_scores(reference: str, hypothesis: str) -> dict[str, Any]:
    ref_pc_tok = " ".join(_PC_TOKEN.findall(_spaced(reference)))
    hyp_pc_tok = " ".join(_PC_TOKEN.findall(_spaced(hypothesis)))
    ref_c, hyp_c = (
        _spaced(_NOT_WORD_OR_SPACE.sub("", reference)),
        _spaced(_NOT_WORD_OR_SPACE.sub("", hypothesis)),
    )
    ref_std, hyp_std = _normalised(reference), _normalised(hypothesis)
    wer_pc = _wer(ref_pc_tok, hyp_pc_tok)
    return {
        "wer": _wer(ref_std, hyp_std),
        "wer_c": _wer(ref_c, hyp_c),
        "wer_pc": wer_pc,
        "per": punctuation_error_rate(reference, hypothesis),
        "is_correct": wer_pc < 0.5,
        "text": ref_std,
        "pred_text": hyp_std,
        "ref_pc_tok": ref_pc_tok,
        "hyp_pc_tok": hyp_pc_tok,
        "ref_c": ref_c,
        "hyp_c": hyp_c,
    }


def _plain_wer(reference: str, hypothesis: str) -> tuple[float | None, str, str]:
    """(WER or None for an empty normalised reference, the normalised reference, hypothesis)."""
    ref, hyp = _normalised(reference), _normalised(hypothesis)
    if not ref:
        return None, "", hyp
    hyp = hyp or "empty"
    return _wer(ref, hyp), ref, hyp


def _without_pc(is_correct: bool, text: str, pred_text: str, wer: float = 0.0) -> dict[str, Any]:
    empty = dict.fromkeys(("ref_pc_tok", "hyp_pc_tok", "ref_c", "hyp_c"), "")
    return {"wer": wer, "wer_c": 0.0, "wer_pc": 0.0, "per": 0.0, "is_correct": is_correct, "text": text,
            "pred_text": pred_text, **empty}  # fmt: skip


def _string_field(info: dict[str, Any], name: str) -> str:
    value = info.get(name)
    if value is not None and not isinstance(value, str):
        raise TaskFieldError(f"extra_info.{name} must be a string")
    return value or ""


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    hypothesis = require_str("solution_str", solution_str).strip()
    if ground_truth is not None and not isinstance(ground_truth, str):
        raise TaskFieldError("ground_truth (expected_answer) must be a string")
    reference = (ground_truth or "").strip()
    info = extra_info or {}
    task_type = info.get("task_type") or "ASR-PC"
    if task_type not in TASK_TYPES:
        raise TaskFieldError(f"extra_info.task_type must be one of {', '.join(TASK_TYPES)}")
    if (over := too_long(hypothesis)) is not None:
        return {**_without_pc(False, "", ""), **over}
    extra: dict[str, Any] = {}
    if task_type == "ASR-PC":
        if len(_marks(reference)) * len(_marks(hypothesis)) > MAX_PUNCTUATION_CELLS:
            return {**_without_pc(False, "", ""), "score": 0.0, "error_type": "too_many_punctuation_marks",
                    "error_message": f"over {MAX_PUNCTUATION_CELLS} alignment cells"}  # fmt: skip
        scores = _pc_scores(reference, hypothesis)
    elif task_type == "Hallucination":
        duration = info.get("audio_duration")
        if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float))):
            raise TaskFieldError("extra_info.audio_duration must be a number of seconds")
        rate, flagged = 0.0, False
        if duration and duration > 0:
            rate = round(len(hypothesis) / duration * 60.0, 2)
            flagged = len(hypothesis) / duration * 60.0 > MAX_CHARS_PER_MINUTE
        scores = _without_pc(not flagged, reference, hypothesis)
        extra = {"hallucination_rate": 1.0 if flagged else 0.0, "char_rate": rate}
    else:
        wer, ref, hyp = _plain_wer(reference, hypothesis)
        scores = _without_pc(wer is not None and wer < 0.5, ref, hyp, wer or 0.0)
        fields = info.get("reference_fields") if task_type == "ASR_LEADERBOARD" else None
        if fields is not None and (
            not isinstance(fields, list) or not all(isinstance(f, str) for f in fields)
        ):
            raise TaskFieldError("extra_info.reference_fields must be a list of task field names")
        for name in fields or []:
            if name not in info:
                raise TaskFieldError(f"extra_info.reference_fields names {name[:80]!r}, which the task lacks")
            other, _, _ = _plain_wer(_string_field(info, name), hypothesis)
            suffix = name.removeprefix("text_")
            extra[f"wer_{suffix}"] = other
            extra[f"is_correct_{suffix}"] = None if other is None else other < 0.5
    return {"score": 1.0 if scores["is_correct"] else 0.0, **scores, **extra}
