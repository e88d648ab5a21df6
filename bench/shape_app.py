"""A second ceiling, for analysis: the create-session request *shape* on the same stack
(QuartTrio on hypercorn's trio worker) with no service behind it.

POST /api/v1/checkout/sessions reads and parses the JSON body and answers 201 with a
pre-serialised body of the same size and the same response headers as fgcpay's create
(Request-Id, RateLimit-Policy, RateLimit, Cache-Control). The difference between this
and the GET / hello-world is what the request/response shape costs in the HTTP stack;
the difference between this and fgcpay is what the service's own code costs.
"""

import json
import secrets

from quart import Response, request
from quart_trio import QuartTrio

app = QuartTrio(__name__)

_BODY = json.dumps(
    {
        "id": "cs_test_EdQn0CeRvb4CJ6KwUTKagKZo",
        "object": "checkout_session",
        "mode": "test",
        "status": "created",
        "currency": "FGC",
        "amount_minor": "1250",
        "amount_fgc": "12.50",
        "eur_cents": "1250",
        "checkout_session_id": "cs_test_EdQn0CeRvb4CJ6KwUTKagKZo",
        "checkout_url": "http://127.0.0.1:18080/checkout/cs_test_EdQn0CeRvb4CJ6KwUTKagKZo",
        "customer_email": None,
        "customer_reference": None,
        "description": "bench",
        "success_url": "https://shop.example/ok",
        "cancel_url": "https://shop.example/cancel",
        "external_reference": None,
        "metadata": {},
        "expires_at": "2026-11-23T14:35:01.915Z",
        "created_at": "2026-11-22T14:35:01.915Z",
        "updated_at": "2026-11-22T14:35:01.915Z",
        "paid_at": None,
    },
    separators=(",", ":"),
)


@app.post("/api/v1/checkout/sessions")
async def create() -> Response:
    json.loads(await request.get_data())
    return Response(
        _BODY,
        status=201,
        headers={
            "Content-Type": "application/json",
            "Request-Id": "req_" + secrets.token_hex(8),
            "RateLimit-Policy": '"default";q=1000000;w=1',
            "RateLimit": '"default";r=999999;t=1',
            "Cache-Control": "no-store",
        },
    )


@app.get("/")
async def ready() -> dict[str, str]:
    return {"ready": "yes"}
