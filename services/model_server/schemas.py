"""Request bodies of the SGLang HTTP API subset this server speaks.

Unknown fields are ignored, as SGLang does: sglang-router re-serialises bodies and injects its own defaults
(`"model": null`, `"log_metrics": true`, `"separate_reasoning": true`, ...). A `null` for an optional field
means "use the default". Validation errors become 400s naming the field (see errors.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEFAULT_MODEL_NAME = "default"


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        # `null` means "not given": fall back to the field's default.
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


def _check_texts(value: str | list[str], field: str) -> None:
    texts = [value] if isinstance(value, str) else value
    if not texts:
        raise ValueError(f"{field} must not be an empty list")
    for i, t in enumerate(texts):
        if not t.strip():
            where = field if isinstance(value, str) else f"{field}[{i}]"
            raise ValueError(f"{where} must not be empty or whitespace only")


def _check_ids(value: list[int] | list[list[int]], field: str) -> None:
    if not value:
        raise ValueError(f"{field} must not be empty")
    rows = value if isinstance(value[0], list) else [value]
    for i, row in enumerate(rows):
        if not row:
            raise ValueError(f"{field}[{i}] must not be empty")


def _check_texts_or_ids(value: Any, field: str) -> Any:
    """OpenAI `input`/`prompt`: a text, a list of texts, token ids, or a list of token-id lists."""
    if isinstance(value, str) or (isinstance(value, list) and value and isinstance(value[0], str)):
        _check_texts(value, field)
    else:
        _check_ids(value, field)
    return value


# -- native: /classify, /encode, /generate -----------------------------------------------------------------
class EmbedRequest(_Body):
    """`/classify`, `/encode`: text, a list of texts, token ids, or a list of token-id lists."""

    text: str | list[str] | None = None
    input_ids: list[int] | list[list[int]] | None = None
    rid: str | list[str] | None = None

    @model_validator(mode="after")
    def _one_input(self) -> EmbedRequest:
        if (self.text is None) == (self.input_ids is None):
            raise ValueError("give exactly one of 'text' or 'input_ids'")
        if self.text is not None:
            _check_texts(self.text, "text")
        if self.input_ids is not None:
            _check_ids(self.input_ids, "input_ids")
        return self


class SamplingParamsBody(_Body):
    # Numbers are strict, as SGLang's JSON-contract gate is: "5", 4.0 (for an int) and true are refused.
    max_new_tokens: int = Field(default=128, ge=0, strict=True)  # 0: prompt logprobs only (return_logprob)
    temperature: float = Field(default=1.0, ge=0.0, strict=True)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, strict=True)
    top_k: int = Field(default=-1, strict=True)
    min_p: float = Field(default=0.0, ge=0.0, le=1.0, strict=True)
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    no_stop_trim: bool = False
    n: int = Field(default=1, strict=True)
    # SGLang's range check (sampling_params.py): outside int64 a 400 naming the field, not a torch error.
    sampling_seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1, strict=True)
    # Constrained decoding (at most one): a regex, a JSON schema (as a JSON string, as SGLang takes it; an
    # object is accepted too) or an EBNF/GBNF grammar the output must match.
    regex: str | None = None
    json_schema: str | dict[str, Any] | None = None
    ebnf: str | None = None

    @field_validator("top_k")
    @classmethod
    def _top_k(cls, v: int) -> int:
        if v == 0 or v < -1:
            raise ValueError("top_k must be -1 (disabled) or >= 1")
        return v

    @field_validator("n")
    @classmethod
    def _n(cls, v: int) -> int:
        if v != 1:
            raise ValueError("only n=1 is supported")
        return v

    @field_validator("stop")
    @classmethod
    def _stop(cls, v: str | list[str] | None) -> str | list[str] | None:
        stops = [v] if isinstance(v, str) else (v or [])
        if any(not s for s in stops):
            raise ValueError("stop strings must not be empty")
        return v


class GenerateRequest(_Body):
    text: str | list[str] | None = None
    input_ids: list[int] | list[list[int]] | None = None
    sampling_params: SamplingParamsBody | list[SamplingParamsBody] = Field(default_factory=SamplingParamsBody)
    stream: bool = False
    return_logprob: bool = False
    # SGLang's prompt-logprob fields (io_struct.GenerateReqInput); only input logprobs are served here.
    logprob_start_len: int = Field(default=-1, ge=-1, strict=True)
    top_logprobs_num: int = Field(default=0, ge=0, strict=True)
    token_ids_logprob: list[int] | None = None
    return_text_in_logprobs: bool = False
    rid: str | list[str] | None = None

    @model_validator(mode="after")
    def _one_input(self) -> GenerateRequest:
        if (self.text is None) == (self.input_ids is None):
            raise ValueError("give exactly one of 'text' or 'input_ids'")
        if self.text is not None:
            _check_texts(self.text, "text")
        if self.input_ids is not None:
            _check_ids(self.input_ids, "input_ids")
        if self.stream:
            raise ValueError("stream=true is not supported by this CPU server; send stream=false")
        if self.return_logprob and (self.top_logprobs_num or self.token_ids_logprob):
            raise ValueError("top_logprobs_num and token_ids_logprob are not supported by this CPU server")
        params = self.sampling_params if isinstance(self.sampling_params, list) else [self.sampling_params]
        zero = [p.max_new_tokens == 0 for p in params]
        if any(zero) and not all(zero):
            raise ValueError(
                "sampling_params.max_new_tokens: 0 for some inputs and not others is not supported"
            )
        if self.return_logprob and not all(zero):
            raise ValueError(
                "return_logprob with max_new_tokens > 0 (output token logprobs) is not supported by this CPU "
                "server; send sampling_params.max_new_tokens 0 for prompt logprobs (input_token_logprobs)"
            )
        return self


# -- OpenAI-compatible ------------------------------------------------------------------------------------
class MultimodalEmbeddingInput(_Body):
    """SGLang's item of a multimodal embedding request (`image_inputs.py` says what is accepted)."""

    text: str | None = None
    image: str | None = None
    video: str | None = None


