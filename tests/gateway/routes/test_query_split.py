"""`routes/query_split.py`: the response recovered from OpenRLHF's query, whatever the prompt's truncation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rewardfleet.services.gateway.routes.query_split import split_query


def test_split_query_fallbacks() -> None:
    assert split_query("PROMPT answer", "PROMPT ") == ("answer", True)
    # left-truncated prompt: the query begins inside the prompt
    prompt = "system: be brief. " * 10 + "user: 2+2? assistant: "
    truncated = prompt[37:]
    assert split_query(truncated + "4", prompt) == ("4", True)
    assert split_query("something else entirely", prompt) == ("something else entirely", False)
    assert split_query("q", None) == ("q", False)
    assert split_query("q", [{"role": "user", "content": "q"}]) == ("q", False)


@settings(max_examples=300, deadline=None)
@given(
    prompt=st.text(alphabet="abc <|>\n", min_size=1, max_size=200),
    cut=st.integers(min_value=0, max_value=199),
    response=st.text(alphabet="0123456789", max_size=40),
)
def test_split_query_any_truncation_length(prompt: str, cut: int, response: str) -> None:
    """OpenRLHF keeps only the prompt's last tokens: any surviving tail, even one character, is stripped
    (the response's characters never occur in the prompt here, so the split is unambiguous)."""
    tail = prompt[min(cut, len(prompt) - 1) :]
    assert split_query(tail + response, prompt) == (response, True)
