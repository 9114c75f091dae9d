"""The body every NeMo Gym route reads: any JSON object, parsed by pydantic-core (malformed or too deep
JSON is a 422 naming `body`)."""

from __future__ import annotations

from typing import Any

from pydantic import RootModel


class JsonObject(RootModel[dict[str, Any]]):
    """Any JSON object."""
