#!/usr/bin/env bash
# Installs the real servers the integration tests start on loopback: Rails Action Cable (Debian's
# ruby-actioncable + puma), Sockudo (crates.io, built once and cached outside the repo) and moto.
# Idempotent: a machine that has them already spends a few seconds here.
set -euo pipefail

CACHE="${CABLE_CACHE:-$HOME/.cache/cable}"
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

SOCKUDO_BIN="$CACHE/sockudo/bin/sockudo"
if [ ! -x "$SOCKUDO_BIN" ]; then
  command -v protoc >/dev/null || apt_install protobuf-compiler
  echo "setup: building sockudo from crates.io into $CACHE/sockudo (about 7 minutes, once)"
  cargo install sockudo --locked --root "$CACHE/sockudo" >"$CACHE/sockudo-build.log" 2>&1 \
    || { tail -n 40 "$CACHE/sockudo-build.log"; exit 1; }
fi

if ! command -v moto_server >/dev/null; then
  echo "setup: installing moto's server mode from PyPI"
  python3 -m pip install -q "moto[server]"
  # Under pyenv a new console script needs its shim before it is on PATH.
  if command -v pyenv >/dev/null; then pyenv rehash; fi
fi
