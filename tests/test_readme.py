"""The README's quick start, run verbatim (issue 17, item 7): every shell block of the
"Quick start" section, webhook receiver included, in one shell, in an empty directory
that holds nothing but `.venv` (the installed `fgcpay`), and each command's output
checked against the `# ...` lines the README prints under it.

The only substitutions are the ones the README asks the reader to make: a placeholder
such as `fp_test_...`, `mer_...` or `cs_test_...` becomes the latest value with that
prefix an earlier command printed. What the README asks the reader to do in a browser
(pay the session once the webhook receiver is registered, approve a subscription after
the block that created it) is done as a browser without JavaScript would: the page, then
its form. The quick start's first steps are in the dashboard (sign up, create a key):
clicks a shell cannot make, so the test runs the operator's block the README offers in
their place (`fgcpay merchant create`, which prints the key); the dashboard's own walk is
tests/test_dashboard_browser.py's acceptance test.

Ports: the README's commands name 127.0.0.1:8000 and :9000 literally, so a free port
cannot be used without editing them. Instead the shell runs in its own network
namespace (`unshare -rn`, loopback only): the fixed ports are always free there and
nothing on the host can answer in the service's place. Where namespaces are not
available the test runs on the host network if both ports are free, and skips otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from helpers import poll_until

ROOT = Path(__file__).parent.parent
VENV = Path(sys.executable).parent.parent
DEADLINE_S = 20.0
_PREFIXES = r"(?:fp_test|cs_test|sub_test|re_test|txn_test|mer|we|evt|whsec)_"
PLACEHOLDER = re.compile(rf"\b({_PREFIXES})\.\.\.")
ISSUED = re.compile(rf"\b({_PREFIXES})[A-Za-z0-9+/=]{{8,}}")
LOCAL_URL = re.compile(r"http://127\.0\.0\.1:(\d+)")


@attrs.frozen
class Command:
    text: str
    expected: list[str]  # the README's `# ...` lines right under it, without "# "


def quick_start_blocks(readme: str) -> list[str]:
    """The ```sh blocks of the "## Quick start" section, in order."""
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def _complete(text: str) -> bool:
    if text.endswith("\\"):
        return False
    heredoc = re.search(r"<<-?'?(\w+)'?", text)
    if heredoc and not re.search(rf"\n{heredoc.group(1)}$", text):
        return False
    if heredoc:
        return True
    try:
        shlex.split(text, comments=True)
    except ValueError:  # a quote still open: the command goes on
        return False
    return True


def commands_of(block: str) -> list[Command]:
    """Split a block into commands; comment lines right under a command are its output,
    comment lines after a blank line are prose."""
    found: list[Command] = []
    pending: list[str] = []
    last: Command | None = None
    for line in block.splitlines():
        if pending:
            pending.append(line)
            if _complete("\n".join(pending)):
                last = Command("\n".join(pending), [])
                found.append(last)
                pending = []
        elif not line.strip():
            last = None
        elif line.startswith("#"):
            if last is not None:
                last.expected.append(line[2:] if line.startswith("# ") else line[1:])
        else:
            pending = [line]
            if _complete(line):
                last = Command(line, [])
                found.append(last)
                pending = []
    assert not pending, f"unterminated command in the README: {pending}"
    return found


def substitute(command: str, issued: dict[str, str]) -> str:
    def fill(match: re.Match[str]) -> str:
        assert match.group(1) in issued, f"nothing printed {match.group(1)}... before: {command}"
        return issued[match.group(1)]

    return PLACEHOLDER.sub(fill, command)


def _pattern(template: str) -> re.Pattern[str]:
    """A README value such as `http://127.0.0.1:8000/checkout/cs_test_...`: `...` stands
    for the part the reader's run fills in."""
    return re.compile("^" + ".+".join(re.escape(part) for part in template.split("...")) + "$")


