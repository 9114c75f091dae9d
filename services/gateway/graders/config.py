"""The `graders:` config section: one pydantic model per grader type, told apart by `type`.

`input` and `reference` are templates: `{{ sample.output_text }}` is the response, `{{ item.ground_truth }}`
the reference answer, `{{ item.<key> }}` a key of `extra_info` (dotted paths reach nested values), plus
`{{ item.data_source }}` and `{{ item.prompt }}`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rewardfleet.services.gateway.errors import FormulaError
from rewardfleet.services.gateway.graders.formula import Formula

TEMPLATE_RE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_PATH_RE = re.compile(r"^(sample|item)(\.[A-Za-z_][A-Za-z0-9_]*)+$")
SAMPLE_FIELDS = frozenset({"output_text", "solution_str"})


# What names code in a grader spec: the kinds that run it and the fields that name a module, a file or a
# function. A request's inline spec may hold none of them (routes/graders.py): code runs only where the
# operator configured it.
CODE_KINDS = frozenset({"python"})
CODE_FIELDS = frozenset({"path", "module", "file", "function", "code", "source"})


def code_fields(spec: object, where: str = "grader") -> list[str]:
    """Where a raw (unvalidated) grader spec names code, e.g. `grader.graders.a.path`; looks inside every
    mapping and list, so a `multi` grader's inline graders are covered at any depth (iteratively: a deep
    body cannot exhaust the stack). The keys of a `multi`'s `graders` are names, not fields: a grader may
    be called `code`."""
    found: list[str] = []
    stack: list[tuple[object, str, bool]] = [(spec, where, False)]  # (value, where, its keys are names)
    while stack:
        value, at, names = stack.pop()
        if isinstance(value, dict):
            kind = value.get("type")
            if not names and isinstance(kind, str) and kind in CODE_KINDS and not CODE_FIELDS & set(value):
                found.append(f"{at}.type")
            for key, item in value.items():
                if key in CODE_FIELDS and not names:
                    found.append(f"{at}.{key}")
                else:
                    stack.append((item, f"{at}.{key}", not names and key == "graders"))
        elif isinstance(value, list):
            stack.extend((item, f"{at}.{i}", False) for i, item in enumerate(value))
    return sorted(found)


def template_paths(template: str) -> list[str]:
    return TEMPLATE_RE.findall(template)


def check_template(template: str) -> str:
    for path in template_paths(template):
        if not _PATH_RE.match(path):
            raise ValueError(
                f"{{{{ {path} }}}} is not sample.output_text or item.<key> (e.g. item.ground_truth)"
            )
        root, _, rest = path.partition(".")
        if root == "sample" and rest not in SAMPLE_FIELDS:
            raise ValueError(f"{{{{ {path} }}}}: a sample has only {sorted(SAMPLE_FIELDS)}")
    return template


class _Grader(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: str = Field(default="{{ sample.output_text }}", description="Template of the text graded.")
    reference: str = Field(default="{{ item.ground_truth }}", description="Template of the reference text.")

    @field_validator("input", "reference")
    @classmethod
    def _templates(cls, value: str) -> str:
        return check_template(value)


class StringCheck(_Grader):
    type: Literal["string_check"]
    operation: Literal["eq", "ne", "like", "ilike"] = Field(
        description="eq/ne: exact (in)equality; like: input contains reference; ilike: like, ignoring case."
    )


SimilarityMetric = Literal[
    "fuzzy_match", "bleu", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l", "cosine"
]


class TextSimilarity(_Grader):
    type: Literal["text_similarity"]
    evaluation_metric: SimilarityMetric
    pass_threshold: float | None = Field(default=None, description="Reported as extra.passed.")
    pool: str = Field(default="encoder", description="Router of the encoder pool (cosine only).")
    model: str = "default"
    timeout_s: float = Field(default=30.0, gt=0)


class ScoreModel(_Grader):
    type: Literal["score_model"]
    pool: str = "judge"
    template: str | None = Field(default=None, description="A judge template name (reward_fns/judge.py).")
    user_template: str | None = None
    system_prompt: str | None = None
    rubric: str | None = None
    scale_min: float = Field(default=1.0, description="The scale the judge is asked to answer on.")
    scale_max: float = 10.0
    range: tuple[float, float] = Field(default=(0.0, 1.0), description="The grader's score range.")
    model: str = "default"
    max_tokens: int = Field(default=1024, ge=1)
    temperature: float = 0.0
    timeout_s: float = Field(default=120.0, gt=0)
    pass_threshold: float | None = None

    @model_validator(mode="after")
    def _ranges(self) -> ScoreModel:
        if not self.range[0] < self.range[1]:
            raise ValueError(f"range {list(self.range)} must be [low, high] with low < high")
        if not self.scale_min < self.scale_max:
            raise ValueError("scale_min must be below scale_max")
        return self


class PythonGrader(_Grader):
    type: Literal["python"]
    path: str = Field(description="'module:function' or '/file.py:function'; called as f(sample, item).")
    timeout_s: float = Field(default=30.0, gt=0)

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        target, sep, attr = value.rpartition(":")
        if not sep or not target or not attr.isidentifier():
            raise ValueError(f"path {value!r} must look like 'module.name:function' or 'file.py:function'")
        return value


class MultiGrader(_Grader):
    type: Literal["multi"]
    graders: dict[str, GraderSpec | str] = Field(
        min_length=1,
        description="Name -> an inline grader, or the name of a grader of the `graders:` section.",
    )
    calculate_output: str = Field(description="Formula over the names, e.g. '0.7 * correct + 0.3 * style'.")

    @model_validator(mode="after")
    def _formula(self) -> MultiGrader:
        for name in self.graders:
            if not name.isidentifier():
                raise ValueError(f"graders: {name!r} is not usable in a formula (letters, digits, _)")
        try:
            Formula(self.calculate_output, frozenset(self.graders))
        except FormulaError as exc:
            raise ValueError(f"calculate_output: {exc}") from exc
        return self


GraderSpec = Annotated[
    StringCheck | TextSimilarity | ScoreModel | PythonGrader | MultiGrader, Field(discriminator="type")
]
MultiGrader.model_rebuild()
