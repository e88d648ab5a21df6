from enum import StrEnum


class TriggerBodyEventType(StrEnum):
    CHECKOUT_SESSION_EXPIRED = "checkout.session.expired"
    CHECKOUT_SESSION_PAID = "checkout.session.paid"
    REFUND_APPROVED = "refund.approved"
    REFUND_CREATED = "refund.created"
    REFUND_REJECTED = "refund.rejected"
    SUBSCRIPTION_ACTIVATED = "subscription.activated"
    SUBSCRIPTION_CANCELLED = "subscription.cancelled"
    SUBSCRIPTION_CHARGED = "subscription.charged"
    SUBSCRIPTION_CREATED = "subscription.created"
    SUBSCRIPTION_ENDED = "subscription.ended"
    SUBSCRIPTION_PAYMENT_FAILED = "subscription.payment_failed"

    def __str__(self) -> str:
        return str(self.value)
