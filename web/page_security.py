"""Headers and CSRF tokens for the pages a browser shows: the hosted page and the dashboard.

A hosted page's URL is a capability (whoever knows it can pay) and a dashboard page shows
a merchant's data: neither may leak through the Referer header, a cache, or a frame.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from fgcpay.domain.urls import origin_of

CSRF_COOKIE = "fgc_csrf"


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


def csrf_token(secret_key: str, session_id: str, nonce: str) -> str:
    message = f"csrf:{session_id}:{nonce}".encode()
    return hmac.new(secret_key.encode("utf-8"), message, hashlib.sha256).hexdigest()


def csrf_ok(secret_key: str, session_id: str, nonce: str | None, token: str | None) -> bool:
    if not nonce or not token:
        return False
    return hmac.compare_digest(csrf_token(secret_key, session_id, nonce), token)


def page_headers(success_url: str | None = None) -> dict[str, str]:
    """CSP without 'unsafe-inline', no framing, no referrer, no caching.

    The success URL's origin is rebuilt from its parsed scheme, host (A-label, dotted quad
    or bracketed IPv6) and explicit port, so no `;`, `,`, quote or space from a URL can
    reach the header; a URL that does not parse (a row stored before the rules tightened)
    adds nothing.
    """
    form_action = "'self'"
    # Chrome applies form-action to the redirect after the form post as well.
    if success_url and (origin := origin_of(success_url)):
        form_action += f" {origin}"
    csp = (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'; form-action {form_action}; frame-ancestors 'none'; "
        "base-uri 'none'"
    )
    return {
        "Content-Security-Policy": csp,
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Cross-Origin-Opener-Policy": "same-origin",
    }
