"""LLM providers over HTTP: requests, completions, usage."""

from typing import TYPE_CHECKING

from overbrainer.model.face import lazy_face

if TYPE_CHECKING:
    from overbrainer.llm.batches import (
        BatchApi,
        BatchItem,
        BatchResult,
        BatchStatus,
        NotSubmitted,
        batch_api,
    )
    from overbrainer.llm.client import LlmClient, ProtocolClient
    from overbrainer.llm.connect import EMBEDDER, RoleClient, connect_roles, role_key
    from overbrainer.llm.errors import (
        InvalidResponse,
        LlmError,
        ProviderUnreachable,
        RepeatedError,
        StatusError,
    )
    from overbrainer.llm.http import (
        address_of,
        join_url,
        parse_retry_after,
        transport_cause,
        valid_header_value,
    )
    from overbrainer.llm.online import Listing, RoleCheck, check_online, list_models, listed_models
    from overbrainer.llm.pricing import PriceBook, find_price, role_price
    from overbrainer.llm.protocols import wire_of
    from overbrainer.llm.retry import OnRetry, RetryHalted, RetryPolicy, retry_message, with_retry
    from overbrainer.llm.types import Completion, CompletionRequest

__all__ = [
    "EMBEDDER",
    "BatchApi",
    "BatchItem",
    "BatchResult",
    "BatchStatus",
    "Completion",
    "CompletionRequest",
    "InvalidResponse",
    "Listing",
    "LlmClient",
    "LlmError",
    "NotSubmitted",
    "OnRetry",
    "PriceBook",
    "ProtocolClient",
    "ProviderUnreachable",
    "RepeatedError",
    "RetryHalted",
    "RetryPolicy",
    "RoleCheck",
    "RoleClient",
    "StatusError",
    "address_of",
    "batch_api",
    "check_online",
    "connect_roles",
    "find_price",
    "join_url",
    "list_models",
    "listed_models",
    "parse_retry_after",
    "retry_message",
    "role_key",
    "role_price",
    "transport_cause",
    "valid_header_value",
    "wire_of",
    "with_retry",
]

__getattr__ = lazy_face(
    __name__,
    {
        "BatchApi": "batches",
        "BatchItem": "batches",
        "BatchResult": "batches",
        "BatchStatus": "batches",
        "NotSubmitted": "batches",
        "Completion": "types",
        "CompletionRequest": "types",
        "EMBEDDER": "connect",
        "InvalidResponse": "errors",
        "LlmClient": "client",
        "Listing": "online",
        "LlmError": "errors",
        "OnRetry": "retry",
        "PriceBook": "pricing",
        "ProtocolClient": "client",
        "ProviderUnreachable": "errors",
        "RepeatedError": "errors",
        "RetryHalted": "retry",
        "RetryPolicy": "retry",
        "RoleCheck": "online",
        "RoleClient": "connect",
        "StatusError": "errors",
        "address_of": "http",
        "batch_api": "batches",
        "check_online": "online",
        "connect_roles": "connect",
        "role_key": "connect",
        "find_price": "pricing",
        "join_url": "http",
        "list_models": "online",
        "listed_models": "online",
        "parse_retry_after": "http",
        "retry_message": "retry",
        "role_price": "pricing",
        "transport_cause": "http",
        "valid_header_value": "http",
        "wire_of": "protocols",
        "with_retry": "retry",
    },
)
