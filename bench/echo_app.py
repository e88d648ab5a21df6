"""The ceiling of a create: the same stack as fgcpay (QuartTrio on hypercorn's trio
worker) answering the create's request, same path, body and headers, with that body
echoed back (201), and no service behind it. `python -m bench create` serves it with
the server settings `fgcpay serve` uses (bench/core.py `echo_server`)."""

from quart import Response, request
from quart_trio import QuartTrio

app = QuartTrio(__name__)


@app.post("/api/v1/checkout/sessions")
async def echo() -> Response:
    body = await request.get_data()
    return Response(body, status=201, content_type="application/json")


@app.get("/")
async def ready() -> dict[str, str]:
    return {"ready": "yes"}
