"""The model server's settings: one pydantic-settings class, built by the CLI (or a test) and injected.

Field names follow `sglang.launch_server` where a flag exists there (`model_path`, `served_model_name`,
`is_embedding`, `context_length`, ...); every duration and size carries its unit. Environment variables with
the `REWARDFLEET_MODEL_SERVER_` prefix fill fields the caller did not set.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rewardfleet.services.common.api_keys import check_api_keys
from rewardfleet.services.model_server.checkpoints import Checkpoint, locate_checkpoint, resolve_builtin


class ModelServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REWARDFLEET_MODEL_SERVER_", extra="forbid")

    # A checkpoint folder, a `.gguf` file, or a built-in (`builtin:smollm2-135m-instruct`, `builtin:minilm`).
    model_path: Path
    # A GGUF file inside the `model_path` folder (SGLang takes the file itself as --model-path; both work).
    gguf_file: str | None = None
    tokenizer_path: Path | None = None
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=30000, ge=1, le=65535)
    # SGLang needs --is-embedding for reward/embedding models; here the kind comes from the checkpoint's
    # architecture, and the flag only refuses to start a causal LM as an embedding model.
    is_embedding: bool = False
    # SGLang's --api-key: requests need `Authorization: Bearer <key>` (probes and /metrics stay open).
    # At least 16 characters (`rewardfleet.services.common.api_keys`): an empty or short key is refused.
    api_key: SecretStr | None = None
    # A request body must arrive within this many seconds of the first read, else 408 (slow or endless
    # bodies would hold a batch slot); `max_body_bytes` (None: no limit, as SGLang) answers 413 above it.
    body_read_timeout_s: float = Field(default=30.0, gt=0.0)
    max_body_bytes: int | None = Field(default=None, ge=1)
    context_length: int | None = Field(default=None, ge=1)
    # Images of a request: CLIP embedding items (`image_inputs.py`) and a vision-language model's chat
    # image parts (services/common/images.py), inline only: the decoded file's size and width x height;
    # above either, a 400 naming the field (checked before the pixels are decoded).
    max_images_per_request: int = Field(default=16, ge=0)
    max_image_bytes: int = Field(default=8 * 1024 * 1024, ge=1)
    max_image_pixels: int = Field(default=4096 * 4096, ge=1)

    # Process reward models (vLLM's pooler config of the same names): the token id whose positions are pooled
    # (None: the family's default, vLLM's 151651 `<extra_0>` for Qwen2ForProcessRewardModel; else every
    # token), and, for a causal LM served as a PRM (Math-Shepherd style), the vocabulary ids whose LM logits
    # make the step's labels (e.g. the ids of "+" and "-"). Setting `returned_token_ids` makes a causal LM
    # checkpoint a PRM.
    step_tag_id: int | None = Field(default=None, ge=0)
    returned_token_ids: list[int] | None = Field(default=None, min_length=1)

    max_batch_size: int = Field(default=32, ge=1)
    batch_wait_timeout_s: float = Field(default=0.005, ge=0.0, le=10.0)
    max_queue: int = Field(default=1024, ge=1)
    retry_after_s: int = Field(default=1, ge=0)
    # Generation is batched too; a generate batch runs until its longest request ends.
    max_new_tokens_limit: int = Field(default=2048, ge=1)

    torch_num_threads: int | None = Field(default=None, ge=1)
    # SGLang's --enable-deterministic-inference: a score or a generation is bitwise the same alone or in any
    # batch. Pooling models run fixed-shape forwards (rows of a length bucket share one, padded to the bucket
    # and to a multiple of 4 rows); generation packs every running row into one forward, attention per row
    # over its own cache (runners/rowwise.py). Unseeded sampling uses seed 42, as SGLang's deterministic mode
    # (runners/deterministic.py, docs/reproducibility.md).
    deterministic: bool = False
    # Reward models and encoders run in their own engine process (engine.py); False keeps them in the
    # HTTP process. Generation always runs in the HTTP process.
    engine_process: bool = True
    dtype: str = "float32"
    skip_server_warmup: bool = False
    log_level: str = "info"

    @field_validator("api_key")
    @classmethod
    def _strong_api_key(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None:
            check_api_keys([v.get_secret_value()], "api_key")
        return v

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, v: str) -> str:
        if v not in ("float32", "bfloat16", "float16", "auto"):
            raise ValueError(f"dtype must be float32, bfloat16, float16 or auto, not {v!r}")
        return v

    @field_validator("model_path", mode="before")
    @classmethod
    def _builtin(cls, v: object) -> object:
        # typer hands over a Path; `builtin:…` survives Path() unchanged.
        if isinstance(v, str | Path) and str(v).startswith("builtin:"):
            return resolve_builtin(str(v))
        return v

    @model_validator(mode="after")
    def _checkpoint_exists(self) -> ModelServerSettings:
        checkpoint = locate_checkpoint(self.model_path, self.gguf_file)
        for path in (checkpoint.folder, self.tokenizer_path):
            if path is not None:
                check_readable_dir(path)
        return self

    @property
    def checkpoint(self) -> Checkpoint:
        return locate_checkpoint(self.model_path, self.gguf_file)

    @property
    def model_name(self) -> str:
        """The name clients send as `model` and see in `/v1/models` (SGLang: served name, else the path)."""
        return self.served_model_name or str(self.model_path)


def check_readable_dir(path: Path) -> None:
    """Fail with the file, its mode and owner, and this process's uid when a model file cannot be read.

    transformers reports an unreadable file as missing ("No such file or directory"); a checkpoint mounted
    with root-only permissions into an image that runs as a non-root user is the usual cause.
    """
    try:
        is_dir = path.is_dir()
    except PermissionError:
        raise ValueError(f"{path}: a parent directory cannot be entered by uid {os.getuid()}") from None
    if not is_dir:
        raise ValueError(f"{path} is not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise ValueError(_unreadable(path, "cannot be listed"))
    for root, dirs, files in os.walk(path):
        for name in dirs:
            sub = Path(root, name)
            if not os.access(sub, os.R_OK | os.X_OK):
                raise ValueError(_unreadable(sub, "cannot be listed"))
        for name in files:
            file = Path(root, name)
            if not os.access(file, os.R_OK):
                raise ValueError(_unreadable(file, "cannot be read"))


def _unreadable(path: Path, what: str) -> str:
    try:
        st = path.stat()
        owner = f"mode {st.st_mode & 0o777:04o}, owner uid {st.st_uid}"
    except OSError:
        owner = "its parent directory cannot be entered"
    return (
        f"{path} {what} by this process (uid {os.getuid()}; {owner}). Make the model files readable by that "
        "user, e.g. `chmod -R a+rX` on the checkpoint, or mount them with a matching owner."
    )
