from enum import StrEnum


class SubscriptionCreateCurrency(StrEnum):
    FGC = "FGC"

    def __str__(self) -> str:
        return str(self.value)
