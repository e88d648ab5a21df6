"""Contains all the data models used in inputs/outputs"""

from .api_error import ApiError
from .api_error_code import ApiErrorCode
from .balance import Balance
from .check_result import CheckResult
from .check_result_expected import CheckResultExpected
from .check_result_name import CheckResultName
from .checkout_session import CheckoutSession
from .checkout_session_create import CheckoutSessionCreate
from .checkout_session_create_currency import CheckoutSessionCreateCurrency
from .checkout_session_list import CheckoutSessionList
from .checkout_session_metadata import CheckoutSessionMetadata
from .checkout_session_status import CheckoutSessionStatus
from .created_sandbox import CreatedSandbox
from .deleted_sandbox import DeletedSandbox
from .deleted_test_clock import DeletedTestClock
from .deleted_test_clock_status import DeletedTestClockStatus
from .event import Event
from .event_data import EventData
from .event_list import EventList
from .event_type import EventType
from .faults import Faults
from .field_error import FieldError
from .get_open_api_document_response_200 import GetOpenApiDocumentResponse200
from .list_checkout_sessions_status import ListCheckoutSessionsStatus
from .list_events_type import ListEventsType
from .list_refunds_status import ListRefundsStatus
from .list_subscriptions_status import ListSubscriptionsStatus
from .list_test_clocks_status import ListTestClocksStatus
from .list_transactions_type import ListTransactionsType
from .list_webhook_deliveries_status import ListWebhookDeliveriesStatus
from .metadata import Metadata
from .no_body import NoBody
from .redelivery import Redelivery
from .refund import Refund
from .refund_create_type_0 import RefundCreateType0
from .refund_create_type_1 import RefundCreateType1
from .refund_list import RefundList
from .refund_metadata import RefundMetadata
from .refund_reason_type_1 import RefundReasonType1
from .refund_reason_type_2_type_1 import RefundReasonType2Type1
from .refund_reason_type_3_type_1 import RefundReasonType3Type1
from .refund_status import RefundStatus
from .sandbox import Sandbox
from .sandbox_create import SandboxCreate
from .sandbox_list import SandboxList
from .stream_hello import StreamHello
from .stream_ping import StreamPing
from .subscription import Subscription
from .subscription_create import SubscriptionCreate
from .subscription_create_currency import SubscriptionCreateCurrency
from .subscription_create_interval import SubscriptionCreateInterval
from .subscription_ended_reason_type_1 import SubscriptionEndedReasonType1
from .subscription_ended_reason_type_2_type_1 import SubscriptionEndedReasonType2Type1
from .subscription_ended_reason_type_3_type_1 import SubscriptionEndedReasonType3Type1
from .subscription_interval import SubscriptionInterval
from .subscription_list import SubscriptionList
from .subscription_metadata import SubscriptionMetadata
from .subscription_status import SubscriptionStatus
from .test_approve_body import TestApproveBody
from .test_approve_body_customer_code_type_1 import TestApproveBodyCustomerCodeType1
from .test_approve_body_customer_code_type_2_type_1 import TestApproveBodyCustomerCodeType2Type1
from .test_approve_body_customer_code_type_3_type_1 import TestApproveBodyCustomerCodeType3Type1
from .test_clock import TestClock
from .test_clock_advance import TestClockAdvance
from .test_clock_create import TestClockCreate
from .test_clock_list import TestClockList
from .test_clock_status import TestClockStatus
from .test_pay_body import TestPayBody
from .test_pay_body_customer_code_type_1 import TestPayBodyCustomerCodeType1
from .test_pay_body_customer_code_type_2_type_1 import TestPayBodyCustomerCodeType2Type1
from .test_pay_body_customer_code_type_3_type_1 import TestPayBodyCustomerCodeType3Type1
from .transaction import Transaction
from .transaction_list import TransactionList
from .transaction_status import TransactionStatus
from .transaction_type import TransactionType
from .trigger import Trigger
from .trigger_body import TriggerBody
from .trigger_body_event_type import TriggerBodyEventType
from .trigger_event_type import TriggerEventType
from .webhook_check import WebhookCheck
from .webhook_delivery import WebhookDelivery
from .webhook_delivery_attempt import WebhookDeliveryAttempt
from .webhook_delivery_attempt_injected_type_1 import WebhookDeliveryAttemptInjectedType1
from .webhook_delivery_attempt_injected_type_2_type_1 import (
    WebhookDeliveryAttemptInjectedType2Type1,
)
from .webhook_delivery_attempt_injected_type_3_type_1 import (
    WebhookDeliveryAttemptInjectedType3Type1,
)
from .webhook_delivery_list import WebhookDeliveryList
from .webhook_delivery_status import WebhookDeliveryStatus
from .webhook_endpoint import WebhookEndpoint
from .webhook_endpoint_create import WebhookEndpointCreate
from .webhook_endpoint_create_faults_type_0 import WebhookEndpointCreateFaultsType0
from .webhook_endpoint_list import WebhookEndpointList
from .webhook_endpoint_status import WebhookEndpointStatus
from .webhook_endpoint_update import WebhookEndpointUpdate
from .webhook_endpoint_update_faults_type_0 import WebhookEndpointUpdateFaultsType0

