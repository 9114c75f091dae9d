"""Input limits checked on every sample before any work starts.

Input limits checked on every sample before any work starts, each answered with an error naming the field
(413 `FieldTooLarge`, 422 `TooDeep` or `InvalidImage`), so no oversized or hostile input costs work.

Lengths are in characters (Python `len`), not bytes; the *size* of a JSON value is `sizes.json_size`'s,
counted without reading any string. Every setting, its default, the fields it bounds and the answer over it:
docs/security.md ("Limits and their defaults").
"""

from __future__ import annotations

from typing import Any, NoReturn

from rewardfleet.services.common.images import (
    ImageError,
    ImageLimits,
    check_images,
    check_message_images,
)
from rewardfleet.services.gateway.errors import FieldTooLarge, InvalidImage, TooDeep
from rewardfleet.services.gateway.limits.config import InputLimits
from rewardfleet.services.gateway.schemas import ScoreRequest
from rewardfleet.services.gateway.sizes import json_size


def nesting_depth(value: Any, limit: int) -> int:
    """Depth of nested dicts/lists (a scalar is 0, `{}` is 1), counted no further than `limit + 1`."""
    return json_size(value, limit, 1 << 62)[0]


def prompt_chars(prompt: Any) -> int:
    """Length of a prompt: the text, or the sum of the chat messages' string `content` (token estimates)."""
    if isinstance(prompt, str):
        return len(prompt)
    total = 0
    if isinstance(prompt, list):
        for message in prompt:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                total += len(content)
    return total


def id_chars(value: str | int, limit: int) -> int:
    """Characters of a string, or digits of an integer (estimated from its bit length past `limit` digits: an
    integer of at most 3·limit bits has at most `limit` digits; a huge one is never turned into text)."""
    if isinstance(value, str):
        return len(value)
    bits = abs(value).bit_length()
    if bits <= 3 * limit:
        return len(str(value))
    return int(bits * 0.30103) + 1


