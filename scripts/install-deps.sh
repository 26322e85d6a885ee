#!/usr/bin/env bash
# Installs what tcpxogen's tests need on a Debian machine: the OCI registry
# (Debian's docker-registry, distribution 2.8) the end-to-end tests start on
# 127.0.0.1. Idempotent; needs root (or sudo) only when something is missing.
set -euo pipefail

need=()
command -v docker-registry >/dev/null 2>&1 || need+=(docker-registry)
command -v go >/dev/null 2>&1 || { echo "install-deps: Go is missing: install Go 1.26 or newer first" >&2; exit 1; }

if ((${#need[@]} == 0)); then
  exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
echo "install-deps: installing ${need[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The Debian package enables a system service on port 5000 with its own
# config; tests start their own instance on a random loopback port instead.
if command -v systemctl >/dev/null 2>&1; then
  $sudo systemctl disable --now docker-registry >/dev/null 2>&1 || true
fi
