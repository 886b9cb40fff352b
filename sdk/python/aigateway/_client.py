"""The Gateway helper: headers and base URL for the official ``openai`` client, and a small
standard-library HTTP client for the gateway's own endpoints (prompts, policies, logs)."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Mapping, Optional

from ._headers import SAME_SETTING, GatewayClientError, GatewayError, create_headers

DEFAULT_BASE_URL = "http://127.0.0.1:8787/v1"
"""Where ``npm start`` serves the gateway."""

_USER_AGENT = "aigateway-python/0.1.0"
_NO_PROVIDER_TOKEN = "aigateway-no-provider-token"
_BEARER_PREFIX = re.compile(r"^bearer\s+", re.IGNORECASE)


class GatewayAPIError(GatewayError):
    """The gateway answered with an error status. The body is OpenAI-shaped:
    ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(self, status: int, body: Any, headers: Optional[Mapping[str, str]] = None) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        self.status: int = status
        self.body: Any = body
        self.headers: Dict[str, str] = dict(headers or {})
        self.message: str = str(error.get("message") or body or f"HTTP {status}")
        self.type: Optional[str] = error.get("type")
        self.param: Optional[str] = error.get("param")
        self.code: Optional[str] = error.get("code")
        super().__init__(f"{status}: {self.message}")


class GatewayConnectionError(GatewayError):
    """The gateway could not be reached."""


