"""A client library for accessing fgcpay Merchant Payments API"""

from .client import AuthenticatedClient, Client

__all__ = (
    "AuthenticatedClient",
    "Client",
)
