"""Encryption at rest for secrets the service must use later (webhook signing secrets,
stored answers that carry one, such as an idempotent replay of a new endpoint).

AES-256-GCM with a key derived from FGCPAY_SECRET_KEY, so a copy of the database alone
does not reveal them.
"""

from __future__ import annotations

import base64
import hashlib
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_PREFIX = "enc1:"


class SecretBox:
    def __init__(self, server_secret: str) -> None:
        key = hashlib.sha256(b"fgcpay secret box v1\x00" + server_secret.encode("utf-8")).digest()
        self._aead = AESGCM(key)

    def seal(self, plaintext: str) -> str:
        nonce = secrets.token_bytes(12)
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), b"fgcpay")
        return _PREFIX + base64.b64encode(nonce + sealed).decode()

    @staticmethod
    def is_sealed(text: str) -> bool:
        return text.startswith(_PREFIX)

    def open(self, sealed: str) -> str:
        """The plaintext; ValueError if `sealed` is not ours (another server secret, damage)."""
        if not sealed.startswith(_PREFIX):
            raise ValueError("not a sealed secret")
        raw = base64.b64decode(sealed[len(_PREFIX) :])
        try:
            return self._aead.decrypt(raw[:12], raw[12:], b"fgcpay").decode("utf-8")
        except InvalidTag:
            raise ValueError("sealed under another server secret, or damaged") from None