def check_output(expected: list[str], output: str, what: str) -> None:
    """Every `"key": value` the README shows is in the printed JSON object (a `...`
    inside a string matches anything, `[...]` any list); a line that is only a number
    is the HTTP status curl's `-w` prints last."""
    if not expected:
        return
    text = " ".join(line.split("<-")[0].strip() for line in expected)
    lines = output.strip().splitlines()
    status = re.fullmatch(r"(.*?)\s*\b(\d{3})", text)
    if status:
        said = status.group(2)
        assert lines[-1] == said, f"{what}: status {lines[-1]!r}, README says {said}"
        text, lines = status.group(1), lines[:-1]
    body = "\n".join(lines)
    if text.startswith("evt_"):  # the receiver's line: an event id, then the event
        event_id, _, body = body.partition(" ")
        assert event_id.startswith("evt_"), f"{what}: {output!r}"
        text = text.split(" ", 1)[1]
    printed = json.loads(body)
    shown = re.findall(r'"(\w+)": ("(?:[^"\\]|\\.)*"|\[\.\.\.\]|true|false|null|-?\d+)', text)
    assert shown, f"{what}: no fields in the README's {text!r}"
    for key, value in shown:
        assert key in printed, f"{what}: no {key!r} in {printed}"
        if value == "[...]":
            assert isinstance(printed[key], list)
        elif value.startswith('"'):
            assert _pattern(json.loads(value)).match(str(printed[key])), (what, key, printed[key])
        else:
            assert printed[key] == json.loads(value), (what, key, printed[key])


def _namespace_works() -> bool:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    probe = subprocess.run(
        ["unshare", "-rn", "sh", "-c", "ip link set lo up"], capture_output=True, timeout=10
    )
    return probe.returncode == 0


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Shell:
    """One bash, as a reader's terminal: exports and background jobs last. Each command's
    output goes to its own files, and a status file says when it has finished."""

    def __init__(self, cwd: Path, isolated: bool, extra_env: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.count = 0
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FGCPAY_", "PG"))}
        env.pop("VIRTUAL_ENV", None)
        env.update(extra_env or {})
        argv = ["bash", "--norc", "--noprofile"]
        if isolated:
            inner = "ip link set lo up && exec bash --norc --noprofile"
            argv = ["unshare", "-rn", "bash", "--norc", "--noprofile", "-c", inner]
        self.process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE, text=True, start_new_session=True
        )

    def run(self, command: str, deadline: float, background: bool = False) -> tuple[int, str, str]:
        """Run `command` as typed; `background` runs a server that stays in the foreground
        of a reader's terminal as a job of this shell instead."""
        self.count += 1
        out, err, rc = (self.cwd / f".{kind}{self.count}" for kind in ("out", "err", "rc"))
        assert self.process.stdin is not None
        job = " &" if background else ""
        # The output files exist before the status does: a background job opens its own
        # redirections only once it runs, which may be after `echo $?` has written it.
        script = (
            f": >{out}; : >{err}\n"
            f"{{\n{command}\n}} >>{out} 2>>{err} </dev/null{job}\necho $? >{rc}\n"
        )
        self.process.stdin.write(script)
        self.process.stdin.flush()
        process = self.process

        def finished() -> bool:
            if rc.exists() and rc.read_text().endswith("\n"):
                return True
            assert process.poll() is None, "the shell ended"
            return False

        poll_until(
            finished, within=deadline - time.monotonic(), what=f"the command to finish: {command}"
        )
        return int(rc.read_text()), out.read_text(), err.read_text()

    def output_of(self, number: int) -> str:
        return (self.cwd / f".out{number}").read_text()

    def close(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Shell]:
    (tmp_path / ".venv").symlink_to(VENV)
    isolated = _namespace_works()
    if not isolated and not all(_port_free(port) for port in (8000, 9000, 5000)):
        pytest.skip("no network namespace (unshare -rn); 127.0.0.1:8000, :9000 or :5000 is taken")
    opened = Shell(tmp_path, isolated)
    try:
        yield opened
    finally:
        opened.close()


WAIT_FOR_PORT = (  # in a subshell: its `exit` must not end the reader's shell
    "(for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && exit 0; "
    "sleep 0.05; done; exit 1)"
)
WAIT_FOR_LINE = (  # the same for a line of a background command's output
    "(for _ in $(seq 200); do grep -qF '{text}' {file} 2>/dev/null && exit 0; "
    "sleep 0.05; done; exit 1)"
)

# The reader's part that is not a shell command: "open the checkout_url and pay (or
# approve) as TEST-0001 / 1234", done as the browser would (page, then the form with its
# CSRF token; a subscription's Approve posts the same form as a session's Pay).
PAY = """.venv/bin/python - <<'PAY'
import re, httpx
url = "{url}"
with httpx.Client() as browser:
    page = browser.get(url)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    form = {{"csrf_token": token, "customer_code": "TEST-0001", "pin": "1234"}}
    done = browser.post(url, data=form)
    print(done.status_code, done.headers.get("location", ""))
PAY"""


