from enum import StrEnum


class ListRefundsStatus(StrEnum):
    APPROVED = "approved"
    PENDING_REVIEW = "pending_review"
    REJECTED = "rejected"

    def __str__(self) -> str:
        return str(self.value)
