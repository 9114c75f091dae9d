"""Config sections `limits:` (a sample's fields) and `body:` (a request body as it arrives).

Config sections `limits:`, the bounds of every client-supplied field of a sample (input_limits.py,
docs/security.md), images included (services/common/images.py, docs/multimodal.md), and `body:`, the bounds
of a request body as it arrives (services/common/body_limits.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class InputLimits(BaseModel):
    """Per-sample bounds; each refusal names its field and the setting (input_limits.py)."""

    model_config = ConfigDict(extra="forbid")

    max_solution_chars: int = Field(default=1_000_000, ge=1)
    max_ground_truth_chars: int = Field(default=1_000_000, ge=1)
    max_prompt_chars: int = Field(default=1_000_000, ge=1)
    max_extra_info_depth: int = Field(default=16, ge=1)
    max_messages: int = Field(default=256, ge=1, description="Messages of one sample's trajectory.")
    max_messages_chars: int = Field(
        default=1_000_000, ge=1, description="A trajectory's size: values + characters, like extra_info's."
    )
    max_extra_info_chars: int = Field(
        default=1_000_000, ge=1, description="extra_info size: values + characters of its keys and strings."
    )
    max_json_depth: int = Field(
        default=16, ge=1, description="Nesting of ground_truth, prompt messages and an inline grader spec."
    )
    max_uid_chars: int = Field(default=256, ge=1, description="uid (a string, or an integer's digits).")
    max_data_source_chars: int = Field(default=256, ge=1)
    max_group_id_chars: int = Field(default=256, ge=1, description="group_id (a string, or integer digits).")
    max_result_extra_chars: int = Field(
        default=1_000_000,
        ge=1024,
        description="Size of a function's `extra` (like extra_info's); larger is a ResultTooLarge error.",
    )
    max_function_name_chars: int = Field(
        default=128, ge=1, description="reward_fn, group_fn, the {reward_fn} of a route, a grader's name."
    )
    max_grader_spec_chars: int = Field(
        default=100_000, ge=1, description="An inline grader spec on /graders/*, sized like extra_info."
    )
    max_images_per_sample: int = Field(
        default=16, ge=0, description="Images of one sample: `images` plus image_url parts of `prompt`."
    )
    max_image_bytes: int = Field(default=8 * 1024 * 1024, ge=1, description="One image's decoded bytes.")
    max_image_pixels: int = Field(
        default=4096 * 4096, ge=1, description="One image's width x height, read from its header only."
    )
    allowed_image_url_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts an image URL may name (`*.example.org` for subdomains); empty = no image URL is "
        "accepted (inline data: URLs only). The gateway never fetches a URL; the judge pool does.",
    )


class BodyLimits(BaseModel):
    """Per-request bounds, checked before a body is parsed (413 or 408, naming the key)."""

    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    body_read_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="A request body must arrive within this many seconds of its first read, else 408 "
        "(a slow or endless body would hold an admission slot).",
    )
    max_batch_samples: int = Field(default=4096, ge=1, description="Largest accepted /score/batch.")
