#!/usr/bin/env bash
# CI helper for the cluster suite (test/cluster): builds (bounded) and starts the single-node
# cluster of ../shared/tools/k8s-test-cluster.sh (kubelet, containerd, kube-proxy, bridge
# network, DNS) and installs kubectl + helm. Prints `export …` lines for `eval`: KUBECONFIG
# and AIGW_K8S_CLUSTER_SCRIPT when the node is up, otherwise AIGW_CLUSTER_SKIP_REASON, so the
# suite skips with the reason instead of failing CI. Never exits non-zero for "up".
#   eval "$(test/cluster/ci-node.sh up)"   …   test/cluster/ci-node.sh down   (stops the node and the control plane)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT=${AIGW_K8S_CLUSTER_SCRIPT:-$HERE/../../../shared/tools/k8s-test-cluster.sh}
BUILD_TIMEOUT=${AIGW_K8S_BUILD_TIMEOUT:-1500}

skip() { printf 'export AIGW_CLUSTER_SKIP_REASON=%q\n' "$1"; exit 0; }

case "${1:-up}" in
  up)
    [ -x "$SCRIPT" ] || skip "cluster script not found: $SCRIPT"
    [ "$(id -u)" = 0 ] || skip "the cluster suite needs root (containerd, iptables, podman)"
    timeout "$BUILD_TIMEOUT" "$SCRIPT" build >&2 || skip "the test cluster did not build within ${BUILD_TIMEOUT}s (see the CI log)"
    timeout 900 "$SCRIPT" build-node >&2 || skip "the node did not build within 900s (see the CI log)"
    # A control plane left on loopback by the e2e suites is re-bound to the node IP.
    timeout 300 "$SCRIPT" start-node >&2 || { "$SCRIPT" stop >&2; skip "the node did not start (see the CI log)"; }
    "$HERE/../e2e/tools.sh" >&2 || skip "kubectl/helm could not be installed (test/e2e/tools.sh)"
    "$SCRIPT" kubeconfig
    printf 'export AIGW_K8S_CLUSTER_SCRIPT=%q\n' "$(readlink -f "$SCRIPT")"
    ;;
  down)
    [ -x "$SCRIPT" ] && "$SCRIPT" stop >&2 || true
    ;;
  *)
    echo "usage: $0 up|down" >&2; exit 2
    ;;
esac
