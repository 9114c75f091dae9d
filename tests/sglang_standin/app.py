"""The stand-in's app factory: one state object, SGLang's unknown-path error body, the route families."""

from __future__ import annotations

import random

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException

from tests.sglang_standin.errors import on_http_exception
from tests.sglang_standin.routes import health, native, openai_generation, openai_pooling, standin
from tests.sglang_standin.state import StandinConfig, StandinState


def create_app(config: StandinConfig) -> FastAPI:
    app = FastAPI(title=f"sglang-standin {config.mode} {config.replica_id}")
    app.state.standin = StandinState(config=config, rng=random.Random(config.seed))
    app.add_exception_handler(StarletteHTTPException, on_http_exception)
    for family in (health, native, openai_generation, openai_pooling, standin):
        app.include_router(family.router)
    return app
