from enum import StrEnum


class ListTransactionsType(StrEnum):
    PAYMENT = "payment"
    REFUND = "refund"
    SUBSCRIPTION_CHARGE = "subscription_charge"

    def __str__(self) -> str:
        return str(self.value)