def _event_type(line: str) -> str | None:
    try:  # `evt_... <the event>`; the last line may still be being written
        event: dict[str, Any] = json.loads(line.split(" ", 1)[1])
    except (IndexError, ValueError):
        return None
    return str(event.get("type"))


def receiver_line(shell: Shell, receiver: int, event_type: str, deadline: float) -> str:
    """The line the README's receiver printed for the first event of `event_type`."""

    def printed() -> list[str]:
        lines = shell.output_of(receiver).splitlines()
        return [line for line in lines if _event_type(line) == event_type]

    poll_until(
        lambda: bool(printed()),
        within=deadline - time.monotonic(),
        what=f"the receiver printing {event_type}",
    )
    return printed()[0]


def clock_walkthrough() -> list[Command]:
    """The commands of docs/api.md's test clock walk-through, with their outputs."""
    api = (ROOT / "docs" / "api.md").read_text()
    section = api.split("\n### Walk-through with `curl`\n", 1)[1]
    return commands_of(re.findall(r"```sh\n(.*?)```", section, re.S)[0])


# A value of the walk-through's outputs that differs in every run: an id (a 24-character
# random part after its prefix), a request id, or a time of the service's own clock (the
# clock's times, 2027 and 2028, are the same in every run).
_VARYING = re.compile(
    r"\b((?:clock_test|sub_test|cs_test|txn_test|evt|req)_)[A-Za-z0-9]{16,24}\b"
    r"|\b20(?:2[0-6])-\d\d-\d\dT[0-9:.]+Z"
)


def _same_but_varying(expected: str, printed: str) -> bool:
    """Whether `printed` reads as `expected`, ids and the service's times aside."""

    def blank(text: str) -> str:
        return _VARYING.sub(lambda m: (m.group(1) or "") + "*", text)

    return blank(expected) == blank(printed)


def check_walkthrough_output(expected: list[str], output: str, what: str) -> None:
    """The walk-through's outputs as the doc shows them: compact JSON (trimmed by jq to
    the fields shown, or a whole object, an error's), a status after a `-w` line, or
    plain lines (jq's tab-separated rows, shown aligned with spaces; a count; a word)."""
    if not expected:
        return
    shown = [line.split("<-")[0].rstrip() for line in expected]
    lines = output.strip().splitlines()
    if shown[0].startswith("{"):
        status = shown[-1] if re.fullmatch(r"\d{3}", shown[-1]) else None
        if status:
            assert lines[-1] == status, (what, lines)
            shown, lines = shown[:-1], lines[:-1]
        wanted = json.loads(" ".join(line.strip() for line in shown))
        printed = json.loads("\n".join(lines))
        for key, value in wanted.items():
            assert key in printed, (what, key, printed)
            assert _same_but_varying(json.dumps(value), json.dumps(printed[key])), (
                what, key, value, printed[key],
            )  # fmt: skip
        return
    assert len(lines) == len(shown), (what, shown, lines)
    # Rows in any order: events made in one change share their time, and the list orders
    # those by id, which is random.
    wanted_rows = sorted(_VARYING.sub("*", " ".join(line.split())) for line in shown)
    printed_rows = sorted(_VARYING.sub("*", " ".join(line.split())) for line in lines)
    assert printed_rows == wanted_rows, what