class Gateway:
    """Gateway settings: base URL and the ``x-gateway-*`` headers of every request.

    >>> gateway = Gateway(provider="@openai-prod", metadata={"_user": "u-1"})  # key from GATEWAY_API_KEY
    >>> client = gateway.openai_client()  # an openai.OpenAI pointed at the gateway
    >>> gateway.prompts.render("support-reply", variables={"tone": "friendly"}, temperature=0.7)
    """

    def __init__(
        self,
        *,
        base_url: Optional[str] = None,
        timeout: float = 60.0,
        default_headers: Optional[Mapping[str, str]] = None,
        **params: Any,
    ) -> None:
        api_key = params.get("api_key") or os.environ.get("GATEWAY_API_KEY") or None
        if api_key is None:
            raise GatewayClientError(
                "Missing gateway API key: pass api_key=... to Gateway() or set the GATEWAY_API_KEY environment variable."
            )
        self._params: Dict[str, Any] = {**params, "api_key": api_key}
        self._default_headers: Dict[str, str] = dict(default_headers or {})
        self.base_url: str = (base_url or os.environ.get("GATEWAY_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.timeout: float = timeout
        self.api_key: str = api_key
        # create_headers checks every name and value, so a typo fails here, not on the wire.
        self._headers: Dict[str, str] = create_headers(**self._params)
        self.prompts = Prompts(self)
        self.policies = Policies(self)
        self.logs = Logs(self)

    @property
    def headers(self) -> Dict[str, str]:
        """Every header a request carries: the gateway headers, then ``default_headers``."""
        return _merge_headers(self._headers, self._default_headers)

    def with_options(self, **overrides: Any) -> "Gateway":
        """A new Gateway with some settings replaced (``None`` drops a parameter)."""
        settings: Dict[str, Any] = {
            "base_url": self.base_url,
            "timeout": self.timeout,
            "default_headers": self._default_headers,
            **self._params,
        }
        # A setting given under its other name (aws_region / cloud_c_region…) replaces the old one.
        for name in overrides:
            other = SAME_SETTING.get(name)
            if other is not None and other.python not in overrides:
                settings.pop(other.python, None)
        settings.update(overrides)
        return type(self)(**settings)

    def request_headers(self, **params: Any) -> Dict[str, str]:
        """Headers for one call: ``client.chat.completions.create(..., extra_headers=gateway.request_headers(trace_id="t-1"))``."""
        return create_headers(**params)

    # ---- the official openai client -------------------------------------------------

    def openai_kwargs(self) -> Dict[str, Any]:
        """``base_url``, ``api_key`` and ``default_headers`` for ``openai.OpenAI(**kwargs)``.

        ``Authorization`` is the provider token when one is given, else removed (a saved
        provider, virtual key or config carries its own credentials). The openai client
        always wants an ``api_key``: it gets the provider token or a placeholder, never the
        gateway key, which must not travel on as a provider credential.
        """
        headers: Dict[str, Any] = self.headers
        token = next((value for name, value in headers.items() if name.lower() == "authorization"), None)
        if token is None:
            omit = _openai_omit()
            if omit is not None:
                headers["Authorization"] = omit
        api_key = _NO_PROVIDER_TOKEN if token is None else _BEARER_PREFIX.sub("", token)
        return {"base_url": self.base_url, "api_key": api_key, "default_headers": headers}

    def openai_client(self, **kwargs: Any) -> Any:
        """An ``openai.OpenAI`` client pointed at the gateway (needs ``pip install openai``)."""
        openai = _import_openai()
        return openai.OpenAI(**{**self.openai_kwargs(), **kwargs})

    def async_openai_client(self, **kwargs: Any) -> Any:
        """An ``openai.AsyncOpenAI`` client pointed at the gateway (needs ``pip install openai``)."""
        openai = _import_openai()
        return openai.AsyncOpenAI(**{**self.openai_kwargs(), **kwargs})

    # ---- the gateway's own endpoints, over urllib -----------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Any:
        """Sends one request to ``base_url + path`` and returns the parsed JSON answer."""
        url = self.base_url + path
        pairs = [(key, _query_value(value)) for key, value in (query or {}).items() if value is not None]
        if pairs:
            url += "?" + urllib.parse.urlencode(pairs)
        all_headers = _merge_headers(
            {"Accept": "application/json", "User-Agent": _USER_AGENT}, _merge_headers(self.headers, dict(headers or {}))
        )
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method.upper(), headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return _parse_json(response.read())
        except urllib.error.HTTPError as error:
            raw = error.read()
            raise GatewayAPIError(error.code, _parse_json(raw, fallback=raw.decode("utf-8", "replace")), dict(error.headers.items())) from None
        except urllib.error.URLError as error:
            raise GatewayConnectionError(f"Cannot reach the gateway at {self.base_url}: {error.reason}") from error


class Prompts:
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def render(self, prompt_id: str, variables: Mapping[str, Any], **hyperparameters: Any) -> Dict[str, Any]:
        """``POST /v1/prompts/{prompt_id}/render``: hyperparameters go at the root, next to ``variables``.
        Returns ``{"success": True, "data": {...}}``; ``data`` is a chat completion request body."""
        body = {"variables": dict(variables), **hyperparameters}
        return self._gateway.request("POST", f"/prompts/{_segment(prompt_id)}/render", body=body)


class RateLimitPolicies:
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def create(self, **body: Any) -> Dict[str, Any]:
        """``POST /v1/policies/rate-limits`` (admin): conditions, group_by, type, unit, value, name, …
        Returns ``{"id": ..., "object": ...}``."""
        return self._gateway.request("POST", "/policies/rate-limits", body=body)

    def list(self, **query: Any) -> Dict[str, Any]:
        """``GET /v1/policies/rate-limits``: workspace_id, status, type, unit, page_size, current_page."""
        return self._gateway.request("GET", "/policies/rate-limits", query=query)

    def retrieve(self, policy_id: str) -> Dict[str, Any]:
        return self._gateway.request("GET", f"/policies/rate-limits/{_segment(policy_id)}")

    def update(self, policy_id: str, **patch: Any) -> Dict[str, Any]:
        """``PATCH /v1/policies/rate-limits/{id}`` with status, value or name (our addition to the spec)."""
        return self._gateway.request("PATCH", f"/policies/rate-limits/{_segment(policy_id)}", body=patch)

    def archive(self, policy_id: str) -> Dict[str, Any]:
        """Archives a policy: still listed (``status: archived``), no longer enforced."""
        return self.update(policy_id, status="archived")


class Policies:
    def __init__(self, gateway: Gateway) -> None:
        self.rate_limits = RateLimitPolicies(gateway)


class Logs:
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def list(self, *, metadata: Optional[Mapping[str, str]] = None, **query: Any) -> Dict[str, Any]:
        """``GET /v1/logs`` (admin): trace_id, status, provider, model, from, to, limit, after, and
        ``metadata={"key": "value"}`` filters (``metadata.<key>=value``). Available once the
        gateway's request-log store lands; until then the gateway answers 404."""
        filters: Dict[str, Any] = dict(query)
        for key, value in (metadata or {}).items():
            filters[f"metadata.{key}"] = value
        return self._gateway.request("GET", "/logs", query=filters)


def _merge_headers(base: Mapping[str, Any], extra: Mapping[str, Any]) -> Dict[str, Any]:
    """Header names compare case-insensitively; the later mapping wins."""
    merged = dict(base)
    for name, value in extra.items():
        for existing in [key for key in merged if key.lower() == name.lower()]:
            del merged[existing]
        merged[name] = value
    return merged


def _segment(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse_json(raw: bytes, fallback: Any = None) -> Any:
    if not raw:
        return fallback
    try:
        return json.loads(raw)
    except ValueError:
        return fallback if fallback is not None else raw.decode("utf-8", "replace")


def _import_openai() -> Any:
    try:
        import openai  # type: ignore[import-not-found]
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise GatewayClientError("The openai package is not installed: pip install openai") from error
    return openai


def _openai_omit() -> Any:
    """``openai.Omit()``: in ``default_headers`` it removes a header the client would send."""
    try:
        import openai  # type: ignore[import-not-found]
    except ImportError:
        return None
    omit = getattr(openai, "Omit", None)
    return omit() if omit is not None else None
