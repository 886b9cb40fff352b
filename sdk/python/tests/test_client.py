"""The Gateway helper: construction, headers for the openai client, and the urllib client
for the gateway's own endpoints, against a fake gateway on a local port. The openai
integration runs only when the openai package is importable."""

from __future__ import annotations

import json
import os
import socket
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional
from unittest import mock

from aigateway import (
    DEFAULT_BASE_URL,
    Gateway,
    GatewayAPIError,
    GatewayClientError,
    GatewayConnectionError,
)

try:
    import openai  # type: ignore[import-not-found]
except ImportError:  # the machines have python3 without extra packages
    openai = None

KEY = "gw-python-test-key"


class FakeGateway:
    """Records every request; answers with queued replies, else a default per route."""

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.replies: List[tuple] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                fake.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {name.lower(): value for name, value in self.headers.items()},
                        "body": json.loads(raw) if raw else None,
                    }
                )
                status, body = fake.replies.pop(0) if fake.replies else fake.default_reply(self.command, self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def default_reply(self, method: str, path: str) -> tuple:
        if path.startswith("/v1/chat/completions"):
            return 200, {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        return 200, {"ok": True, "method": method, "path": path}

    def last(self) -> Dict[str, Any]:
        return self.requests[-1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class GatewayConstructionTest(unittest.TestCase):
    def test_a_missing_key_is_a_clear_error_at_construction(self) -> None:
        with mock.patch.dict(os.environ, {}, clear=True):
            with self.assertRaises(GatewayClientError) as caught:
                Gateway()
        self.assertIn("GATEWAY_API_KEY", str(caught.exception))

    def test_an_empty_key_counts_as_missing(self) -> None:
        with mock.patch.dict(os.environ, {"GATEWAY_API_KEY": ""}, clear=True):
            with self.assertRaises(GatewayClientError):
                Gateway(api_key="")

    def test_the_key_and_base_url_come_from_the_environment(self) -> None:
        with mock.patch.dict(os.environ, {"GATEWAY_API_KEY": "gw-env", "GATEWAY_BASE_URL": "http://gw:8787/v1/"}, clear=True):
            gateway = Gateway()
        self.assertEqual(gateway.api_key, "gw-env")
        self.assertEqual(gateway.base_url, "http://gw:8787/v1")
        self.assertEqual(gateway.headers, {"x-gateway-api-key": "gw-env"})

    def test_the_default_base_url_is_npm_starts(self) -> None:
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(Gateway(api_key=KEY).base_url, DEFAULT_BASE_URL)

    def test_an_explicit_key_wins_over_the_environment(self) -> None:
        with mock.patch.dict(os.environ, {"GATEWAY_API_KEY": "gw-env"}):
            self.assertEqual(Gateway(api_key=KEY).headers["x-gateway-api-key"], KEY)

    def test_a_bad_parameter_fails_at_construction(self) -> None:
        with self.assertRaises(GatewayClientError):
            Gateway(api_key=KEY, tracid="x")
        with self.assertRaises(GatewayClientError):
            Gateway(api_key=KEY, request_timeout="5s")

    def test_headers_and_default_headers(self) -> None:
        gateway = Gateway(
            api_key=KEY,
            provider="@openai-prod",
            trace_id="t-1",
            forward_headers=["X-Tenant-Id"],
            default_headers={"X-Tenant-Id": "acme", "X-GATEWAY-TRACE-ID": "t-override"},
        )
        self.assertEqual(
            gateway.headers,
            {
                "x-gateway-api-key": KEY,
                "x-gateway-provider": "@openai-prod",
                "x-gateway-forward-headers": '["X-Tenant-Id"]',
                "X-Tenant-Id": "acme",
                "X-GATEWAY-TRACE-ID": "t-override",
            },
        )

    def test_with_options_replaces_some_settings_and_keeps_the_rest(self) -> None:
        base = Gateway(api_key=KEY, base_url="http://gw/v1", provider="@p", trace_id="t-1", metadata={"_user": "a"})
        child = base.with_options(trace_id="t-2", metadata=None)
        self.assertEqual(
            child.headers, {"x-gateway-api-key": KEY, "x-gateway-provider": "@p", "x-gateway-trace-id": "t-2"}
        )
        self.assertEqual(child.base_url, "http://gw/v1")
        self.assertEqual(base.headers["x-gateway-trace-id"], "t-1")

    def test_with_options_a_real_vendor_name_replaces_the_spec_name_for_the_same_setting(self) -> None:
        base = Gateway(api_key=KEY, base_url="http://gw/v1", cloud_c_region="us-east-1")
        child = base.with_options(aws_region="eu-west-1")
        self.assertEqual(child.headers, {"x-gateway-api-key": KEY, "x-gateway-aws-region": "eu-west-1"})
        self.assertEqual(base.headers["x-gateway-cloudC-region"], "us-east-1")

    def test_request_headers_for_one_call(self) -> None:
        gateway = Gateway(api_key=KEY)
        self.assertEqual(
            gateway.request_headers(trace_id="t-9", metadata={"_user": "u"}),
            {"x-gateway-trace-id": "t-9", "x-gateway-metadata": '{"_user":"u"}'},
        )

    def test_openai_kwargs_never_hand_the_gateway_key_to_the_openai_client(self) -> None:
        kwargs = Gateway(api_key=KEY, base_url="http://gw/v1", provider="@p").openai_kwargs()
        self.assertEqual(kwargs["base_url"], "http://gw/v1")
        self.assertNotEqual(kwargs["api_key"], KEY)
        self.assertEqual(kwargs["default_headers"]["x-gateway-api-key"], KEY)
        if openai is None:
            self.assertNotIn("Authorization", kwargs["default_headers"])
        else:
            self.assertIsInstance(kwargs["default_headers"]["Authorization"], openai.Omit)

    def test_openai_kwargs_with_a_provider_token(self) -> None:
        kwargs = Gateway(api_key=KEY, provider="openai", authorization="sk-123").openai_kwargs()
        self.assertEqual(kwargs["api_key"], "sk-123")
        self.assertEqual(kwargs["default_headers"]["Authorization"], "Bearer sk-123")


class GatewayEndpointsTest(unittest.TestCase):
    fake: FakeGateway

    @classmethod
    def setUpClass(cls) -> None:
        cls.fake = FakeGateway()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.fake.close()

    def gateway(self, **params: Any) -> Gateway:
        return Gateway(api_key=KEY, base_url=self.fake.url, **params)

    def test_prompt_render_puts_hyperparameters_at_the_root(self) -> None:
        self.fake.replies.append((200, {"success": True, "data": {"model": "m", "messages": []}}))
        result = self.gateway(trace_id="t-render").prompts.render("support/reply", {"tone": "friendly"}, temperature=0.7)
        self.assertEqual(result, {"success": True, "data": {"model": "m", "messages": []}})
        request = self.fake.last()
        self.assertEqual(request["method"], "POST")
        self.assertEqual(request["path"], "/v1/prompts/support%2Freply/render")
        self.assertEqual(request["body"], {"variables": {"tone": "friendly"}, "temperature": 0.7})
        self.assertEqual(request["headers"]["x-gateway-api-key"], KEY)
        self.assertEqual(request["headers"]["x-gateway-trace-id"], "t-render")
        self.assertEqual(request["headers"]["content-type"], "application/json")

    def test_rate_limit_policies(self) -> None:
        policies = self.gateway().policies.rate_limits
        policies.create(conditions=[{"key": "workspace_id", "value": "default"}], group_by=[{"key": "api_key"}], type="requests", unit="rpm", value=60)
        self.assertEqual(self.fake.last()["method"], "POST")
        self.assertEqual(self.fake.last()["path"], "/v1/policies/rate-limits")
        self.assertEqual(self.fake.last()["body"]["unit"], "rpm")

        policies.list(status="archived", page_size=10, type=None)
        self.assertEqual(self.fake.last()["path"], "/v1/policies/rate-limits?status=archived&page_size=10")
        self.assertIsNone(self.fake.last()["body"])

        policies.archive("p 1")
        self.assertEqual(self.fake.last()["method"], "PATCH")
        self.assertEqual(self.fake.last()["path"], "/v1/policies/rate-limits/p%201")
        self.assertEqual(self.fake.last()["body"], {"status": "archived"})

        policies.retrieve("p-2")
        self.assertEqual((self.fake.last()["method"], self.fake.last()["path"]), ("GET", "/v1/policies/rate-limits/p-2"))

    def test_logs_list_turns_metadata_into_filters(self) -> None:
        self.gateway().logs.list(trace_id="t-1", metadata={"_user": "u-1", "team": "a b"}, limit=5)
        self.assertEqual(self.fake.last()["path"], "/v1/logs?trace_id=t-1&limit=5&metadata._user=u-1&metadata.team=a+b")

    def test_an_error_answer_raises_with_the_openai_shaped_fields(self) -> None:
        error = {"error": {"message": "Missing variables: tone", "type": "invalid_request_error", "param": "variables", "code": "AIGW_ERR_INVALID_BODY"}}
        self.fake.replies.append((400, error))
        with self.assertRaises(GatewayAPIError) as caught:
            self.gateway().prompts.render("p", {})
        self.assertEqual(caught.exception.status, 400)
        self.assertEqual(caught.exception.param, "variables")
        self.assertEqual(caught.exception.code, "AIGW_ERR_INVALID_BODY")
        self.assertIn("Missing variables", str(caught.exception))

    def test_an_unreachable_gateway_raises_a_connection_error(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with self.assertRaises(GatewayConnectionError):
            Gateway(api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1").policies.rate_limits.list()

    @unittest.skipIf(openai is None, "the openai package is not installed")
    def test_the_openai_client_sends_the_gateway_headers(self) -> None:
        gateway = self.gateway(provider="@openai-prod", trace_id="t-openai", metadata={"_user": "u-1"})
        client = gateway.openai_client(max_retries=0)
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        self.assertEqual(completion.choices[0].message.content, "hi")
        headers = self.fake.last()["headers"]
        self.assertEqual(self.fake.last()["path"], "/v1/chat/completions")
        self.assertEqual(headers["x-gateway-api-key"], KEY)
        self.assertEqual(headers["x-gateway-provider"], "@openai-prod")
        self.assertEqual(headers["x-gateway-trace-id"], "t-openai")
        self.assertEqual(headers["x-gateway-metadata"], '{"_user":"u-1"}')
        self.assertNotIn("authorization", headers)

        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers=gateway.request_headers(trace_id="t-once"),
        )
        self.assertEqual(self.fake.last()["headers"]["x-gateway-trace-id"], "t-once")

    @unittest.skipIf(openai is None, "the openai package is not installed")
    def test_the_openai_client_sends_a_provider_token_as_authorization(self) -> None:
        client = self.gateway(provider="openai", authorization="sk-direct").openai_client(max_retries=0)
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        self.assertEqual(self.fake.last()["headers"]["authorization"], "Bearer sk-direct")


if __name__ == "__main__":
    unittest.main()
