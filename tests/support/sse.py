"""Server-Sent Events in tests of the token service."""

from __future__ import annotations

import json


def events(response) -> list[dict]:
    """The Server-Sent Events of a stream response, each `data:` line parsed as JSON."""
    assert response.headers["content-type"].startswith("text/event-stream")
    out = []
    for block in response.text.split("\n\n"):
        if block.strip():
            assert block.startswith("data: "), block
            out.append(json.loads(block[len("data: "):]))
    return out
