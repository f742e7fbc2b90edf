#!/usr/bin/env bash
# Installs the real servers the integration tests start on loopback: Rails Action Cable (Debian's
# ruby-actioncable + puma), Sockudo (crates.io, built once and cached outside the repo), anycable-go
# (built once from ../shared/vendor's source tarball, cached likewise), Soketi (npm, cached), Laravel
# Reverb (../shared/vendor's offline app, unpacked into the cache; PHP from Debian) and moto.
# Idempotent: a machine that has them already spends a few seconds here.
set -euo pipefail

CACHE="${CABLE_CACHE:-$HOME/.cache/cable}"
# A fresh home has no ~/.cache yet: the build logs below are written into it.
mkdir -p "$CACHE"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

if ! command -v puma >/dev/null || ! ruby -e 'require "action_cable"' 2>/dev/null; then
  echo "setup: installing Rails Action Cable and puma from Debian"
  apt_install ruby-actioncable puma
fi

# The Rails app with a login (cable-test-servers/rails-devise): Rails 6.1 and Devise 4.8 over sqlite.
if ! ruby -e 'require "rails"; require "devise"; require "sqlite3"' 2>/dev/null; then
  echo "setup: installing Rails 6.1, Devise 4.8 and sqlite3 from Debian (the Devise sign-in app)"
  apt_install ruby-rails ruby-devise ruby-sqlite3
fi

if ! command -v openssl >/dev/null; then
  echo "setup: installing openssl (the TLS tests make a throwaway CA with it)"
  apt_install openssl
fi

if [ ! -x /usr/bin/time ]; then
  echo "setup: installing GNU time (the benchmark's quick mode times whole processes with it)"
  apt_install time
fi

if ! command -v chromium >/dev/null; then
  echo "setup: installing Debian's chromium (cable-report renders report.md's charts in it)"
  apt_install chromium
fi

SOCKUDO_BIN="$CACHE/sockudo/bin/sockudo"
if [ ! -x "$SOCKUDO_BIN" ]; then
  command -v protoc >/dev/null || apt_install protobuf-compiler
  echo "setup: building sockudo from crates.io into $CACHE/sockudo (about 7 minutes, once)"
  cargo install sockudo --locked --root "$CACHE/sockudo" >"$CACHE/sockudo-build.log" 2>&1 \
    || { tail -n 40 "$CACHE/sockudo-build.log"; exit 1; }
fi

# anycable-go from the vendored source tarball (no registry serves it as a module; its dependencies
# come from the Go module proxy). About 2 minutes on 2 cores, once.
ANYCABLE_BIN="$CACHE/anycable/bin/anycable-go"
if [ ! -x "$ANYCABLE_BIN" ]; then
  REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  # The project's shared folder sits beside the checkout; a clone elsewhere (a CI workspace) finds
  # it at its usual place on these machines.
  ANYCABLE_TGZ="${ANYCABLE_TARBALL:-$REPO_ROOT/../shared/vendor/anycable-1.6.16.tar.gz}"
  [ -f "$ANYCABLE_TGZ" ] || [ -n "${ANYCABLE_TARBALL:-}" ] || ANYCABLE_TGZ=/work/shared/vendor/anycable-1.6.16.tar.gz
  if [ ! -f "$ANYCABLE_TGZ" ]; then
    echo "setup: cannot build anycable-go: no source tarball at $ANYCABLE_TGZ" >&2
    echo "       put anycable-1.6.16.tar.gz (the v1.6.16 tag's source, from GitHub) there or set ANYCABLE_TARBALL" >&2
    exit 1
  fi
  command -v go >/dev/null || { echo "setup: building anycable-go needs Go 1.26 or newer on PATH (GOTOOLCHAIN=local: no toolchain download)" >&2; exit 1; }
  echo "setup: building anycable-go 1.6.16 from $ANYCABLE_TGZ into $CACHE/anycable (about 2 minutes, once)"
  rm -rf "$CACHE/anycable-src" && mkdir -p "$CACHE/anycable-src" "$CACHE/anycable/bin"
  tar -xzf "$ANYCABLE_TGZ" -C "$CACHE/anycable-src" --strip-components=1
  (cd "$CACHE/anycable-src" && GOTOOLCHAIN=local go build -o "$ANYCABLE_BIN" ./cmd/anycable-go) >"$CACHE/anycable-build.log" 2>&1 \
    || { tail -n 40 "$CACHE/anycable-build.log"; exit 1; }
fi

