"""The merchant dashboard (`/dashboard`): accounts, the Merchant API keys, the balance and
its chart, the payments (checkout sessions, subscriptions, refunds, transactions,
events), the webhooks and the sandboxes.

Each page module adds its routes to the one blueprint of `_pages`; importing them here
registers them.
"""

from . import api_keys, home, ledger, payments, refunds, sandboxes, sign_in, webhooks
from ._pages import blueprint, error_page

__all__ = [
    "api_keys",
    "blueprint",
    "error_page",
    "home",
    "ledger",
    "payments",
    "refunds",
    "sandboxes",
    "sign_in",
    "webhooks",
]
