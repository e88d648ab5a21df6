from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.test_pay_body_customer_code_type_1 import TestPayBodyCustomerCodeType1
from ..models.test_pay_body_customer_code_type_2_type_1 import TestPayBodyCustomerCodeType2Type1
from ..models.test_pay_body_customer_code_type_3_type_1 import TestPayBodyCustomerCodeType3Type1
from ..types import UNSET, Unset

T = TypeVar("T", bound="TestPayBody")


@_attrs_define
class TestPayBody:
    """
    Attributes:
        customer_code (None | TestPayBodyCustomerCodeType1 | TestPayBodyCustomerCodeType2Type1 |
            TestPayBodyCustomerCodeType3Type1 | Unset): The test customer who pays (default `TEST-0001`): `TEST-0002` is
            declined (insufficient funds), `TEST-0003` refused (blocked).
    """

    customer_code: (
        None
        | TestPayBodyCustomerCodeType1
        | TestPayBodyCustomerCodeType2Type1
        | TestPayBodyCustomerCodeType3Type1
        | Unset
    ) = UNSET

    def to_dict(self) -> dict[str, Any]:
        customer_code: None | str | Unset
        if isinstance(self.customer_code, Unset):
            customer_code = UNSET
        elif isinstance(self.customer_code, TestPayBodyCustomerCodeType1):
            customer_code = self.customer_code.value
        elif isinstance(self.customer_code, TestPayBodyCustomerCodeType2Type1):
            customer_code = self.customer_code.value
        elif isinstance(self.customer_code, TestPayBodyCustomerCodeType3Type1):
            customer_code = self.customer_code.value
        else:
            customer_code = self.customer_code

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if customer_code is not UNSET:
            field_dict["customer_code"] = customer_code

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_customer_code(
            data: object,
        ) -> (
            None
            | TestPayBodyCustomerCodeType1
            | TestPayBodyCustomerCodeType2Type1
            | TestPayBodyCustomerCodeType3Type1
            | Unset
        ):
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                customer_code_type_1 = TestPayBodyCustomerCodeType1(data)

                return customer_code_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                customer_code_type_2_type_1 = TestPayBodyCustomerCodeType2Type1(data)

                return customer_code_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                customer_code_type_3_type_1 = TestPayBodyCustomerCodeType3Type1(data)

                return customer_code_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(
                None
                | TestPayBodyCustomerCodeType1
                | TestPayBodyCustomerCodeType2Type1
                | TestPayBodyCustomerCodeType3Type1
                | Unset,
                data,
            )

        customer_code = _parse_customer_code(d.pop("customer_code", UNSET))

        test_pay_body = cls(
            customer_code=customer_code,
        )

        return test_pay_body