class SampleLimits:
    """The checks of the `limits:` section (`InputLimits`) on a sample."""

    def __init__(self, limits: InputLimits | None = None) -> None:
        self.limits = limits = limits if limits is not None else InputLimits()
        self.images = ImageLimits(
            max_images=limits.max_images_per_sample,
            max_image_bytes=limits.max_image_bytes,
            max_image_pixels=limits.max_image_pixels,
            allowed_url_hosts=tuple(limits.allowed_image_url_hosts),
        )

    def check(self, sample: ScoreRequest) -> None:
        """Every field of a sample against its bound; raises FieldTooLarge (413) or TooDeep (422). On the hot
        path: plain comparisons first, a function call only for a value over its bound or a JSON value."""
        lim = self.limits
        if len(sample.solution_str) > lim.max_solution_chars:
            _too_many("solution_str", len(sample.solution_str), lim.max_solution_chars)
        if len(sample.data_source) > lim.max_data_source_chars:
            _too_many("data_source", len(sample.data_source), lim.max_data_source_chars)
        uid = sample.uid
        if uid is not None and (not isinstance(uid, str) or len(uid) > lim.max_uid_chars):
            _chars("uid", id_chars(uid, lim.max_uid_chars), lim.max_uid_chars)
        if sample.reward_fn is not None and len(sample.reward_fn) > lim.max_function_name_chars:
            _too_many("reward_fn", len(sample.reward_fn), lim.max_function_name_chars)
        if sample.group_id is not None:
            _chars("group_id", id_chars(sample.group_id, lim.max_group_id_chars), lim.max_group_id_chars)
            if sample.group_fn is not None:
                _chars("group_fn", len(sample.group_fn), lim.max_function_name_chars)
        gt = sample.ground_truth
        if gt is not None:
            if isinstance(gt, str):
                if len(gt) > lim.max_ground_truth_chars:
                    _too_many("ground_truth", len(gt), lim.max_ground_truth_chars)
            else:
                self._value("ground_truth", gt, lim.max_json_depth, lim.max_ground_truth_chars)
        prompt = sample.prompt
        image_chars = (0, 0)
        if sample.images is not None or isinstance(prompt, list) or sample.messages is not None:
            image_chars = self.check_images(sample)
        if prompt is not None:
            if isinstance(prompt, str):
                if len(prompt) > lim.max_prompt_chars:
                    _too_many("prompt", len(prompt), lim.max_prompt_chars)
            else:
                self._value("prompt", prompt, lim.max_json_depth, lim.max_prompt_chars + image_chars[0])
        if sample.extra_info:
            self._value("extra_info", sample.extra_info, lim.max_extra_info_depth, lim.max_extra_info_chars)
        if sample.messages is not None:
            self._messages(sample, image_chars[1])

    def _messages(self, sample: ScoreRequest, image_chars: int) -> None:
        lim = self.limits
        messages = sample.messages or []
        if len(messages) > lim.max_messages:
            raise FieldTooLarge(
                f"messages has {len(messages)} messages; max_messages is {lim.max_messages}",
                field="messages",
            )
        self._value("messages", sample.messages, lim.max_json_depth, lim.max_messages_chars + image_chars)

    def check_images(self, sample: ScoreRequest) -> tuple[int, int]:
        """`images` and the image_url parts of `prompt` and `messages` (services/common/images.py), counted
        together: 413 for a value over a bound, 422 InvalidImage for one that is not an image or names a host
        not allowed. Returns the characters of the image URLs in `prompt` and in `messages`."""
        try:
            count = len(sample.images) if sample.images else 0
            if sample.images:
                check_images(sample.images, "images", self.images)
            prompt_chars = messages_chars = 0
            if isinstance(sample.prompt, list):
                count, prompt_chars = check_message_images(
                    sample.prompt, "prompt", self.images, already=count
                )
            if sample.messages:
                _, messages_chars = check_message_images(
                    sample.messages, "messages", self.images, already=count
                )
            return prompt_chars, messages_chars
        except ImageError as exc:
            error = FieldTooLarge if exc.too_large else InvalidImage
            raise error(str(exc), field=exc.field) from None

    def check_name(self, field: str, name: str) -> None:
        """A function or grader name from the client (a route's `{reward_fn}`, a grader's name)."""
        _chars(field, len(name), self.limits.max_function_name_chars)

    def check_grader_spec(self, spec: dict[str, Any] | str) -> None:
        if isinstance(spec, str):
            self.check_name("grader", spec)
        else:
            self._value("grader", spec, self.limits.max_json_depth, self.limits.max_grader_spec_chars)

    def _value(self, field: str, value: Any, max_depth: int, max_size: int) -> None:
        depth, size = json_size(value, max_depth, max_size)
        if depth > max_depth:
            setting = "max_extra_info_depth" if field == "extra_info" else "max_json_depth"
            raise TooDeep(f"{field} is nested more than {setting}={max_depth} deep", field=field)
        if size > max_size:
            setting = {
                "extra_info": "max_extra_info_chars",
                "ground_truth": "max_ground_truth_chars",
                "prompt": "max_prompt_chars",
                "messages": "max_messages_chars",
                "grader": "max_grader_spec_chars",
            }[field]
            raise FieldTooLarge(
                f"{field} has a size over {max_size} (values + characters); {setting} is {max_size}",
                field=field,
            )


_SETTINGS = {
    "solution_str": "max_solution_chars",
    "data_source": "max_data_source_chars",
    "uid": "max_uid_chars",
    "group_id": "max_group_id_chars",
    "reward_fn": "max_function_name_chars",
    "group_fn": "max_function_name_chars",
    "grader": "max_function_name_chars",
    "ground_truth": "max_ground_truth_chars",
    "prompt": "max_prompt_chars",
}


def _chars(field: str, size: int, limit: int) -> None:
    if size > limit:
        _too_many(field, size, limit)


def _too_many(field: str, size: int, limit: int) -> NoReturn:
    setting = _SETTINGS.get(field, field)
    raise FieldTooLarge(f"{field} has {size} characters; {setting} is {limit}", field=field)
