"""`rewardfleet serve-model`: a CPU model server speaking SGLang's HTTP API, with dynamic batching.

Flag names follow `python -m sglang.launch_server` where SGLang has the flag. This module must stay light
(the gateway shares the `rewardfleet` entry point): torch and transformers load inside the command only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer


def serve_model(
    model_path: Annotated[
        Path,
        typer.Option(
            "--model-path",
            help="Checkpoint directory (HF format), a .gguf file, or builtin:smollm2-135m-instruct / "
            "builtin:minilm.",
        ),
    ],
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 30000,
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    served_model_name: Annotated[
        str | None, typer.Option("--served-model-name", help="Name in /v1/models (default: the model path).")
    ] = None,
    gguf_file: Annotated[
        str | None, typer.Option("--gguf-file", help="A GGUF file inside the --model-path folder.")
    ] = None,
    tokenizer_path: Annotated[
        Path | None, typer.Option("--tokenizer-path", help="Default: --model-path.")
    ] = None,
    is_embedding: Annotated[
        bool, typer.Option("--is-embedding", help="Serve a reward model or encoder (the checkpoint decides).")
    ] = False,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="REWARDFLEET_MODEL_SERVER_API_KEY",
            help="Require `Authorization: Bearer <key>` (as SGLang; /health*, /ready*, /metrics* stay open).",
        ),
    ] = None,
    context_length: Annotated[
        int | None, typer.Option("--context-length", help="Longest input in tokens (default: the model's).")
    ] = None,
    step_tag_id: Annotated[
        int | None,
        typer.Option("--step-tag-id", help="PRM: the token id whose positions get a step reward (as vLLM)."),
    ] = None,
    returned_token_ids: Annotated[
        str | None,
        typer.Option(
            "--returned-token-ids",
            help="PRM from a causal LM (Math-Shepherd style): comma-separated vocabulary ids whose logits "
            "are the step labels, e.g. 648,387.",
        ),
    ] = None,
    max_batch_size: Annotated[int, typer.Option("--max-batch-size", help="Requests per forward pass.")] = 32,
    batch_wait_timeout_s: Annotated[
        float,
        typer.Option("--batch-wait-timeout-s", help="Longest wait for a batch to fill, from its first item."),
    ] = 0.005,
    max_queue: Annotated[
        int, typer.Option("--max-queue", help="Queued requests per operation before answering 503.")
    ] = 1024,
    retry_after_s: Annotated[
        int, typer.Option("--retry-after-s", help="Retry-After on a 503 for a full queue.")
    ] = 1,
    body_read_timeout_s: Annotated[
        float,
        typer.Option("--body-read-timeout-s", help="Seconds a request body may take to arrive, else 408."),
    ] = 30.0,
    max_body_bytes: Annotated[
        int | None, typer.Option("--max-body-bytes", help="Largest request body, else 413 (default: none).")
    ] = None,
    max_image_bytes: Annotated[
        int,
        typer.Option("--max-image-bytes", help="Largest image (decoded file): CLIP items, VLM image parts."),
    ] = 8 * 1024 * 1024,
    max_image_pixels: Annotated[
        int, typer.Option("--max-image-pixels", help="Largest width x height of an image (CLIP, VLM).")
    ] = 4096 * 4096,
    max_new_tokens_limit: Annotated[
        int, typer.Option("--max-new-tokens-limit", help="Largest max_new_tokens a request may ask for.")
    ] = 2048,
    torch_num_threads: Annotated[
        int | None, typer.Option("--torch-num-threads", help="torch intra-op threads (default: torch's).")
    ] = None,
    deterministic: Annotated[
        bool,
        typer.Option(
            "--enable-deterministic-inference",
            help="Bitwise the same output alone or in any batch (fixed-shape forwards, packed rows).",
        ),
    ] = False,
    engine_process: Annotated[
        bool,
        typer.Option(
            "--engine-process/--no-engine-process",
            help="Run a reward model or encoder in its own process, apart from HTTP (generation stays in).",
        ),
    ] = True,
    dtype: Annotated[str, typer.Option("--dtype", help="float32, bfloat16, float16 or auto.")] = "float32",
    skip_server_warmup: Annotated[bool, typer.Option("--skip-server-warmup")] = False,
    log_level: Annotated[str, typer.Option("--log-level")] = "info",
) -> None:
    """Serve one model over SGLang's HTTP API (CPU, dynamic batching)."""
    from pydantic import SecretStr, ValidationError

    from rewardfleet.services.model_server.config import ModelServerSettings

    try:
        settings = ModelServerSettings(
            model_path=model_path,
            gguf_file=gguf_file,
            tokenizer_path=tokenizer_path,
            served_model_name=served_model_name,
            host=host,
            port=port,
            is_embedding=is_embedding,
            # An empty --api-key is refused by the settings, not taken as "no key".
            api_key=SecretStr(api_key) if api_key is not None else None,
            body_read_timeout_s=body_read_timeout_s,
            max_body_bytes=max_body_bytes,
            context_length=context_length,
            step_tag_id=step_tag_id,
            returned_token_ids=_token_ids(returned_token_ids),
            max_image_bytes=max_image_bytes,
            max_image_pixels=max_image_pixels,
            max_batch_size=max_batch_size,
            batch_wait_timeout_s=batch_wait_timeout_s,
            max_queue=max_queue,
            retry_after_s=retry_after_s,
            max_new_tokens_limit=max_new_tokens_limit,
            torch_num_threads=torch_num_threads,
            engine_process=engine_process,
            deterministic=deterministic,
            dtype=dtype,
            skip_server_warmup=skip_server_warmup,
            log_level=log_level,
        )
    except ValidationError as exc:
        typer.echo(f"invalid settings:\n{exc}", err=True)
        raise typer.Exit(2) from None
    run(settings)


def _token_ids(value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        typer.echo(f"--returned-token-ids {value!r}: expected comma-separated integers", err=True)
        raise typer.Exit(2) from None


def run(settings: object) -> None:
    import uvicorn

    from rewardfleet.services.model_server.app import create_app
    from rewardfleet.services.model_server.config import ModelServerSettings

    if not isinstance(settings, ModelServerSettings):
        raise TypeError("run() needs ModelServerSettings")
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    uv_server: uvicorn.Server | None = None

    def stop_serving() -> None:
        if uv_server is not None:
            uv_server.should_exit = True

    app = create_app(settings, on_boot_failure=stop_serving)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        access_log=False,
        timeout_keep_alive=5,
    )
    uv_server = uvicorn.Server(config)
    uv_server.run()
    if app.state.server.boot_error is not None:
        typer.echo(f"model server failed to start: {app.state.server.boot_error}", err=True)
        raise typer.Exit(1)
