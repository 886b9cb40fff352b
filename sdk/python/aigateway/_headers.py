"""The spec's SDK client parameters (Authentication part) and the headers they become.

The same table as the TypeScript SDK (sdk/js/src/headers.ts), with snake_case names;
test/sdk/header-mapping.json holds both SDKs to one mapping.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any, Dict, Mapping, NamedTuple, Optional, Tuple


class GatewayError(Exception):
    """Base class of every error this SDK raises."""


class GatewayClientError(GatewayError, ValueError):
    """A bad parameter or a missing gateway API key, found before any request is sent."""


class Parameter(NamedTuple):
    python: str
    """The Python (snake_case) parameter name."""
    js: str
    """The JavaScript (camelCase) parameter name."""
    header: str
    """The header it becomes, spelt as in the spec."""
    kind: str
    same_as: Optional[str] = None
    """For a real vendor name (``azure_resource_name``): the spec's name for the same setting."""


PARAMETERS: Tuple[Parameter, ...] = (
    Parameter("api_key", "apiKey", "x-gateway-api-key", "string"),
    Parameter("provider", "provider", "x-gateway-provider", "string"),
    Parameter("authorization", "authorization", "Authorization", "bearer"),
    Parameter("virtual_key", "virtualKey", "x-gateway-virtual-key", "string"),
    Parameter("config", "config", "x-gateway-config", "config"),
    Parameter("custom_host", "customHost", "x-gateway-custom-host", "string"),
    Parameter("trace_id", "traceId", "x-gateway-trace-id", "string"),
    Parameter("metadata", "metadata", "x-gateway-metadata", "object"),
    Parameter("cache_force_refresh", "cacheForceRefresh", "x-gateway-cache-force-refresh", "boolean"),
    Parameter("cache_namespace", "cacheNamespace", "x-gateway-cache-namespace", "string"),
    Parameter("request_timeout", "requestTimeout", "x-gateway-request-timeout", "integer"),
    Parameter("forward_headers", "forwardHeaders", "x-gateway-forward-headers", "names"),
    Parameter("cloud_a_resource_name", "cloudAResourceName", "x-gateway-cloudA-resource-name", "string"),
    Parameter("cloud_a_deployment_id", "cloudADeploymentId", "x-gateway-cloudA-deployment-id", "string"),
    Parameter("cloud_a_api_version", "cloudAApiVersion", "x-gateway-cloudA-api-version", "string"),
    Parameter("cloud_a_model_name", "cloudAModelName", "x-gateway-cloudA-model-name", "string"),
    Parameter("cloud_b_project_id", "cloudBProjectId", "x-gateway-cloudB-project-id", "string"),
    Parameter("cloud_b_region", "cloudBRegion", "x-gateway-cloudB-region", "string"),
    Parameter("cloud_c_access_key_id", "cloudCAccessKeyId", "x-gateway-cloudC-access-key-id", "string"),
    Parameter("cloud_c_secret_access_key", "cloudCSecretAccessKey", "x-gateway-cloudC-secret-access-key", "string"),
    Parameter("cloud_c_region", "cloudCRegion", "x-gateway-cloudC-region", "string"),
    Parameter("cloud_c_session_token", "cloudCSessionToken", "x-gateway-cloudC-session-token", "string"),
    # Real vendor names (the gateway accepts their headers as aliases of the spec's).
    Parameter("azure_resource_name", "azureResourceName", "x-gateway-azure-resource-name", "string", "cloud_a_resource_name"),
    Parameter("azure_deployment_id", "azureDeploymentId", "x-gateway-azure-deployment-id", "string", "cloud_a_deployment_id"),
    Parameter("azure_api_version", "azureApiVersion", "x-gateway-azure-api-version", "string", "cloud_a_api_version"),
    Parameter("azure_model_name", "azureModelName", "x-gateway-azure-model-name", "string", "cloud_a_model_name"),
    Parameter("vertex_project_id", "vertexProjectId", "x-gateway-vertex-project-id", "string", "cloud_b_project_id"),
    Parameter("vertex_region", "vertexRegion", "x-gateway-vertex-region", "string", "cloud_b_region"),
    Parameter("aws_access_key_id", "awsAccessKeyId", "x-gateway-aws-access-key-id", "string", "cloud_c_access_key_id"),
    Parameter("aws_secret_access_key", "awsSecretAccessKey", "x-gateway-aws-secret-access-key", "string", "cloud_c_secret_access_key"),
    Parameter("aws_region", "awsRegion", "x-gateway-aws-region", "string", "cloud_c_region"),
    Parameter("aws_session_token", "awsSessionToken", "x-gateway-aws-session-token", "string", "cloud_c_session_token"),
)
"""Every parameter, in the spec's order, then the real vendor names."""

_BY_NAME: Dict[str, Parameter] = {parameter.python: parameter for parameter in PARAMETERS}
SAME_SETTING: Dict[str, Parameter] = {}
"""A real vendor name and the spec's name for the same setting, each to the other."""
for _parameter in PARAMETERS:
    if _parameter.same_as is not None:
        SAME_SETTING[_parameter.python] = _BY_NAME[_parameter.same_as]
        SAME_SETTING[_parameter.same_as] = _parameter
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_PRINTABLE_ASCII = re.compile(r"^[\t\x20-\x7e]*$")
_BEARER = re.compile(r"^bearer\s", re.IGNORECASE)


