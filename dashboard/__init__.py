"""The merchant dashboard (`/dashboard`): accounts, the Merchant API keys, the
balance and the webhooks.

Each page module adds its routes to the one blueprint of `_pages`; importing them here
registers them.
"""

from . import api_keys, home, sign_in, webhooks
from ._pages import blueprint

__all__ = ["api_keys", "blueprint", "home", "sign_in", "webhooks"]
