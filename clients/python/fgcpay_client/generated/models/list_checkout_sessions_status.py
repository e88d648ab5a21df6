from enum import StrEnum


class ListCheckoutSessionsStatus(StrEnum):
    CREATED = "created"
    EXPIRED = "expired"
    PAID = "paid"

    def __str__(self) -> str:
        return str(self.value)