__all__ = (
    "ApiError",
    "ApiErrorCode",
    "Balance",
    "CheckoutSession",
    "CheckoutSessionCreate",
    "CheckoutSessionCreateCurrency",
    "CheckoutSessionList",
    "CheckoutSessionMetadata",
    "CheckoutSessionStatus",
    "CheckResult",
    "CheckResultExpected",
    "CheckResultName",
    "CreatedSandbox",
    "DeletedSandbox",
    "DeletedTestClock",
    "DeletedTestClockStatus",
    "Event",
    "EventData",
    "EventList",
    "EventType",
    "Faults",
    "FieldError",
    "GetOpenApiDocumentResponse200",
    "ListCheckoutSessionsStatus",
    "ListEventsType",
    "ListRefundsStatus",
    "ListSubscriptionsStatus",
    "ListTestClocksStatus",
    "ListTransactionsType",
    "ListWebhookDeliveriesStatus",
    "Metadata",
    "NoBody",
    "Redelivery",
    "Refund",
    "RefundCreateType0",
    "RefundCreateType1",
    "RefundList",
    "RefundMetadata",
    "RefundReasonType1",
    "RefundReasonType2Type1",
    "RefundReasonType3Type1",
    "RefundStatus",
    "Sandbox",
    "SandboxCreate",
    "SandboxList",
    "StreamHello",
    "StreamPing",
    "Subscription",
    "SubscriptionCreate",
    "SubscriptionCreateCurrency",
    "SubscriptionCreateInterval",
    "SubscriptionEndedReasonType1",
    "SubscriptionEndedReasonType2Type1",
    "SubscriptionEndedReasonType3Type1",
    "SubscriptionInterval",
    "SubscriptionList",
    "SubscriptionMetadata",
    "SubscriptionStatus",
    "TestApproveBody",
    "TestApproveBodyCustomerCodeType1",
    "TestApproveBodyCustomerCodeType2Type1",
    "TestApproveBodyCustomerCodeType3Type1",
    "TestClock",
    "TestClockAdvance",
    "TestClockCreate",
    "TestClockList",
    "TestClockStatus",
    "TestPayBody",
    "TestPayBodyCustomerCodeType1",
    "TestPayBodyCustomerCodeType2Type1",
    "TestPayBodyCustomerCodeType3Type1",
    "Transaction",
    "TransactionList",
    "TransactionStatus",
    "TransactionType",
    "Trigger",
    "TriggerBody",
    "TriggerBodyEventType",
    "TriggerEventType",
    "WebhookCheck",
    "WebhookDelivery",
    "WebhookDeliveryAttempt",
    "WebhookDeliveryAttemptInjectedType1",
    "WebhookDeliveryAttemptInjectedType2Type1",
    "WebhookDeliveryAttemptInjectedType3Type1",
    "WebhookDeliveryList",
    "WebhookDeliveryStatus",
    "WebhookEndpoint",
    "WebhookEndpointCreate",
    "WebhookEndpointCreateFaultsType0",
    "WebhookEndpointList",
    "WebhookEndpointStatus",
    "WebhookEndpointUpdate",
    "WebhookEndpointUpdateFaultsType0",
)
