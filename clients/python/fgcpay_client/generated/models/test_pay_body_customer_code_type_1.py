from enum import StrEnum


class TestPayBodyCustomerCodeType1(StrEnum):
    TEST_0001 = "TEST-0001"
    TEST_0002 = "TEST-0002"
    TEST_0003 = "TEST-0003"
    TEST_0004 = "TEST-0004"

    def __str__(self) -> str:
        return str(self.value)
