"""Declarative graders (no Python needed), after OpenAI's grader types: `string_check`, `text_similarity`,
`score_model`, `python` and `multi`. Their config is `config/graders.py`; `runtime.py` checks and runs them,
`text.py` holds the similarity metrics."""
