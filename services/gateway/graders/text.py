"""Text-similarity metrics, small and dependency-free.

Text-similarity metrics, small and dependency-free: fuzzy match (Indel similarity, as rapidfuzz's `ratio`),
sentence BLEU-4 and ROUGE-N / ROUGE-L F1 over word tokens."""

from __future__ import annotations

import math
import re
from collections import Counter

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
BLEU_MAX_N = 4
BLEU_EPSILON = 0.1  # precision of an order with no match (Chen & Cherry 2014, smoothing 1)


def tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


def lcs_length(a: str | list[str], b: str | list[str]) -> int:
    """Longest common subsequence, bit-parallel (Hyyrö 2004): one big-integer step per element of `b`."""
    if not a or not b:
        return 0
    masks: dict[object, int] = {}
    for i, item in enumerate(a):
        masks[item] = masks.get(item, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for item in b:
        u = v & masks.get(item, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def fuzzy_match(a: str, b: str) -> float:
    """2 * LCS / (len a + len b): 1.0 for equal strings, 0.0 with no character in common."""
    if not a and not b:
        return 1.0
    return 2.0 * lcs_length(a, b) / (len(a) + len(b))


def _ngrams(toks: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))


def bleu(hypothesis: str, reference: str) -> float:
    hyp, ref = tokens(hypothesis), tokens(reference)
    if not hyp or not ref:
        return 0.0
    log_precisions = 0.0
    for n in range(1, BLEU_MAX_N + 1):
        hyp_ngrams, ref_ngrams = _ngrams(hyp, n), _ngrams(ref, n)
        total = sum(hyp_ngrams.values())
        if total == 0:  # hypothesis shorter than n: the order is smoothed like a miss
            log_precisions += math.log(BLEU_EPSILON)
            continue
        matches = sum(min(count, ref_ngrams[g]) for g, count in hyp_ngrams.items())
        log_precisions += math.log((matches or BLEU_EPSILON) / total)
    brevity = 1.0 if len(hyp) > len(ref) else math.exp(1.0 - len(ref) / len(hyp))
    return brevity * math.exp(log_precisions / BLEU_MAX_N)


def _f1(overlap: float, hyp_total: int, ref_total: int) -> float:
    if overlap == 0 or hyp_total == 0 or ref_total == 0:
        return 0.0
    precision, recall = overlap / hyp_total, overlap / ref_total
    return 2 * precision * recall / (precision + recall)


def rouge_n(hypothesis: str, reference: str, n: int) -> float:
    hyp, ref = _ngrams(tokens(hypothesis), n), _ngrams(tokens(reference), n)
    overlap = sum(min(count, ref[g]) for g, count in hyp.items())
    return _f1(overlap, sum(hyp.values()), sum(ref.values()))


def rouge_l(hypothesis: str, reference: str) -> float:
    hyp, ref = tokens(hypothesis), tokens(reference)
    return _f1(lcs_length(hyp, ref), len(hyp), len(ref))
