"""Merchant accounts: sign-up, sign-in with its limits, server-side sessions, sign-out.
The dashboard's pages call it; nothing here knows of a web request."""

from .service import Accounts, Current, Refused, SignedIn

__all__ = ["Accounts", "Current", "Refused", "SignedIn"]
