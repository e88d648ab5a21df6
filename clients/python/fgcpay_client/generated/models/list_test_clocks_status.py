from enum import StrEnum


class ListTestClocksStatus(StrEnum):
    ADVANCING = "advancing"
    READY = "ready"

    def __str__(self) -> str:
        return str(self.value)
