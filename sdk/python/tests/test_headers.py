"""Parameter → header mapping, table-driven from test/sdk/header-mapping.json, the fixture the
TypeScript SDK's tests read too (test/sdk/js-sdk.test.ts): both SDKs map identically."""

from __future__ import annotations

import json
import unittest
from pathlib import Path

from aigateway import PARAMETERS, GatewayClientError, create_headers, encode_json

FIXTURE_PATH = Path(__file__).resolve().parents[3] / "test" / "sdk" / "header-mapping.json"
FIXTURE = json.loads(FIXTURE_PATH.read_text(encoding="utf-8"))


class ParameterTableTest(unittest.TestCase):
    def test_the_parameter_table_is_the_fixtures_in_order(self) -> None:
        ours = [{"js": p.js, "python": p.python, "header": p.header} for p in PARAMETERS]
        self.assertEqual(ours, FIXTURE["parameters"])

    def test_python_names_are_the_snake_case_of_the_javascript_names(self) -> None:
        for parameter in PARAMETERS:
            with self.subTest(parameter.python):
                snake = "".join("_" + c.lower() if c.isupper() else c for c in parameter.js)
                self.assertEqual(parameter.python, snake)

    def test_every_parameter_has_a_mapping_case(self) -> None:
        covered = {case["python"] for case in FIXTURE["cases"]}
        self.assertEqual(covered, {p.python for p in PARAMETERS})


class CreateHeadersTest(unittest.TestCase):
    def test_each_parameter_maps_to_its_header(self) -> None:
        for case in FIXTURE["cases"]:
            with self.subTest(case["name"]):
                self.assertEqual(create_headers(**{case["python"]: case["value"]}), {case["header"]: case["expected"]})

    def test_all_parameters_at_once(self) -> None:
        params, expected = {}, {}
        real_names = {pair["python"] for pair in FIXTURE["same_setting"]}
        for case in FIXTURE["cases"]:
            if case["python"] not in params and case["python"] not in real_names:
                params[case["python"]] = case["value"]
                expected[case["header"]] = case["expected"]
        headers = create_headers(**params)
        self.assertEqual(headers, expected)
        self.assertEqual(len(headers), len(PARAMETERS) - len(real_names))

    def test_a_real_vendor_name_and_the_spec_name_for_one_setting_are_not_both_accepted(self) -> None:
        for pair in FIXTURE["same_setting"]:
            with self.subTest(pair["python"]):
                with self.assertRaises(GatewayClientError) as caught:
                    create_headers(**{pair["python"]: "a", pair["spec_python"]: "b"})
                self.assertEqual(
                    str(caught.exception), f'{pair["python"]} and {pair["spec_python"]} name the same setting: pass one of them.'
                )

    def test_none_and_empty_values_leave_the_header_out(self) -> None:
        for case in FIXTURE["omitted"]:
            with self.subTest(case["name"]):
                self.assertEqual(create_headers(**{case["python"]: case["value"]}), {})

    def test_invalid_values_are_rejected_naming_the_parameter(self) -> None:
        for case in FIXTURE["invalid"]:
            with self.subTest(case["name"]):
                with self.assertRaises(GatewayClientError) as caught:
                    create_headers(**{case["python"]: case["value"]})
                self.assertIn(case["python"], str(caught.exception))

    def test_unknown_parameters_are_rejected_with_a_suggestion(self) -> None:
        for case in FIXTURE["unknown"]:
            with self.subTest(case["name"]):
                with self.assertRaises(GatewayClientError) as caught:
                    create_headers(**{case["python"]: "x"})
                self.assertIn(f'"{case["python"]}"', str(caught.exception))
                self.assertIn(f'"{case["suggestion_python"]}"', str(caught.exception))

    def test_a_tuple_of_forwarded_header_names_is_a_list(self) -> None:
        self.assertEqual(create_headers(forward_headers=("X-A", "x-b")), {"x-gateway-forward-headers": '["X-A","x-b"]'})

    def test_errors_are_value_errors(self) -> None:
        self.assertTrue(issubclass(GatewayClientError, ValueError))


class EncodeJsonTest(unittest.TestCase):
    def test_json_values_decode_back_to_the_input(self) -> None:
        for case in FIXTURE["cases"]:
            if isinstance(case["value"], (dict, list)):
                with self.subTest(case["name"]):
                    self.assertEqual(json.loads(case["expected"]), case["value"])
                    self.assertEqual(json.loads(encode_json(case["value"])), case["value"])

    def test_numbers_are_written_as_javascript_writes_them(self) -> None:
        cases = {
            0.1: "0.1",
            -0.0: "0",
            100.0: "100",
            1e16: "10000000000000000",
            1.5e300: "1.5e+300",
            2.5e-7: "2.5e-7",
            123e-20: "1.23e-18",
            0.00001234: "0.00001234",
            float("nan"): "null",
            float("inf"): "null",
        }
        for value, expected in cases.items():
            with self.subTest(value):
                self.assertEqual(encode_json(value), expected)

    def test_non_string_keys_are_rejected(self) -> None:
        with self.assertRaises(GatewayClientError):
            encode_json({1: "a"})


if __name__ == "__main__":
    unittest.main()
