#!/usr/bin/env bash
# CI helper for the e2e suite: builds (bounded) and starts the real API server of
# ../shared/tools/k8s-test-cluster.sh and installs kubectl + helm. Prints `export …` lines
# for `eval`: KUBECONFIG when everything is up, otherwise AIGW_E2E_SKIP_REASON, so the e2e
# suites skip with the reason instead of failing CI. Never exits non-zero for "up".
#   eval "$(test/e2e/ci-cluster.sh up)"   …   test/e2e/ci-cluster.sh down
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT=${AIGW_K8S_CLUSTER_SCRIPT:-$HERE/../../../shared/tools/k8s-test-cluster.sh}
BUILD_TIMEOUT=${AIGW_K8S_BUILD_TIMEOUT:-1500}

skip() { printf 'export AIGW_E2E_SKIP_REASON=%q\n' "$1"; exit 0; }

case "${1:-up}" in
  up)
    [ -x "$SCRIPT" ] || skip "cluster script not found: $SCRIPT"
    timeout "$BUILD_TIMEOUT" "$SCRIPT" build >&2 || skip "the test cluster did not build within ${BUILD_TIMEOUT}s (see the CI log)"
    timeout 180 "$SCRIPT" start >&2 || skip "the test cluster did not start (see the CI log)"
    "$HERE/tools.sh" >&2 || skip "kubectl/helm could not be installed (test/e2e/tools.sh)"
    "$SCRIPT" kubeconfig
    ;;
  down)
    [ -x "$SCRIPT" ] && "$SCRIPT" stop >&2 || true
    ;;
  *)
    echo "usage: $0 up|down" >&2; exit 2
    ;;
esac