def create_headers(**params: Any) -> Dict[str, str]:
    """The gateway headers for the given parameters; ``None`` and ``""`` leave a header out.

    >>> create_headers(api_key="gw-…", provider="@openai-prod", metadata={"_user": "u-1"})
    {'x-gateway-api-key': 'gw-…', 'x-gateway-provider': '@openai-prod', 'x-gateway-metadata': '{"_user":"u-1"}'}
    """
    headers: Dict[str, str] = {}
    for name, value in params.items():
        parameter = _BY_NAME.get(name)
        if parameter is None:
            raise GatewayClientError(_unknown_parameter_message(name))
        other = SAME_SETTING.get(name)
        if other is not None and _is_set(value) and _is_set(params.get(other.python)):
            raise GatewayClientError(f"{name} and {other.python} name the same setting: pass one of them.")
        if value is None or (isinstance(value, str) and value == ""):
            continue
        text = _encode(parameter, value)
        # Visible ASCII, space and tab: what every HTTP stack accepts, and no header injection.
        if not _PRINTABLE_ASCII.match(text):
            raise GatewayClientError(
                f"{name} must contain only printable ASCII characters (it becomes the {parameter.header} header)."
            )
        headers[parameter.header] = text
    return headers


def _is_set(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and value == "")


def _encode(parameter: Parameter, value: Any) -> str:
    name, kind = parameter.python, parameter.kind
    if kind == "string":
        if not isinstance(value, str):
            raise GatewayClientError(f"{name} must be a string.")
        return value
    if kind == "bearer":
        if not isinstance(value, str):
            raise GatewayClientError(f"{name} must be a string (the provider token).")
        return value if _BEARER.match(value) else f"Bearer {value}"
    if kind == "config":
        if isinstance(value, str):
            return value
        if not isinstance(value, Mapping):
            raise GatewayClientError(f"{name} must be a config dict or the id of a saved config.")
        return encode_json(value)
    if kind == "object":
        if not isinstance(value, Mapping):
            raise GatewayClientError(f"{name} must be a dict.")
        return encode_json(value)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise GatewayClientError(f"{name} must be True or False.")
        return "true" if value else "false"
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > 2**53 - 1:
            raise GatewayClientError(f"{name} must be a whole number of milliseconds, at least 1.")
        return str(value)
    if kind == "names":
        if not isinstance(value, (list, tuple)) or not all(
            isinstance(item, str) and _HEADER_NAME.match(item) for item in value
        ):
            raise GatewayClientError(f"{name} must be a list of header names.")
        return encode_json(list(value))
    raise AssertionError(f"unknown parameter kind {kind}")


def encode_json(value: Any) -> str:
    """JSON exactly as the TypeScript SDK writes it: compact, key order kept, numbers as
    JavaScript prints them, and every character outside printable ASCII escaped as \\uXXXX."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, Mapping):
        parts = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise GatewayClientError(f"JSON object keys must be strings, not {type(key).__name__}.")
            parts.append(json.dumps(key, ensure_ascii=True) + ":" + encode_json(item))
        return "{" + ",".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(encode_json(item) for item in value) + "]"
    raise GatewayClientError(f"A {type(value).__name__} cannot be encoded as JSON.")


def _js_number(value: float) -> str:
    """Number.prototype.toString: both languages print the shortest round-trip digits;
    only where the exponent form starts differs, so lay the digits out as JavaScript does."""
    if math.isnan(value) or math.isinf(value):
        return "null"  # as JSON.stringify
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(str(d) for d in digit_tuple)
    stripped = digits.rstrip("0")
    exponent = int(exponent) + (len(digits) - len(stripped))
    digits = stripped
    k = len(digits)
    n = k + exponent  # the value is 0.digits × 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        power = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        text = f"{mantissa}e{'+' if power >= 0 else '-'}{abs(power)}"
    return sign + text


def _unknown_parameter_message(name: str) -> str:
    suggestion = _nearest_parameter(name)
    hint = f' (did you mean "{suggestion}"?)' if suggestion else ""
    return f'Unknown gateway parameter "{name}"{hint}.'


def _nearest_parameter(name: str) -> Optional[str]:
    """The closest parameter name, ignoring case and ``_``, when it is at most two edits away."""
    wanted = _normalise(name)
    best: Optional[Tuple[int, str]] = None
    for parameter in PARAMETERS:
        distance = _edit_distance(wanted, _normalise(parameter.python))
        if distance <= 2 and (best is None or distance < best[0]):
            best = (distance, parameter.python)
    return best[1] if best else None


def _normalise(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i]
        for j in range(1, len(b) + 1):
            substitution = previous[j - 1] + (0 if a[i - 1] == b[j - 1] else 1)
            current.append(min(previous[j] + 1, current[j - 1] + 1, substitution))
        previous = current
    return previous[len(b)]
