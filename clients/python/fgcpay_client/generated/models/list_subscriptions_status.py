from enum import StrEnum


class ListSubscriptionsStatus(StrEnum):
    ACTIVE = "active"
    CANCELLED = "cancelled"
    ENDED = "ended"
    PAST_DUE = "past_due"
    PAUSED = "paused"

    def __str__(self) -> str:
        return str(self.value)
