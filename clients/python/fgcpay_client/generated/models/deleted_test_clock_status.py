from enum import StrEnum


class DeletedTestClockStatus(StrEnum):
    ADVANCING = "advancing"
    READY = "ready"

    def __str__(self) -> str:
        return str(self.value)
