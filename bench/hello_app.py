"""The ceiling: a hello-world JSON route on the same stack as fgcpay (QuartTrio on
hypercorn's trio worker). Served by `bench/run.py` with cwd=bench/ so that the
repository's top-level `http/` folder never shadows the standard library's `http`."""

from quart_trio import QuartTrio

app = QuartTrio(__name__)


@app.get("/")
async def hello() -> dict[str, str]:
    return {"hello": "world"}