class EmbeddingsRequest(_Body):
    input: str | list[str] | list[int] | list[list[int]] | list[MultimodalEmbeddingInput]
    model: str = DEFAULT_MODEL_NAME
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)

    @field_validator("input", mode="before")
    @classmethod
    def _multimodal(cls, v: Any) -> Any:
        # Checked here, so a wrong item is one message naming it, not one per branch of the union.
        if not (isinstance(v, list) and v and isinstance(v[0], dict)):
            return v
        items = []
        for i, item in enumerate(v):
            if not isinstance(item, dict):
                raise ValueError(
                    f"input[{i}] must be an object like input[0] ({{'text': ...}} or {{'image': ...}})"
                )
            for key in ("text", "image", "video"):
                if item.get(key) is not None and not isinstance(item[key], str):
                    raise ValueError(f"input[{i}].{key} must be a string")
            items.append(MultimodalEmbeddingInput.model_validate(item))
        return items

    @field_validator("input")
    @classmethod
    def _input(cls, v: Any) -> Any:
        if isinstance(v, list) and v and isinstance(v[0], MultimodalEmbeddingInput):
            return v
        return _check_texts_or_ids(v, "input")

    @property
    def multimodal_items(self) -> list[dict[str, str | None]] | None:
        """The `MultimodalEmbeddingInput` items as dicts, or None for a text / token-id input."""
        if (
            isinstance(self.input, list)
            and self.input
            and isinstance(self.input[0], MultimodalEmbeddingInput)
        ):
            return [item.model_dump() for item in self.input]
        return None


class ClassifyRequest(_Body):
    input: str | list[str] | list[int]
    model: str = DEFAULT_MODEL_NAME

    @field_validator("input")
    @classmethod
    def _input(cls, v: Any) -> Any:
        return _check_texts_or_ids(v, "input")


class RerankRequest(_Body):
    query: str
    documents: list[str]
    top_n: int | None = Field(default=None, ge=1)
    return_documents: bool = True

    @model_validator(mode="after")
    def _texts(self) -> RerankRequest:
        _check_texts(self.query, "query")
        _check_texts(self.documents, "documents")
        return self


