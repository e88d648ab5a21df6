from enum import StrEnum


class CheckoutSessionStatus(StrEnum):
    CREATED = "created"
    EXPIRED = "expired"
    PAID = "paid"

    def __str__(self) -> str:
        return str(self.value)
