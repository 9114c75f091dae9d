"""FastAPI dependencies: the `ModelServer` the app factory built, injected into every route."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from rewardfleet.services.model_server.server import ModelServer


def get_server(request: Request) -> ModelServer:
    server: ModelServer = request.app.state.server
    return server


ServerDep = Annotated[ModelServer, Depends(get_server)]
