"""`fgcpay listen`: a merchant's events, forwarded to a server on the developer's machine.

It holds the API's event stream (`GET /api/v1/events/stream`, a websocket) and posts each
event to `--forward-to` with the body and headers of a real delivery, signed in both
header families with a local secret (`whsec_...`) kept in the user's config folder, so
the local server verifies it as it will verify production's. Each event is posted once,
with the delivery's 10 s deadline and no retry (as Stripe's CLI); its outcome is printed.
The last event seen is remembered there too, per API URL and key (never the key itself):
a restart, or a reconnect after the laptop slept, resumes after it.

Standard output: first a line with the secret, then one line per event (its time, type
and id, and the local answer's status or the error). Standard error: one line per
failure (exit 2), and a line each time the connection drops and comes back.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import attrs
import httpx
import trio
from fgcpay.domain.deliveries import ATTEMPT_TIMEOUT_SECONDS
from fgcpay.domain.signing import SECRET_PREFIX, new_secret, signed_headers
from fgcpay.domain.urls import UrlError, parse_http_url
from trio_websocket import (
    ConnectionClosed,
    ConnectionRejected,
    HandshakeError,
    WebSocketConnection,
    open_websocket_url,
)

FROM_START = "start"  # the stream's `after` for "before every event"
API_KEY_ENV = "FGCPAY_API_KEY"
API_URL_ENV = "FGCPAY_API_URL"
# After this many pings' worth of silence the connection is taken for dead (a laptop that
# slept keeps a socket that will never speak again): reconnect.
SILENT_PINGS = 3
BACKOFF_SECONDS = (1, 2, 4, 8, 16, 30)
KEY_SHOWN = 12  # "fp_test_" and 4 characters, as the dashboard shows a key


class ListenError(Exception):
    """A failure in the developer's words, printed as one line (exit 2)."""


