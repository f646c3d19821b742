#!/usr/bin/env bash
# Install what librpcrdma needs to build and test on Debian 12 (run as root).
# Idempotent; quiet unless something fails.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libjson-c-dev libfabric-dev libfabric-bin libtirpc-dev rpcsvc-proto iproute2 valgrind clang)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: need root to install: ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