@pytest.mark.parametrize("walkthrough", [False, True], ids=["alone", "with-the-clock-walkthrough"])
def test_the_quick_start_runs_verbatim(shell: Shell, walkthrough: bool) -> None:
    """The quick start; and again with docs/api.md's test clock walk-through run where the
    README points to it (after the subscription, before the refund): its outputs as the
    doc shows them, and the README's ledger and balance figures still true after it."""
    deadline = time.monotonic() + 60  # each step is bounded; the whole run takes ~5 s
    readme = (ROOT / "README.md").read_text()
    blocks = [commands_of(block) for block in quick_start_blocks(readme)]
    if walkthrough:
        assert "docs/api.md#test-clocks" in readme.split("### A refund and the balance")[0]
        refund_block = next(
            n for n, block in enumerate(blocks) if any("/refunds" in c.text for c in block)
        )
        blocks.insert(refund_block, clock_walkthrough())
    walked = clock_walkthrough()
    commands = [command for block in blocks for command in block]
    assert len(commands) >= 8, commands
    issued: dict[str, str] = {}
    receiver: int | None = None
    created: dict[str, Any] = {}
    subscription: dict[str, Any] = {}
    approved = paid = ledger_read = False
    for block in blocks:
        for command in block:
            text = substitute(command.text, issued)
            rc, out, err = shell.run(text, deadline)
            assert rc == 0, f"{text}\n-> exit {rc}\n{out}\n{err}"
            first_line = text.splitlines()[0]
            if first_line.rstrip().endswith("&") or re.search(r"&\s+#", first_line):
                # A job started in the background: wait, as a reader would, until it listens
                # on the address its comment names.
                port = LOCAL_URL.search(first_line)
                assert port, f"a background command without its address: {first_line}"
                rc, _, _ = shell.run(WAIT_FOR_PORT.format(port=port.group(1)), deadline)
                assert rc == 0, f"nothing listens on {port.group(1)} after: {first_line}\n{err}"
                if "receiver" in first_line:
                    receiver = shell.count - 1
                continue
            if walkthrough and command in walked:
                check_walkthrough_output(command.expected, out, first_line)
            else:
                check_output(command.expected, out, first_line)
            for match in ISSUED.finditer(out):
                issued[match.group(1)] = match.group(0)
            if "checkout/sessions \\" in first_line or first_line.endswith("/checkout/sessions \\"):
                created = json.loads("\n".join(out.strip().splitlines()[:-1]))
            if first_line.endswith("/api/v1/subscriptions \\"):
                subscription = json.loads("\n".join(out.strip().splitlines()[:-1]))
            if "/api/v1/transactions?" in first_line:
                # What the README's comment above it says the ledger holds, newest first.
                rows = [(t["type"], t["amount_fgc"]) for t in json.loads(out)["data"]]
                assert rows == [
                    ("refund", "-4.00"),
                    ("subscription_charge", "12.50"),
                    ("payment", "12.50"),
                ], rows
                ledger_read = True
        if "we_" in issued and not paid:
            # The prose after the block that registered the receiver: "Then pay on the
            # session's checkout_url: the receiver prints checkout.session.paid".
            assert receiver is not None, "the README starts a webhook receiver"
            rc, out, err = shell.run(PAY.format(url=created["checkout_url"]), deadline)
            assert rc == 0 and out.startswith("303 https://shop.example/thanks?order=1042"), (
                out,
                err,
            )
            delivered = receiver_line(shell, receiver, "checkout.session.paid", deadline)
            shown = '{"id": "evt_...", "object": "event", "type": "checkout.session.paid", ...}'
            check_output([f"evt_... {shown}"], delivered, "the receiver's line")
            assert json.loads(delivered.split(" ", 1)[1])["data"]["object"]["id"] == created["id"]
            paid = True
        if subscription and not approved:
            # The prose after the block that created it: "open its checkout_url and approve".
            rc, out, err = shell.run(PAY.format(url=subscription["checkout_url"]), deadline)
            welcome = f"303 https://shop.example/welcome?subscription_id={subscription['id']}"
            assert rc == 0 and out.strip() == welcome, (out, err)
            approved = True
    # What the quick start promises around its commands.
    assert created.get("checkout_url", "").startswith("http://127.0.0.1:8000/checkout/cs_test_")
    assert "whsec_" in issued and "we_" in issued, "the webhook endpoint was registered"
    assert receiver is not None, "the README starts a webhook receiver"
    assert paid, "the README pays the session"
    assert approved, "the README creates a subscription"
    for event_type in ("subscription.activated", "subscription.charged"):
        line = receiver_line(shell, receiver, event_type, deadline)
        assert json.loads(line.split(" ", 1)[1])["data"]["object"]["id"] == subscription["id"]
    assert "re_test_" in issued, "the README refunds the session"
    assert ledger_read, "the README lists the ledger"
    for event_type in ("refund.created", "refund.approved"):
        line = receiver_line(shell, receiver, event_type, deadline)
        refunded = json.loads(line.split(" ", 1)[1])["data"]["object"]
        assert (refunded["id"], refunded["checkout_session_id"]) == (
            issued["re_test_"],
            created["id"],
        )


def test_the_quick_start_starts_in_the_dashboard() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    sign_up = section.index("http://127.0.0.1:8000/dashboard/sign-up")
    assert sign_up < section.index("API keys") < section.index("fgcpay merchant create")
    assert sign_up < section.index("/api/v1/checkout/sessions")


def readme_block_after(heading: str) -> list[Command]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split(f"\n{heading}\n", 1)[1]
    return commands_of(re.findall(r"```sh\n(.*?)```", section, re.S)[0])


