"""Webhooks: the delivery dispatcher, the SSRF guard on targets, endpoints and events as
merchants manage them, the delivery log, and (re-exported here) the public helper that
merchants verify a delivery with:

    from fgcpay.webhooks import verify_delivery, WebhookVerificationError

Only the helper is imported here, so importing it never loads the dispatcher or httpx.
"""

from .verify import WebhookVerificationError, verify_delivery

__all__ = ["WebhookVerificationError", "verify_delivery"]