class ScoreRequest(_Body):
    query: str | list[int]
    items: str | list[str] | list[list[int]]
    label_token_ids: list[int] = Field(min_length=1)
    apply_softmax: bool = False
    item_first: bool = False
    model: str = DEFAULT_MODEL_NAME

    @model_validator(mode="after")
    def _kinds_match(self) -> ScoreRequest:
        items = [self.items] if isinstance(self.items, str) else self.items
        if not items:
            raise ValueError("items must not be empty")
        query_is_text = isinstance(self.query, str)
        if any(isinstance(it, str) != query_is_text for it in items):
            raise ValueError("query and items must both be text or both be token ids")
        if query_is_text and not (self.query or any(items)):
            raise ValueError("query and items are all empty")
        return self


class ContentPart(_Body):
    type: Literal["text"]
    text: str


class ImageUrl(_Body):
    url: str
    detail: Literal["auto", "low", "high"] = "auto"


class ImageUrlPart(_Body):
    """An image, as SGLang's `ChatCompletionMessageContentImagePart` (a vision-language model only)."""

    type: Literal["image_url"]
    image_url: ImageUrl


class ChatMessage(_Body):
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[ContentPart | ImageUrlPart] = ""

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content if isinstance(part, ContentPart))

    def image_urls(self) -> list[str]:
        if isinstance(self.content, str):
            return []
        return [part.image_url.url for part in self.content if isinstance(part, ImageUrlPart)]


class JsonSchemaFormat(_Body):
    name: str = "schema"
    # OpenAI's field is `schema`, which would shadow a pydantic BaseModel attribute.
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool = False


class ResponseFormat(_Body):
    """OpenAI `response_format`: `text`, `json_object` (any JSON object) or `json_schema`."""

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None

    @model_validator(mode="after")
    def _schema_given(self) -> ResponseFormat:
        if self.type == "json_schema" and self.json_schema is None:
            raise ValueError("response_format.json_schema is required for type json_schema")
        return self


class _OpenAISampling(_Body):
    model: str = DEFAULT_MODEL_NAME
    temperature: float = Field(default=1.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int = -1
    min_p: float = Field(default=0.0, ge=0.0, le=1.0)
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)  # SGLang's sampling_seed
    n: int = 1
    stream: bool = False
    logprobs: bool | int = False
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    no_stop_trim: bool = False
    # Constrained decoding: OpenAI's response_format, or SGLang's extra `regex` / `ebnf` fields.
    response_format: ResponseFormat | None = None
    regex: str | None = None
    ebnf: str | None = None

    @model_validator(mode="after")
    def _supported(self) -> _OpenAISampling:
        if self.n != 1:
            raise ValueError("only n=1 is supported")
        if self.stream:
            raise ValueError("stream=true is not supported by this CPU server; send stream=false")
        if self.logprobs:
            raise ValueError("logprobs are not supported by this CPU server")
        if self.top_k == 0 or self.top_k < -1:
            raise ValueError("top_k must be -1 (disabled) or >= 1")
        stops = [self.stop] if isinstance(self.stop, str) else (self.stop or [])
        if any(not s for s in stops):
            raise ValueError("stop strings must not be empty")
        return self


class ChatCompletionRequest(_OpenAISampling):
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    continue_final_message: bool = False
    chat_template_kwargs: dict[str, Any] | None = None


class CompletionRequest(_OpenAISampling):
    prompt: str | list[str] | list[int] | list[list[int]]
    max_tokens: int = Field(default=16, ge=1)
    echo: bool = False

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, v: Any) -> Any:
        return _check_texts_or_ids(v, "prompt")


