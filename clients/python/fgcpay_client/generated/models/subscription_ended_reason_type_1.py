from enum import StrEnum


class SubscriptionEndedReasonType1(StrEnum):
    END_DATE_REACHED = "end_date_reached"
    END_OF_TIME_RANGE = "end_of_time_range"
    MAX_TOTAL_REACHED = "max_total_reached"
    PAYMENT_FAILED = "payment_failed"

    def __str__(self) -> str:
        return str(self.value)