# The project's shared folder sits beside the checkout; a clone elsewhere (a CI workspace) finds it
# at its usual place on these machines.
vendor_file() {
  local name="$1" repo_root
  repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [ -f "$repo_root/../shared/vendor/$name" ]; then echo "$repo_root/../shared/vendor/$name"; else echo "/work/shared/vendor/$name"; fi
}

# Soketi 1.6.1 from npm, in a folder of its own outside the workspaces. Its package.json takes
# uWebSockets.js from GitHub; npm serves a republished build of the same v20 line, whose binaries
# are for Node 20: the tests run Soketi with the system Node (SOKETI_NODE, default /usr/bin/node).
SOKETI_DIR="$CACHE/soketi"
if [ ! -f "$SOKETI_DIR/node_modules/@soketi/soketi/bin/server.js" ]; then
  echo "setup: installing Soketi 1.6.1 from npm into $SOKETI_DIR"
  mkdir -p "$SOKETI_DIR"
  cat >"$SOKETI_DIR/package.json" <<'JSON'
{ "private": true,
  "dependencies": { "@soketi/soketi": "1.6.1" },
  "overrides": { "uWebSockets.js": "npm:@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0" } }
JSON
  (cd "$SOKETI_DIR" && npm install --ignore-scripts --no-audit --no-fund >"$CACHE/soketi-install.log" 2>&1) \
    || { tail -n 40 "$CACHE/soketi-install.log"; exit 1; }
fi
SOKETI_NODE="${SOKETI_NODE:-/usr/bin/node}"
if [ ! -x "$SOKETI_NODE" ] || [ "$("$SOKETI_NODE" -p 'process.versions.node.split(".")[0]')" != 20 ]; then
  echo "setup: installing Node 20 from Debian for Soketi (its uWebSockets.js has no Node 22 build)"
  apt_install nodejs
fi

# Laravel Reverb 1.10.2: a complete offline Laravel 11 app (vendor/ included), run with Debian's PHP 8.2.
REVERB_DIR="$CACHE/reverb/reverb"
# pdo_sqlite: the Laravel app's users table (cable-test-servers/laravel-app).
# PHP's module list read once, then searched: `php -m | grep -q` under pipefail fails at random when
# grep exits before php has written the rest (SIGPIPE): a fresh-home setup ran apt-get for PHP again.
php_modules="$(php -m 2>/dev/null || true)"
if ! command -v php >/dev/null || ! grep -qi mbstring <<<"$php_modules" || ! grep -qi '^dom$' <<<"$php_modules" || ! grep -qi '^pdo_sqlite$' <<<"$php_modules"; then
  echo "setup: installing PHP 8.2 (and sqlite) from Debian for Reverb and the Laravel app"
  apt_install php-cli php-mbstring php-xml php-curl php-sqlite3
fi
if [ ! -f "$REVERB_DIR/start.sh" ]; then
  REVERB_TGZ="${REVERB_TARBALL:-$(vendor_file reverb-1.10.2-app.tar.gz)}"
  [ -f "$REVERB_TGZ" ] || { echo "setup: no Reverb app at $REVERB_TGZ (set REVERB_TARBALL)" >&2; exit 1; }
  echo "setup: unpacking Laravel Reverb 1.10.2 into $CACHE/reverb"
  mkdir -p "$CACHE/reverb" && tar -xzf "$REVERB_TGZ" -C "$CACHE/reverb"
fi

# The GitHub Action's tests: actionlint (a Go module, built once into the cache) lints the workflows
# and the action's use; shellcheck (Debian) lints their scripts, through actionlint and directly.
ACTIONLINT_VERSION=v1.7.7
ACTIONLINT_BIN="$CACHE/actionlint/$ACTIONLINT_VERSION/actionlint"
if [ ! -x "$ACTIONLINT_BIN" ]; then
  echo "setup: building actionlint $ACTIONLINT_VERSION from the Go module proxy into $CACHE/actionlint"
  GOBIN="$(dirname "$ACTIONLINT_BIN")" go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
fi
command -v shellcheck >/dev/null || apt_install shellcheck

if ! command -v moto_server >/dev/null; then
  echo "setup: installing moto's server mode from PyPI"
  python3 -m pip install -q "moto[server]"
  # Under pyenv a new console script needs its shim before it is on PATH.
  if command -v pyenv >/dev/null; then pyenv rehash; fi
fi

# The AWS CLI: the READMEs' first-run commands are run as written against moto (readme-commands.test.ts).
if ! command -v aws >/dev/null; then
  echo "setup: installing the AWS CLI from PyPI"
  python3 -m pip install -q awscli
  if command -v pyenv >/dev/null; then pyenv rehash; fi
fi
