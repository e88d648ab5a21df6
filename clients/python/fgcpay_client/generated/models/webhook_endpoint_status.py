from enum import StrEnum


class WebhookEndpointStatus(StrEnum):
    DELETED = "deleted"
    ENABLED = "enabled"

    def __str__(self) -> str:
        return str(self.value)