def test_the_local_procfile_commands_serve(shell: Shell) -> None:
    """`fgcpay migrate`, then `honcho start web` (not `honcho start`, which stops web as
    soon as release exits), as the README's Procfile section writes them."""
    if shutil.which("honcho", path=str(VENV / "bin")) is None:
        pytest.skip("honcho is not installed (pip install -e '.[test]')")
    deadline = time.monotonic() + 60
    shutil.copy(ROOT / "Procfile", shell.cwd / "Procfile")
    setup, migrate, start = readme_block_after("### Procfile")
    assert start.text.split("#")[0].strip() == "honcho start web"
    for command in (setup, migrate):
        rc, out, err = shell.run(command.text, deadline)
        assert rc == 0, f"{command.text}\n-> exit {rc}\n{out}\n{err}"
    assert shell.run(start.text, deadline, background=True)[0] == 0
    web = shell.count
    port = LOCAL_URL.search(start.text)
    assert port and port.group(1) == "5000"
    rc, _, _ = shell.run(WAIT_FOR_PORT.format(port=port.group(1)), deadline)
    assert rc == 0, (shell.cwd / f".out{web}").read_text()
    rc, out, _ = shell.run(f"curl -s http://127.0.0.1:{port.group(1)}/readyz", deadline)
    assert rc == 0 and json.loads(out)["status"] == "ready", out
    # honcho relays the worker's lines through a pipe: under load they reach its output
    # after the port answers, so wait for the line that names where it listens.
    rc, _, _ = shell.run(WAIT_FOR_LINE.format(text='"public_url"', file=f".out{web}"), deadline)
    said = shell.output_of(web)
    assert rc == 0, said
    assert "web.1" in said  # honcho's prefix: only web runs, and it still does
    # hypercorn serves fgcpay.asgi there, and the links it makes point where it listens.
    assert '"msg":"starting"' in said and '"server":"hypercorn"' in said, said
    assert f'"public_url":"http://127.0.0.1:{port.group(1)}"' in said, said


def test_the_postgresql_setup_commands_work(tmp_path: Path, pg_cluster: Any) -> None:
    """The README's PostgreSQL lines, against a throwaway cluster: libpq's PGHOST/PGPORT
    stand for "on the database's host", and the URL gets that cluster's port."""
    if pg_cluster is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    if not shutil.which("createuser") or not shutil.which("psql"):
        pytest.skip("the PostgreSQL client programs (createuser, createdb, psql) are not installed")
    deadline = time.monotonic() + 60
    (tmp_path / ".venv").symlink_to(VENV)
    superuser = {
        "PGHOST": "127.0.0.1", "PGPORT": str(pg_cluster.port),
        "PGUSER": "fgcpay", "PGDATABASE": "postgres",
    }  # fmt: skip
    shell = Shell(tmp_path, isolated=False, extra_env=superuser)
    try:
        role, database, url, serve = readme_block_after("### PostgreSQL")
        for command in (role, database):
            rc, out, err = shell.run(command.text, deadline)
            assert rc == 0, f"{command.text}\n-> exit {rc}\n{out}\n{err}"
        assert ":5432/" in url.text
        rc, _, err = shell.run(url.text.replace(":5432/", f":{pg_cluster.port}/"), deadline)
        assert rc == 0, err
        migrate = serve.text.split(" && ")[0]
        assert migrate == ".venv/bin/fgcpay migrate"
        rc, out, err = shell.run(migrate, deadline)
        assert rc == 0, err
        rc, out, err = shell.run(
            "psql -Atc 'SELECT tableowner FROM pg_tables WHERE schemaname = current_schema()'"
            " fgcpay_app",
            deadline,
        )
        assert rc == 0 and set(out.split()) == {"fgcpay_app"}, (out, err)
    finally:
        shell.run("dropdb fgcpay_app; dropuser fgcpay_app", time.monotonic() + 30)
        shell.close()


def test_the_parser_reads_output_lines_and_prose_apart() -> None:
    block = '# prose\na \\\n  b\n# {"x": 1}\nexport K=fp_test_...\n\n# more prose\nc\n'
    assert commands_of(block) == [
        Command("a \\\n  b", ['{"x": 1}']),
        Command("export K=fp_test_...", []),
        Command("c", []),
    ]
    assert substitute("export K=fp_test_...", {"fp_test_": "fp_test_abc"}) == "export K=fp_test_abc"
