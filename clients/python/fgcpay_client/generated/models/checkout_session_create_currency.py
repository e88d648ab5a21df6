from enum import StrEnum


class CheckoutSessionCreateCurrency(StrEnum):
    FGC = "FGC"

    def __str__(self) -> str:
        return str(self.value)
