#!/usr/bin/env bash
# k6 with xk6-cable v0.8.0, the peer our users would pick instead, for the benchmarks (issue 28).
# Not part of CI: `npm run bench` compares against it where this script could build it.
# The Go module proxy serves k6 and every dependency but not xk6-cable, which comes from
# ../shared/vendor (XK6_CABLE_TARBALL). About 1–3 minutes on 2 cores; the binary is cached.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${CABLE_CACHE:-$HOME/.cache/cable}"
K6_BIN="${K6_BIN:-$CACHE/k6/k6}"
TARBALL="${XK6_CABLE_TARBALL:-$(pwd)/../shared/vendor/xk6-cable-0.8.0.tar.gz}"

if [ -x "$K6_BIN" ]; then
  echo "k6: cached at $K6_BIN ($("$K6_BIN" version | head -1))"
  exit 0
fi
command -v go >/dev/null || { echo "k6: no Go toolchain here; not built" >&2; exit 1; }
[ -f "$TARBALL" ] || { echo "k6: $TARBALL not found (set XK6_CABLE_TARBALL); not built" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar xzf "$TARBALL" -C "$work"
mkdir -p "$work/k6cable"
cat > "$work/k6cable/main.go" <<'GO'
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "github.com/anycable/xk6-cable"
)

func main() {
	k6cmd.Execute()
}
GO
cd "$work/k6cable"
go mod init k6cable >/dev/null 2>&1
# xk6-cable needs the sobek-based k6 commit the module graph raises v0.51.0 to; `k6 version` still says v0.51.0.
go mod edit -require=go.k6.io/k6@v0.51.0 -require=github.com/anycable/xk6-cable@v0.8.0 -replace=github.com/anycable/xk6-cable=../xk6-cable-0.8.0
GOFLAGS=-mod=mod go mod tidy
mkdir -p "$(dirname "$K6_BIN")"
GOTOOLCHAIN=local go build -o "$K6_BIN" .
echo "k6: built $K6_BIN ($("$K6_BIN" version | head -1))"
