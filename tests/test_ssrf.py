"""The SSRF guard: addresses that embed another address, numeric IPv4 spellings, the
registration check (no DNS), and the webhook client's pinned connections (no second
resolution; the URL's name kept for Host, SNI and the certificate)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from pathlib import Path

import pytest
import trio
from fgcpay.webhooks import destinations
from fgcpay.webhooks.client import SendFailed, WebhookClient
from receiver import start_receiver

# (address, allowed): each form is judged by the IPv4 address it carries.
EMBEDDED = [
    ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
    ("2002:a00:1::1", False),  # 6to4 of 10.0.0.1
    ("2002:a9fe:a9fe::", False),  # 6to4 of 169.254.169.254
    ("2002:808:808::1", True),  # 6to4 of 8.8.8.8
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", False),  # Teredo, client 127.0.0.1 (obfuscated)
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", False),  # Teredo, client 10.0.0.1
    ("2001:0:a00:1:8000:63bf:f7f7:f7f7", False),  # Teredo, server 10.0.0.1
    ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", True),  # Teredo, client 8.8.8.8, public server
    ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
    ("64:ff9b::a9fe:a9fe", False),  # NAT64 of the metadata address
    ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8
    ("64:ff9b:1::808:808", False),  # the local-use NAT64 prefix is internal by definition
    ("64:ff9b:1:7f00:1::", False),
    ("::ffff:127.0.0.1", False),  # IPv4-mapped
    ("::ffff:10.1.2.3", False),
    ("::ffff:8.8.8.8", True),
    ("::ffff:0:127.0.0.1", False),  # IPv4-translated (SIIT)
    ("::127.0.0.1", False),  # IPv4-compatible (deprecated)
    ("::10.0.0.1", False),
    ("::1", False),
    ("::", False),
    ("fe80::1", False),
    ("fc00::1", False),
    ("ff02::1", False),
    ("2606:4700:4700::1111", True),
    ("127.0.0.1", False),
    ("100.64.0.1", False),
    ("169.254.169.254", False),
    ("0.0.0.0", False),
    ("224.0.0.1", False),
    ("255.255.255.255", False),
    ("198.18.0.1", False),
    ("8.8.8.8", True),
    ("93.184.216.34", True),
]


@pytest.mark.parametrize(("address", "allowed"), EMBEDDED)
def test_embedded_and_special_addresses(address: str, allowed: bool) -> None:
    assert destinations.address_allowed(address) is allowed


# (host as written in a URL, the address a connection would go to)
NUMERIC_HOSTS = [
    ("2130706433", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("0X7F.0.0.1", "127.0.0.1"),
    ("10.0.0.1.", "10.0.0.1"),
    ("0", "0.0.0.0"),
    ("167772161", "10.0.0.1"),
    ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
    ("8.8.8.8", "8.8.8.8"),
]


@pytest.mark.parametrize(("host", "address"), NUMERIC_HOSTS)
def test_numeric_ipv4_spellings_are_read_as_the_resolver_reads_them(
    host: str, address: str
) -> None:
    assert str(destinations.literal_address(host)) == address
    # The C library (what getaddrinfo, hence httpx, uses) reads them the same way.
    assert socket.inet_ntoa(socket.inet_aton(host.rstrip("."))) == address


@pytest.mark.parametrize(
    "host", ["example.com", "0.com", "1.2.3.4.5", "256.1.1.1", "0x", "08.1", "1e3", "a.0x7f"]
)
def test_names_are_not_literals(host: str) -> None:
    assert destinations.literal_address(host) is None


REFUSED_URLS = [
    "http://[2002:7f00:1::]/h",
    "http://[64:ff9b::7f00:1]/h",
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/h",
    "http://[::ffff:127.0.0.1]/h",
    "http://[::ffff:7f00:1]/h",
    "http://[::127.0.0.1]/h",
    "http://[::1]:8080/h",
    "http://[fe80::1%25eth0]/h",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://127.1:9/x",
    "http://10.0.0.1/x",
    "http://169.254.169.254/latest",
    "http://localhost/x",
    "http://LOCALHOST./x",
    "http://api.localhost/x",
]


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_registration_refuses_private_literals_and_names_the_setting(url: str) -> None:
    refused = destinations.registration_refusal(url, allow_private=False)
    assert refused is not None and "FGCPAY_WEBHOOK_ALLOW_PRIVATE" in refused
    assert destinations.registration_refusal(url, allow_private=True) is None


@pytest.mark.parametrize(
    "url",
    [
        "https://0.com/hooks",
        "https://hooks.not-registered-yet.example/x",
        "http://8.8.8.8/h",
        "http://[2002:808:808::1]/",
    ],
)
def test_registration_needs_no_dns(url: str) -> None:
    assert destinations.registration_refusal(url, allow_private=False) is None


@pytest.mark.parametrize("url", ["ftp://x/y", "http:///nohost", "/relative", "https://"])
def test_registration_refuses_what_is_not_an_http_url(url: str) -> None:
    assert destinations.registration_refusal(url, allow_private=True) is not None


class FakeResolver:
    """Answers from a script, one answer per call, and counts the calls."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append((host, port))
        if not self.answers:
            raise OSError("no more answers: the name was resolved a second time")
        return self.answers.pop(0)