def config_dir(env: dict[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/fgcpay`, by default `~/.config/fgcpay`."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "fgcpay"


def _write_private(path: Path, text: str) -> None:
    """Replace `path` with `text`, readable by the user alone, never half written."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, path)


def shown_key(api_key: str) -> str:
    """The key as the dashboard shows it (prefix and last four): not a secret."""
    return f"{api_key[:KEY_SHOWN]}...{api_key[-4:]}"


@attrs.define
class LocalState:
    """What `fgcpay listen` keeps on this machine: the signing secret (one per machine)
    and, per API URL and key, the last event seen."""

    folder: Path
    api_url: str
    api_key: str = attrs.field(repr=False)

    def secret(self) -> str:
        """The machine's local signing secret, made on first use (the first of two
        listeners started at once to write it wins; the other reads it)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.folder / "listen_secret"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            secret = path.read_text(encoding="utf-8").strip()
            if secret.startswith(SECRET_PREFIX):
                return secret
            raise ListenError(
                f"{path} holds no whsec_ secret: delete it to make a new one"
            ) from None
        secret = new_secret()
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(secret + "\n")
        return secret

    @property
    def _cursor_path(self) -> Path:
        # Per API URL and key (as shown: its prefix and last four, never the key itself).
        digest = hashlib.sha256(f"{self.api_url}\n{shown_key(self.api_key)}".encode()).hexdigest()
        return self.folder / f"listen_{digest[:24]}.json"

    def last_seen(self) -> str | None:
        try:
            saved = json.loads(self._cursor_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise ListenError(f"cannot read {self._cursor_path}: {error}") from None
        after = saved.get("after") if isinstance(saved, dict) else None
        return after if isinstance(after, str) else None

    def remember(self, event_id: str | None) -> None:
        saved = {"api_url": self.api_url, "api_key": shown_key(self.api_key), "after": event_id}
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_private(self._cursor_path, json.dumps(saved) + "\n")


def _absolute(value: str, what: str) -> str:
    try:
        parse_http_url(value)
    except UrlError as error:
        raise ListenError(f"{what} must be an absolute http(s) URL: {error}") from None
    return value


API_PATH = "/api/v1"


def api_base(api_url: str) -> str:
    """The API's base URL from `--api-url`: as given when its path ends in /api/v1; the
    origin's /api/v1 when it has no path (what a browser's address bar shows); else
    `ListenError` saying what to pass (a wrong path is a 404 from every request)."""
    parts = urlsplit(api_url)
    path = parts.path.rstrip("/")
    if path.endswith(API_PATH):
        return api_url.rstrip("/")
    if not path and not parts.query and not parts.fragment:
        return f"{parts.scheme}://{parts.netloc}{API_PATH}"
    example = f"{parts.scheme}://{parts.netloc}{API_PATH}"
    raise ListenError(
        f"--api-url must be the API's base URL, ending in {API_PATH}"
        f" (such as {example}), not {api_url}"
    )


def stream_url(api_url: str, after: str | None, events: str | None) -> str:
    """The stream's ws(s):// URL under `api_url` (its http(s):// base, /api/v1)."""
    base = api_url.rstrip("/")
    base = "wss://" + base[len("https://") :] if base.startswith("https://") else base
    base = "ws://" + base[len("http://") :] if base.startswith("http://") else base
    query = httpx.QueryParams({k: v for k, v in (("after", after), ("types", events)) if v})
    return f"{base}/events/stream" + (f"?{query}" if query else "")


@attrs.define
class Listener:
    """One run of `fgcpay listen`."""

    api_url: str
    api_key: str = attrs.field(repr=False)
    forward_to: str
    events: str | None
    state: LocalState
    out: TextIO = sys.stdout
    err: TextIO = sys.stderr
    _secret: str = ""
    _after: str | None = None
    _ready: bool = False
    _failures: int = 0  # connections lost or refused since the last that opened

    async def run(self) -> None:
        """Forward until cancelled; `ListenError` for what no retry mends (a refused key, a
        server never reached, a bad option)."""
        self._secret = self.state.secret()
        self._after = self.state.last_seen()
        async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as client:
            while True:
                try:
                    await self._connect_and_forward(client)
                except ConnectionRejected as rejected:
                    if self._refused(rejected):
                        continue  # a stale resume point was dropped: connect again at once
                except (OSError, HandshakeError, ConnectionClosed, _Silent) as lost:
                    if not self._ready:
                        raise ListenError(f"cannot reach {self.api_url}: {_reason(lost)}") from lost
                    if isinstance(lost, ConnectionClosed) and _closed_code(lost) == 4401:
                        raise ListenError("the API key was revoked") from lost
                    self._say(f"connection lost ({_reason(lost)})")
                delay = BACKOFF_SECONDS[min(self._failures, len(BACKOFF_SECONDS) - 1)]
                self._failures += 1
                self._say(f"reconnecting in {delay} s")
                await trio.sleep(delay)

    async def _connect_and_forward(self, client: httpx.AsyncClient) -> None:
        url = stream_url(self.api_url, self._after, self.events)
        headers = [
            (b"Authorization", f"Bearer {self.api_key}".encode()),
            (b"User-Agent", b"fgcpay-listen/1"),
        ]
        # A connection found dead is not closed politely for long: reconnect instead.
        async with open_websocket_url(
            url, extra_headers=headers, connect_timeout=10, disconnect_timeout=2
        ) as ws:
            hello = json.loads(await ws.get_message())
            self._failures = 0
            if self._after is None:
                # New events only: from here (from the merchant's first event if it has
                # none yet), even if nothing comes before a reconnect or a restart.
                self._after = hello.get("after") or FROM_START
                self.state.remember(self._after)
            if not self._ready:
                self._ready = True
                print(
                    f"Ready! Your local webhook signing secret is {self._secret}"
                    f" (forwarding to {self.forward_to}; Ctrl-C to quit)",
                    file=self.out,
                    flush=True,
                )
            else:
                self._say(f"reconnected, resuming after {self._after}")
            silence = SILENT_PINGS * float(hello.get("ping_seconds") or 20)
            await self._forward_each(ws, client, silence)

    async def _forward_each(
        self, ws: WebSocketConnection, client: httpx.AsyncClient, silence: float
    ) -> None:
        while True:
            with trio.move_on_after(silence) as quiet:
                message = await ws.get_message()
            if quiet.cancelled_caught:
                raise _Silent(f"nothing heard for {silence:g} s")
            text = message if isinstance(message, str) else message.decode("utf-8")
            frame = json.loads(text)
            if frame.get("object") != "event":
                continue  # a ping
            outcome = await forward(client, self.forward_to, frame["id"], text, self._secret)
            # Remembered before it is shown: whoever saw the line may stop us at once.
            self._after = frame["id"]
            self.state.remember(self._after)
            print(
                f"{frame.get('created_at', '')}  {frame.get('type', '')}  {frame['id']}  -> {outcome}",
                file=self.out,
                flush=True,
            )

    def _refused(self, rejected: ConnectionRejected) -> bool:
        """Mend what a refusal allows (True: connect again at once; False: after a
        backoff), or raise `ListenError`."""
        status = rejected.status_code
        body = _body(rejected)
        message = str(body.get("message") or f"HTTP {status}")
        fields = {p.get("field") for p in body.get("details") or [] if isinstance(p, dict)}
        if status == 400 and fields == {"after"} and self._after is not None:
            # The event we would resume after is unknown here (another database) or past
            # the 30 days a stream resumes from: say so, and go on with new events only.
            problem = next(p for p in body["details"] if p.get("field") == "after")
            self._say(
                f"cannot resume after {self._after}: {problem.get('message')}"
                " Forwarding new events only; reconcile with GET /events."
            )
            self._after = None
            self.state.remember(None)
            return True
        if status in (429, 503) and self._ready:
            self._say(f"the service refused for now: {message}")
            return False
        if status == 401:
            raise ListenError(f"the API key was refused: {message}")
        details = json.dumps(body.get("details")) if body.get("details") else ""
        raise ListenError(
            f"{self.api_url} refused the event stream ({status}): {message} {details}".strip()
        )

    def _say(self, line: str) -> None:
        print(f"fgcpay listen: {line}", file=self.err, flush=True)


class _Silent(Exception):
    """The connection went quiet past its pings: taken for dead."""


async def forward(
    client: httpx.AsyncClient, url: str, event_id: str, text: str, secret: str
) -> str:
    """Post the event as a delivery posts it (body, headers, both signatures), once, under
    the delivery's deadline; the answer's status, or what went wrong."""
    body = text.encode("utf-8")
    headers = signed_headers(event_id, body, int(time.time()), [secret])
    with trio.move_on_after(ATTEMPT_TIMEOUT_SECONDS):
        try:
            response = await client.post(url, content=body, headers=headers)
        except httpx.HTTPError as error:
            return f"error: {type(error).__name__}: {_reason(error)}"
        return str(response.status_code)
    return f"error: no answer within {ATTEMPT_TIMEOUT_SECONDS:g} s"


def _closed_code(closed: ConnectionClosed) -> int | None:
    return None if closed.reason is None else closed.reason.code


def _body(rejected: ConnectionRejected) -> dict[str, Any]:
    try:
        found = json.loads(rejected.body or b"{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _reason(error: BaseException) -> str:
    if isinstance(error, ConnectionClosed) and error.reason is not None:
        said = f" {error.reason.reason}" if error.reason.reason else ""
        return f"closed with {error.reason.code}{said}"
    # The innermost OS error says it best ("Connection refused"): trio's connect wraps
    # each address's in a group, and trio-websocket wraps that in a HandshakeError.
    seen: list[BaseException] = [error]
    for cause in seen:
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror
        if isinstance(cause, BaseExceptionGroup):
            seen.extend(cause.exceptions)
        seen.extend(e for e in (cause.__cause__, cause.__context__) if e is not None)
        if len(seen) > 50:
            break
    found = next((e for e in seen if str(e)), error)
    return str(found) or type(error).__name__


async def listen_until_stopped(listener: Listener) -> None:
    """Run `listener` until Ctrl-C (SIGINT) or SIGTERM, then return."""
    async with trio.open_nursery() as nursery:

        async def stop_on_signal(cancel: Callable[[], None]) -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    cancel()
                    return

        nursery.start_soon(stop_on_signal, nursery.cancel_scope.cancel)
        await listener.run()


def make_listener(
    api_url: str | None, api_key: str | None, forward_to: str, events: str | None
) -> Listener:
    """The listener the options ask for; `ListenError` for a missing or malformed one."""
    api_url = api_url or os.environ.get(API_URL_ENV)
    if not api_url:
        raise ListenError(f"--api-url is required (or set {API_URL_ENV})")
    api_key = api_key or os.environ.get(API_KEY_ENV)
    if not api_key:
        raise ListenError(f"no API key: pass --api-key or set {API_KEY_ENV}")
    api_url = api_base(_absolute(api_url, "--api-url"))
    forward_to = _absolute(forward_to, "--forward-to")
    if events is not None:  # "a, b" as a person types it; the service checks the names
        events = ",".join(part.strip() for part in events.split(",") if part.strip()) or None
    return Listener(
        api_url=api_url,
        api_key=api_key,
        forward_to=forward_to,
        events=events,
        state=LocalState(config_dir(), api_url, api_key),
    )
