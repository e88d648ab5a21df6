from enum import StrEnum


class WebhookDeliveryAttemptInjectedType2Type1(StrEnum):
    BAD_SIGNATURE = "bad_signature"
    DELAYED = "delayed"
    DUPLICATE = "duplicate"
    REORDERED = "reordered"
    STALE_TIMESTAMP = "stale_timestamp"

    def __str__(self) -> str:
        return str(self.value)
