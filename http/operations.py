"""What each API operation declares for the OpenAPI document: `@operation(...)` on a view.

The route (method, path, path parameters) comes from `app.url_map`; everything else a
client needs (id, summary, request body, query, answer, idempotency, authentication) is
declared here once, beside the handler, and `fgcpay.http.openapi` builds the document
from it. The statuses an operation can answer follow from what it declares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs
from pydantic import BaseModel

ATTRIBUTE = "__fgcpay_operation__"
View = TypeVar("View", bound=Callable[..., Any])


@attrs.frozen(kw_only=True)
class Operation:
    operation_id: str
    summary: str
    status: int  # of the success answer
    answer: str  # its description
    schema: object  # a TypedDict or model of the success body, or a JSON schema dict
    tag: str | None = None
    description: str | None = None
    body: type[BaseModel] | None = None  # a required JSON body validated by this model
    body_optional: bool = False  # `body` may be left out (every field of it optional)
    no_body: bool = False  # takes no body fields (an empty body or `{}`)
    query: type[BaseModel] | None = None  # the query model; else parameters are ignored
    rejects_query: bool = False  # takes no query parameters and refuses any (400)
    idempotent: bool = False  # honours Idempotency-Key
    auth: bool = True  # needs an API key
    headers: tuple[str, ...] = ()  # extra documented headers of the success answer
    # Refuses in the resource's present state (409, e.g. cancelling an ended subscription),
    # which nothing else it declares implies.
    conflicts: bool = False
    # Looks up an id its body names (404 when the merchant has none by it, e.g. the
    # session a refund is for), beside any in its path.
    finds: bool = False
    # Refuses some callers whatever they ask (403, e.g. a sandbox's key asking for sandboxes).
    forbids: bool = False
    # Answers as a declining test customer would (402 `payment_declined`: a test helper).
    declines: bool = False
    # A websocket: the frames it sends (TypedDicts); success is 101, a plain request 426.
    websocket: tuple[object, ...] = ()

    def error_statuses(self, has_path_parameters: bool) -> list[int]:
        """Every error status this operation can answer, from what it declares."""
        takes_body = self.body is not None or self.no_body
        statuses = {413, 429, 500}
        if self.auth:
            statuses |= {401, 503}  # a key is checked; the database is asked
        if takes_body or self.query is not None or self.rejects_query:
            statuses.add(400)
        if has_path_parameters or self.finds:
            statuses.add(404)
        if takes_body:
            statuses |= {408, 415}
        if self.idempotent or self.conflicts:
            statuses.add(409)
        if self.declines:
            statuses.add(402)
        if self.forbids:
            statuses.add(403)
        if self.websocket:
            statuses.add(426)
        return sorted(statuses)


def operation(**declared: Any) -> Callable[[View], View]:
    """Declare the view's operation (see `Operation` for the fields)."""
    found = Operation(**declared)

    def mark(view: View) -> View:
        setattr(view, ATTRIBUTE, found)
        return view

    return mark


def declared(view: Callable[..., Any]) -> Operation | None:
    found: Operation | None = getattr(view, ATTRIBUTE, None)
    return found
