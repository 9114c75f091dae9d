"""`parse_json_body`: any Content-Type; errors located at `body.<field>`, for each service's envelope."""

from __future__ import annotations

import pytest
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel

from rewardfleet.services.common.json_body import parse_json_body


class Sample(BaseModel):
    text: str
    n: int = 1


def _request(body: bytes) -> Request:
    sent = False

    async def receive() -> dict[str, object]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return Request({"type": "http", "method": "POST", "path": "/", "headers": []}, receive)


async def test_parses_without_a_content_type() -> None:
    assert await parse_json_body(_request(b'{"text": "hi", "n": 2}'), Sample) == Sample(text="hi", n=2)


@pytest.mark.parametrize(
    ("body", "loc"),
    [(b'{"n": 2}', ("body", "text")), (b'{"text": "a", "n": "x"}', ("body", "n")), (b"{", ("body",))],
)
async def test_errors_name_the_field(body: bytes, loc: tuple[str, ...]) -> None:
    with pytest.raises(RequestValidationError) as info:
        await parse_json_body(_request(body), Sample)
    assert info.value.errors()[0]["loc"][: len(loc)] == loc
