#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The engine between two processes over a real libfabric provider: engine_peer server
# and client, every argument and result verified byte for byte.
# Usage: test_engine_e2e.sh PEER_BIN PROV [INLINE [rfc5666]]
set -u
PEER=$1
PROV=$2
INL=${3:-1024}
MODE=${4:-plain}

PEER_LIB_TMP=1
. "$(dirname "$0")/peer_lib.sh"
start_server "$out/server" "$PEER" server "$PROV" 0 "$INL" "$MODE"
timeout 300 "$PEER" client "$PROV" "$H" "$port" "$INL" "$MODE"
finish_peers "$out/server" $?
