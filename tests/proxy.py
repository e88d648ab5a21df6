"""A small HTTP/1.1 reverse proxy for tests, as a Procfile host's router is one: it accepts
on 127.0.0.1, forwards each request to the service over loopback (one upstream connection
per client connection, kept alive as the client's is), and appends the address of the
peer it received the request from to `X-Forwarded-For`; it also says the scheme the
client used in `X-Forwarded-Proto` (the router's TLS ends there), replacing any."""

from __future__ import annotations

import attrs
import h11
import trio

_READ = 65536


@attrs.define
class ReverseProxy:
    upstream_host: str
    upstream_port: int
    forwarded_proto: str = "http"
    url: str = ""
    # Every X-Forwarded-For it sent upstream, in order: what the service was told.
    forwarded_for: list[str] = attrs.Factory(list)

    async def run(self, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._serve, listeners)
            task_status.started(self.url)

    async def _serve(self, downstream: trio.SocketStream) -> None:
        peer = str(downstream.socket.getpeername()[0])
        async with (
            downstream,
            await trio.open_tcp_stream(self.upstream_host, self.upstream_port) as upstream,
        ):
            from_client = h11.Connection(h11.SERVER)
            to_service = h11.Connection(h11.CLIENT)
            while True:
                event = await _next(downstream, from_client)
                if not isinstance(event, h11.Request):
                    return  # the client closed (or sent garbage: the test's business)
                await _send(upstream, to_service, self._forwarded(event, peer))
                while not isinstance(event, h11.EndOfMessage):
                    event = await _next(downstream, from_client)
                    if not isinstance(event, (h11.Data, h11.EndOfMessage)):
                        return
                    await _send(upstream, to_service, event)
                while True:
                    answer = await _next(upstream, to_service)
                    if isinstance(answer, h11.ConnectionClosed):
                        return
                    await _send(downstream, from_client, answer)
                    if isinstance(answer, h11.EndOfMessage):
                        break
                if h11.MUST_CLOSE in (from_client.our_state, to_service.their_state):
                    return
                from_client.start_next_cycle()
                to_service.start_next_cycle()

    def _forwarded(self, request: h11.Request, peer: str) -> h11.Request:
        headers: list[tuple[bytes, bytes]] = []
        already: list[bytes] = []
        for name, value in request.headers:
            if name == b"x-forwarded-for":
                already.append(value)
            elif name != b"x-forwarded-proto":
                headers.append((name, value))
        forwarded_for = b", ".join([*already, peer.encode()])
        self.forwarded_for.append(forwarded_for.decode())
        headers.append((b"x-forwarded-for", forwarded_for))
        headers.append((b"x-forwarded-proto", self.forwarded_proto.encode()))
        return h11.Request(method=request.method, target=request.target, headers=headers)


async def _next(stream: trio.SocketStream, connection: h11.Connection) -> h11.Event:
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(await stream.receive_some(_READ))
            continue
        if event is h11.PAUSED:
            return h11.ConnectionClosed()
        assert isinstance(event, h11.Event)
        return event


async def _send(stream: trio.SocketStream, connection: h11.Connection, event: h11.Event) -> None:
    data = connection.send(event)  # an answer keeps the framing the service chose
    if data:
        await stream.send_all(data)
