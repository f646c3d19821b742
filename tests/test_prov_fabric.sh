#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Two processes over a real libfabric provider: prov_peer server and client, data
# verified byte for byte on both sides. Usage: test_prov_fabric.sh PEER_BIN PROV [netns]
# With "netns" (root only): server and client in two network namespaces joined by a
# veth pair, made and removed here.
set -u
PEER=$1
PROV=$2
MODE=${3:-}
out=$(mktemp -d)
# names of our own, so that concurrent runs cannot remove each other's namespaces
nsa=rpcrdma_a_$$
nsb=rpcrdma_b_$$
va=rra$$
vb=rrb$$
cleanup() {
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
	if [ "$MODE" = netns ]; then
		ip netns del "$nsa" 2>/dev/null
		ip netns del "$nsb" 2>/dev/null
	fi
	rm -rf "$out"
}
trap cleanup EXIT

srv=()
cli=()
. "$(dirname "$0")/peer_lib.sh"
host=$H
if [ "$MODE" = netns ]; then
	if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
		echo "SKIPPED: the two-namespace test needs root and iproute2"
		exit 77
	fi
	ip netns add "$nsa" && ip netns add "$nsb" &&
	ip link add "$va" type veth peer name "$vb" &&
	ip link set "$va" netns "$nsa" && ip link set "$vb" netns "$nsb" &&
	ip -n "$nsa" addr add 10.231.0.1/30 dev "$va" &&
	ip -n "$nsb" addr add 10.231.0.2/30 dev "$vb" &&
	ip -n "$nsa" link set "$va" up && ip -n "$nsb" link set "$vb" up &&
	ip -n "$nsa" link set lo up && ip -n "$nsb" link set lo up || {
		echo "SKIPPED: cannot create network namespaces here"
		exit 77
	}
	srv=(ip netns exec "$nsa")
	cli=(ip netns exec "$nsb")
	host=10.231.0.1
fi

start_server "$out/server" "${srv[@]}" "$PEER" server "$PROV" 0
timeout 120 "${cli[@]}" "$PEER" client "$PROV" "$host" "$port"
finish_peers "$out/server" $?
