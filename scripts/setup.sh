#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Install what librpcrdma needs to build and test on Debian 12 (run as root).
# Idempotent; quiet unless something fails. With package names as arguments, installs
# just those (scripts/cross_s390x.sh).
set -euo pipefail
pkgs=(build-essential cmake pkg-config libjson-c-dev libfabric-dev libfabric-bin libtirpc-dev rpcsvc-proto zlib1g-dev librdmacm-dev libibverbs-dev iproute2 rpcbind libkrb5-dev krb5-kdc krb5-admin-server krb5-user valgrind clang scdoc man-db python3)
[ $# -gt 0 ] && pkgs=("$@")
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
[ $# -gt 0 ] && exit 0

# Wireshark's tshark reads the captures (docs/CAPTURE.md) and checks them in the tests.
# Not needed to build: when it cannot be installed, those tests say so and are skipped.
if ! command -v tshark >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	echo "wireshark-common wireshark-common/install-setuid boolean false" |
		debconf-set-selections 2>/dev/null || true
	apt-get install -y -qq --no-install-recommends tshark >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends tshark >/dev/null 2>&1; } ||
		echo "setup: tshark could not be installed; the capture tests will be skipped" >&2
fi
