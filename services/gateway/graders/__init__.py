"""Declarative graders (no Python), after OpenAI's grader types.

Declarative graders (no Python), after OpenAI's grader types: `config` (one model per type), `formula`
(a multi grader's `calculate_output`), `runtime` (checks and runs them), `text` (similarity metrics)."""
