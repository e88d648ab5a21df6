"""The OpenAPI 3.1 document, generated at app creation from the routes (`app.url_map`),
their `@operation` declarations and the models they name; served at /api/v1/openapi.json."""

from __future__ import annotations

import json
import re
from typing import Any

from fgcpay.domain.checkout import AMOUNT_SCHEMA
from fgcpay.domain.errors import FieldErrorWire
from fgcpay.domain.event_stream import CLOSE_CODES
from fgcpay.domain.events import EVENT_TYPES
from fgcpay.domain.fields import COMPONENT, Metadata
from fgcpay.web.errors import ApiError
from fgcpay.web.plumbing import API_PREFIX
from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import core_schema
from quart import Blueprint, Response, current_app
from quart_trio import QuartTrio

from . import openapi_parts as parts
from .operations import Operation, declared, operation

blueprint = Blueprint("openapi", __name__)
EXTENSION = "fgcpay.openapi"
REF = "#/components/schemas/{model}"

NO_BODY: dict[str, Any] = {
    "type": "object",
    "maxProperties": 0,
    "description": "This operation takes no body fields: send no body, or `{}`.",
}


class _Schemas(GenerateJsonSchema):
    """Components named after the wire types (`CheckoutSessionWire` -> `CheckoutSession`,
    `Page[CheckoutSessionWire]` -> `CheckoutSessionList`), without pydantic's titles."""

    def normalize_name(self, name: str) -> str:
        page = re.fullmatch(r"Page\[(\w+?)(?:Wire)?\]", name)
        if page:
            return page[1] + "List"
        return super().normalize_name(re.sub(r"Wire$", "", name))

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        # `{"type": ["string", "null"]}` rather than an anyOf, as the document always said.
        inner = self.generate_inner(schema["schema"])
        if isinstance(inner.get("type"), str) and "$ref" not in inner:
            return {**inner, "type": [inner["type"], "null"]}
        return super().nullable_schema(schema)

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def typed_dict_schema(self, schema: core_schema.TypedDictSchema) -> JsonSchemaValue:
        found = super().typed_dict_schema(schema)
        found.pop("title", None)
        found.pop("description", None)  # docstrings are for us; the document says its own
        return found

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        found = super().model_schema(schema)
        found.pop("title", None)
        found.pop("description", None)
        return found


def _types(operations: list[Operation]) -> list[tuple[str, Any]]:
    """Every named type the document shows, keyed for lookup."""
    found: dict[str, Any] = {"ApiError": ApiError, "FieldError": FieldErrorWire}
    for op in operations:
        for kind in (op.body, op.query, op.schema, *op.websocket):
            if kind is not None and not isinstance(kind, dict):
                found[_key(kind)] = kind
    return list(found.items())


def _key(kind: object) -> str:
    return repr(kind)


def _schemas(operations: list[Operation]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(schema per type key, components.schemas) in one generation, sharing definitions."""
    inputs: list[tuple[str, JsonSchemaMode, TypeAdapter[Any]]] = [
        (key, "validation", TypeAdapter[Any](kind)) for key, kind in _types(operations)
    ]
    by_key, definitions = TypeAdapter.json_schemas(
        inputs, ref_template=REF, schema_generator=_Schemas
    )
    components: dict[str, Any] = dict(definitions.get("$defs", {}))
    components.update(
        Amount=AMOUNT_SCHEMA,
        Metadata=Metadata.component(),
        EventType={"type": "string", "enum": list(EVENT_TYPES)},
        NoBody=NO_BODY,
    )
    return {key: schema for (key, _), schema in by_key.items()}, components


def _references(node: Any) -> Any:
    """The rules' `x-component` markers as `$ref`s."""
    if isinstance(node, dict):
        found = {key: _references(value) for key, value in node.items() if key != COMPONENT}
        if COMPONENT in node:
            return {"$ref": REF.format(model=node[COMPONENT]), **found}
        return found
    if isinstance(node, list):
        return [_references(value) for value in node]
    return node


def _query_parameters(schema: dict[str, Any], components: dict[str, Any]) -> list[dict[str, Any]]:
    """A query model's fields as parameters: the description moves up, null goes away."""
    if "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    found = []
    for name, field in schema.get("properties", {}).items():
        field = dict(field)
        description = field.pop("description", None)
        if field.get("default", ...) is None:
            del field["default"]
        if isinstance(field.get("type"), list):
            field["type"] = next(t for t in field["type"] if t != "null")
        if "enum" in field:  # a query parameter is absent, never null
            field["enum"] = [value for value in field["enum"] if value is not None]
        parameter: dict[str, Any] = {"name": name, "in": "query", "required": False}
        if description:
            parameter["description"] = description
        parameter["schema"] = field
        found.append(parameter)
    return found


def _operation(
    op: Operation, path_parameters: list[str], schemas: dict[str, Any], components: dict[str, Any]
) -> dict[str, Any]:
    built: dict[str, Any] = {"operationId": op.operation_id, "summary": op.summary}
    if op.description:
        built["description"] = op.description
    if op.tag:
        built["tags"] = [op.tag]
    if not op.auth:
        built["security"] = []
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in path_parameters
    ]
    if op.query is not None:
        parameters += _query_parameters(schemas[_key(op.query)], components)
    if op.idempotent:
        parameters.append({"$ref": "#/components/parameters/IdempotencyKey"})
    if parameters:
        built["parameters"] = parameters
    if op.body is not None:
        built["requestBody"] = _body(not op.body_optional, schemas[_key(op.body)])
    elif op.no_body:
        built["requestBody"] = _body(False, {"$ref": REF.format(model="NoBody")})
    headers = parts.SUCCESS_HEADERS + op.headers
    if op.idempotent:
        headers += ("Idempotent-Replayed",)
    success = op.schema if isinstance(op.schema, dict) else schemas[_key(op.schema)]
    responses: dict[str, Any] = {
        str(op.status): {
            "description": op.answer,
            "headers": parts.header_refs(headers),
            "content": {"application/json": {"schema": success}},
        }
    }
    if op.websocket:
        # OpenAPI has no websockets: the 101 has no body, and the frames the socket sends
        # are named in an extension (each a schema of components).
        del responses[str(op.status)]["content"]
        built[parts.WEBSOCKET_EXTENSION] = {
            "frames": {"oneOf": [schemas[_key(kind)] for kind in op.websocket]},
            "closeCodes": {str(code): text for code, text in CLOSE_CODES.items()},
        }
    for status in op.error_statuses(bool(path_parameters)):
        responses[str(status)] = {"$ref": f"#/components/responses/{parts.ERRORS[status][0]}"}
    built["responses"] = responses
    return built


