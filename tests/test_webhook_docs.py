"""docs/webhooks.md's Python verification snippets, run as written against a real delivery:
each accepts it with the endpoint's secret (the docs' `whsec_...` replaced by it, the one
substitution the docs ask of the reader), and refuses it tampered or with another secret."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import trio
from helpers import Server, add_endpoint
from hosted import paid_session
from receiver import start_receiver

DOCS = Path(__file__).parent.parent / "docs" / "webhooks.md"
OTHER_SECRET = "whsec_" + "A" * 43 + "="


def snippet(heading: str) -> str:
    """The first ```python block under `### <heading>` in docs/webhooks.md."""
    section = DOCS.read_text().split(f"\n### {heading}\n", 1)[1].split("\n### ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, heading
    return found.group(1)


def run(code: str, secret: str | None = None, **names: Any) -> dict[str, Any]:
    """Execute `code` (with `secret` for the docs' placeholder); its names afterwards."""
    if secret is not None:
        assert '"whsec_..."' in code
        code = code.replace('"whsec_..."', repr(secret))
    scope: dict[str, Any] = {"__name__": "snippet", **names}
    exec(compile(code, "docs/webhooks.md", "exec"), scope)
    return scope


async def test_the_python_snippets_verify_a_real_delivery(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint = await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    (delivery,) = await receiver.wait_for(1)
    body, headers, secret = delivery.body, dict(delivery.headers), endpoint["secret"]
    tampered = body.replace(b'"paid"', b'"open"')
    assert tampered != body

    # fgcpay's function: 200 for the delivery, 400 for a forged one.
    code = snippet("Python, with fgcpay's function")
    handle = run(code, secret)["handle"]
    assert handle(body, headers) == 200
    assert handle(tampered, headers) == 400
    assert run(code, OTHER_SECRET)["handle"](body, headers) == 400

    # A Standard Webhooks library: the parsed event, or an exception.
    code = snippet("Python, with any Standard Webhooks library")
    event = run(code, secret, raw_body=body, headers=headers)["event"]
    assert event["type"] == "checkout.session.paid"
    for forged, key in ((tampered, secret), (body, OTHER_SECRET)):
        try:
            run(code, key, raw_body=forged, headers=headers)
        except Exception as error:
            assert "signature" in str(error).lower(), error
        else:
            raise AssertionError("a forged delivery verified")

    # By hand: the Service-Signature header.
    verify = run(snippet("Python, by hand"))["verify"]
    timestamp, signature = headers["service-timestamp"], headers["service-signature"]
    assert verify(body, timestamp, signature, secret) is True
    assert verify(tampered, timestamp, signature, secret) is False
    assert verify(body, timestamp, signature, OTHER_SECRET) is False
