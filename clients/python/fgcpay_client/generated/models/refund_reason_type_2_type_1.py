from enum import StrEnum


class RefundReasonType2Type1(StrEnum):
    DUPLICATE = "duplicate"
    FRAUDULENT = "fraudulent"
    OTHER = "other"
    REQUESTED_BY_CUSTOMER = "requested_by_customer"

    def __str__(self) -> str:
        return str(self.value)
