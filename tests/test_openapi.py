"""The OpenAPI document and the routes stay in step."""

from __future__ import annotations

import re

from fgcpay.http.api import document
from helpers import Server

IGNORED_METHODS = {"HEAD", "OPTIONS"}


def _served_operations(server: Server) -> set[tuple[str, str]]:
    from fgcpay.web_app import create_app

    app = create_app(server.running.service)
    found = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1/"):
            continue
        path = re.sub(r"<(?:[a-z_]+:)?([a-z_]+)>", r"{\1}", rule.rule[len("/api/v1") :])
        for method in (rule.methods or set()) - IGNORED_METHODS:
            found.add((method.lower(), path))
    return found


def _documented_operations() -> set[tuple[str, str]]:
    return {
        (method, path)
        for path, item in document()["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }


async def test_every_route_is_documented_and_every_documented_route_exists(server: Server) -> None:
    assert _served_operations(server) == _documented_operations()


def test_every_operation_has_an_id_and_documents_its_errors() -> None:
    for path, item in document()["paths"].items():
        for method, operation in item.items():
            assert operation.get("operationId"), (method, path)
            if operation.get("security") == []:
                continue
            assert "401" in operation["responses"], (method, path)


def test_every_reference_resolves() -> None:
    doc = document()
    text = str(doc)
    for ref in set(re.findall(r"'\$ref': '#/([^']+)'", text)):
        node = doc
        for part in ref.split("/"):
            assert part in node, ref
            node = node[part]
