from enum import StrEnum


class TransactionStatus(StrEnum):
    DECLINED = "declined"
    SUCCEEDED = "succeeded"

    def __str__(self) -> str:
        return str(self.value)
