from enum import StrEnum


class CheckResultExpected(StrEnum):
    VALUE_0 = "2xx"
    VALUE_1 = "4xx"

    def __str__(self) -> str:
        return str(self.value)