async def test_the_connection_goes_to_the_checked_address_with_the_name_kept(
    nursery: trio.Nursery,
) -> None:
    receiver = await start_receiver(nursery)
    port = int(receiver.url.split(":")[2].split("/")[0])
    # First answer: the receiver. Any second resolution would get a dead address instead.
    resolver = FakeResolver(["127.0.0.1"], ["127.0.0.2"])
    client = WebhookClient(True, resolver)
    for _ in range(2):  # the second over the kept connection, with no second lookup
        answer = await client.post(f"http://hooks.test:{port}/hooks", [], b"{}")
        assert answer.status == 200
    assert resolver.calls == [("hooks.test", port)]
    assert [arrived.headers["host"] for arrived in receiver.received] == [f"hooks.test:{port}"] * 2
    client.close_idle()


async def test_every_resolved_address_is_checked_before_connecting(nursery: trio.Nursery) -> None:
    receiver = await start_receiver(nursery)
    port = int(receiver.url.split(":")[2].split("/")[0])
    for answer in (["93.184.216.34", "127.0.0.1"], ["::ffff:127.0.0.1"], ["2002:7f00:1::"], []):
        resolver = FakeResolver(answer)
        client = WebhookClient(False, resolver)
        with pytest.raises(SendFailed, match="destination refused") as caught:
            await client.post(f"http://hooks.test:{port}/hooks", [], b"{}")
        reason = destinations.NOT_RESOLVED if not answer else destinations.PRIVATE_REFUSAL
        assert reason in str(caught.value), answer
        assert resolver.calls == [("hooks.test", port)]
    assert receiver.received == []


async def test_a_literal_address_is_checked_without_resolving() -> None:
    resolver = FakeResolver()
    client = WebhookClient(False, resolver)
    for url in ("http://2130706433/", "http://[2002:7f00:1::]/h", "http://0x7f.1:9/"):
        with pytest.raises(SendFailed, match="destination refused") as caught:
            await client.post(url, [], b"{}")
        assert destinations.PRIVATE_REFUSAL in str(caught.value), url
    assert resolver.calls == []


def test_the_guard_covers_ipv4_special_networks_python_knows() -> None:
    for network in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "127.0.0.0/8",
        "100.64.0.0/10",
    ):
        first = ipaddress.ip_network(network).network_address + 1
        assert not destinations.address_allowed(str(first)), network
        sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (int(first) << 80))
        assert not destinations.address_allowed(str(sixtofour)), network


def _certificate(tmp_path: Path, name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for `name`: (server context, client context trusting it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    client = ssl.create_default_context(cadata=cert_pem.decode())
    return server, client


async def test_tls_keeps_the_name_for_sni_and_the_certificate(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    server_context, client_context = _certificate(tmp_path, "hooks.test")
    sni: list[str | None] = []
    server_context.sni_callback = lambda _sock, name, _ctx: sni.append(name)

    async def answer(stream: trio.SSLStream[trio.SocketStream]) -> None:
        try:
            request = b""
            while b"\r\n\r\n" not in request:
                request += await stream.receive_some(65536)
            await stream.send_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            )
            await stream.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client refused our certificate

    listeners = await trio.open_ssl_over_tcp_listeners(0, server_context, host="127.0.0.1")
    tcp = listeners[0].transport_listener
    assert isinstance(tcp, trio.SocketListener)
    port = tcp.socket.getsockname()[1]
    nursery.start_soon(trio.serve_listeners, answer, listeners)
    resolver = FakeResolver(["127.0.0.1"], ["127.0.0.1"])
    client = WebhookClient(True, resolver, tls=client_context)
    reply = await client.post(f"https://hooks.test:{port}/hooks", [], b"{}")
    assert reply.status == 200 and reply.body == b"ok"
    assert sni == ["hooks.test"]  # the name, not the pinned 127.0.0.1
    # Pinned to the same address, but the certificate is checked against the URL's name.
    with pytest.raises(SendFailed, match="ConnectError") as caught:
        await client.post(f"https://other.test:{port}/hooks", [], b"{}")
    assert "certificate verify failed" in str(caught.value)
    assert resolver.calls == [("hooks.test", port), ("other.test", port)]
    assert sni == ["hooks.test", "other.test"]