def image_url_parts(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """Every `image_url` part of a chat, in order, as (its field path `messages[i].content[j]`, its url)."""
    return [
        (f"messages[{m}].content[{p}]", part.image_url.url)
        for m, message in enumerate(messages)
        if not isinstance(message.content, str)
        for p, part in enumerate(message.content)
        if isinstance(part, ImageUrlPart)
    ]


# -- vLLM's pooling API: /pooling (process reward models) --------------------------------------------------
class RefusedField(ValueError):
    """A request field refused by name; `param` names it in the error body (vLLM's `ErrorInfo.param`)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


# Names vLLM 0.33 no longer takes. It refuses `normalize` (and the `encode` and `score` tasks) itself; its
# request classes have no `softmax` or `activation` any more, so it ignores them (unknown fields are allowed):
# a client that still sends `softmax: false` for raw logits would get probabilities, so they are refused here.
_REMOVED_FIELDS = ("normalize", "softmax", "activation")
_REMOVED_TASKS = {"encode": "token_classify", "score": "classify"}
# vLLM's `PoolingTask` (vllm/tasks.py): what its request classes take; a PRM then serves only token_classify.
PoolingTask = Literal["embed", "classify", "token_embed", "token_classify", "plugin", "embed&token_classify"]


class PoolingRequest(_Body):
    """vLLM 0.33's `PoolingRequest` (`vllm/entrypoints/pooling/pooling/protocol.py`):
    `PoolingCompletionRequest` (`input`) or `PoolingChatRequest` (`messages`), with the fields of its mixins
    (`vllm/entrypoints/pooling/base/protocol.py`). Fields this server cannot honour are refused by name
    rather than ignored: a PRM's answer must not silently differ from vLLM's. tests/vllm_conformance checks
    this against vLLM's own classes."""

    model: str | None = None
    user: str | None = None
    request_id: str | None = None
    priority: int = 0
    truncate_prompt_tokens: int | None = Field(default=None, ge=-1)
    padding: Literal["max_length", "do_not_pad"] | None = None
    truncation_side: Literal["left", "right"] | None = None
    task: PoolingTask | None = None
    # vLLM's order of the union, so that the first error of a bad `input` is the one vLLM reports first.
    input: list[int] | list[list[int]] | str | list[str] | None = None
    messages: list[ChatMessage] | None = Field(default=None, min_length=1)
    # vLLM's default is True for `input` and False for `messages` (the chat template adds them).
    add_special_tokens: bool | None = None
    add_generation_prompt: bool = False
    continue_final_message: bool = False
    chat_template: str | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    mm_processor_kwargs: dict[str, Any] | None = None
    encoding_format: str = "float"
    embed_dtype: str = "float32"
    endianness: str = "native"
    dimensions: int | None = None
    use_activation: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _removed(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in _REMOVED_FIELDS:
                if name in data:
                    raise RefusedField(
                        f"`{name}` was removed from vLLM's pooling API; use `use_activation`", name
                    )
            task = data.get("task")
            if isinstance(task, str) and task in _REMOVED_TASKS:
                raise RefusedField(
                    f"task `{task}` was removed from vLLM's pooling API; use `{_REMOVED_TASKS[task]}`", "task"
                )
        return data

    @model_validator(mode="after")
    def _supported(self) -> PoolingRequest:
        if (self.input is None) == (self.messages is None):
            raise ValueError("give exactly one of 'input' or 'messages'")
        if self.input is not None:
            _check_texts_or_ids(self.input, "input")
        if self.continue_final_message and self.add_generation_prompt:
            raise ValueError("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
        refused = {
            "task": self.task not in (None, "token_classify"),
            "truncate_prompt_tokens": self.truncate_prompt_tokens is not None,
            "padding": self.padding == "max_length",
            "priority": self.priority != 0,
            "chat_template": self.chat_template is not None,
            "mm_processor_kwargs": self.mm_processor_kwargs is not None,
            "encoding_format": self.encoding_format != "float",
            "dimensions": self.dimensions is not None,
        }
        bad = [name for name, is_bad in refused.items() if is_bad]
        if bad:
            raise RefusedField(
                f"{', '.join(bad)}: not supported by this server's process reward models (task must be "
                "token_classify, encoding_format float; truncation, padding to max_length, priority, a "
                "request's own chat_template, mm_processor_kwargs and dimensions are refused)",
                bad[0],
            )
        return self

    @property
    def activation_on(self) -> bool:
        """`use_activation`; unset, the STEP pooler's default: on."""
        return True if self.use_activation is None else self.use_activation