def _body(required: bool, schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def build(app: QuartTrio) -> dict[str, Any]:
    """The whole document for the routes of `app` under /api/v1."""
    routes: list[tuple[str, str, list[str], Operation]] = []
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith(API_PREFIX + "/"):
            continue
        op = declared(app.view_functions[rule.endpoint])
        if op is None:
            raise LookupError(f"{rule.rule} declares no @operation")
        path = re.sub(r"<(?:[a-z_]+:)?([a-z_]+)>", r"{\1}", rule.rule[len(API_PREFIX) :])
        names = re.findall(r"\{([a-z_]+)\}", path)
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            routes.append((path, method.lower(), names, op))
    operations = [op for *_, op in routes]
    schemas, components = _schemas(operations)
    paths: dict[str, Any] = {}
    declared_at: dict[tuple[str, str], Operation] = {}
    for path, method, names, op in routes:
        # A websocket's path has a plain GET too (answering 426): one operation, declared
        # alike on both views.
        if declared_at.setdefault((path, method), op) != op:
            raise LookupError(f"{method.upper()} {path} is declared twice, differently")
        paths.setdefault(path, {})[method] = _operation(op, names, schemas, components)
    for op in operations:  # a query model is shown as its parameters only
        if op.query is not None:
            components.pop(schemas[_key(op.query)]["$ref"].rsplit("/", 1)[1], None)
    doc: dict[str, Any] = _references(
        {
            "openapi": "3.1.0",
            "info": parts.INFO,
            "servers": [{"url": API_PREFIX}],
            "security": [{parts.SECURITY_SCHEME: []}],
            "paths": paths,
            "components": {
                "securitySchemes": parts.SECURITY_SCHEMES,
                "headers": parts.HEADERS,
                "parameters": {"IdempotencyKey": parts.IDEMPOTENCY_KEY},
                "schemas": dict(sorted(components.items())),
                "responses": parts.error_responses(),
            },
        }
    )
    return doc


# Documents already built, by the API routes they describe. The document depends only on
# those routes and their view functions (whose `@operation` names the models), so an app with
# the same routes reuses it: building costs a tenth of a second of CPU, and a process may
# create many apps (the tests start a service per test).
_BUILT: dict[tuple[object, ...], bytes] = {}


def install(app: QuartTrio) -> None:
    """Build the document once, when the app is created (after every route is registered)."""
    routes = tuple(
        (rule.rule, tuple(sorted(rule.methods or ())), app.view_functions[rule.endpoint])
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith(API_PREFIX + "/")
    )
    built = _BUILT.get(routes)
    if built is None:
        built = _BUILT[routes] = json.dumps(build(app), indent=2).encode()
    app.extensions[EXTENSION] = built


@blueprint.get("/api/v1/openapi.json")
@operation(
    operation_id="getOpenApiDocument",
    summary="This document",
    status=200,
    answer="The OpenAPI 3.1 document",
    schema={"type": "object"},
    auth=False,
)
async def openapi_json() -> Response:
    return Response(current_app.extensions[EXTENSION], content_type="application/json")
