"""aigateway SDK for Python (standard library only): the gateway's client parameters as
headers, settings for the official ``openai`` client, and helpers for the gateway's own
endpoints. See docs/sdk.md."""

from ._client import (
    DEFAULT_BASE_URL,
    Gateway,
    GatewayAPIError,
    GatewayConnectionError,
    Logs,
    Policies,
    Prompts,
    RateLimitPolicies,
)
from ._headers import PARAMETERS, GatewayClientError, GatewayError, Parameter, create_headers, encode_json

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_BASE_URL",
    "PARAMETERS",
    "Gateway",
    "GatewayAPIError",
    "GatewayClientError",
    "GatewayConnectionError",
    "GatewayError",
    "Logs",
    "Parameter",
    "Policies",
    "Prompts",
    "RateLimitPolicies",
    "create_headers",
    "encode_json",
]
