from enum import StrEnum


class CheckResultName(StrEnum):
    BAD_SIGNATURE = "bad_signature"
    FUTURE_TIMESTAMP = "future_timestamp"
    MISSING_SIGNATURE = "missing_signature"
    REDELIVERY = "redelivery"
    ROTATED_SECRETS = "rotated_secrets"
    SIGNED = "signed"
    STALE_TIMESTAMP = "stale_timestamp"
    TAMPERED_BODY = "tampered_body"

    def __str__(self) -> str:
        return str(self.value)
