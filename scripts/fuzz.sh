#!/usr/bin/env bash
# Run the libFuzzer targets for N seconds each (default 20) from the committed corpora,
# with ASan + UBSan: the header decoder, and the engine fed one hostile message (over
# the mock provider). New inputs go to scratch folders, not the repository.
# Skipped, with a message, when clang cannot build libFuzzer targets.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
if ! command -v clang >/dev/null; then
	echo "== fuzz: skipped (no clang)"
	exit 0
fi
mkdir -p build-fuzz
flags=(-std=c11 -D_POSIX_C_SOURCE=200809L -O1 -g -fsanitize=fuzzer,address,undefined
	-fno-sanitize-recover=all -Wno-gnu-variable-sized-type-not-at-end -Iinclude)
clang "${flags[@]}" lib/codec_*.c lib/errors.c fuzz/fuzz_decode.c -o build-fuzz/fuzz_decode
clang "${flags[@]}" -D_GNU_SOURCE -DRPCRDMA_BUILDING -Itests -Iprov lib/*.c prov/*.c \
	fuzz/fuzz_engine.c $(pkg-config --cflags --libs libfabric) -lpthread -lz \
	-o build-fuzz/fuzz_engine
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for t in decode engine; do
	echo "== fuzz: $t for ${secs}s"
	mkdir -p "$scratch/$t"
	rc=0
	build-fuzz/fuzz_$t -max_total_time="$secs" -print_final_stats=1 \
		-artifact_prefix="$scratch/" "$scratch/$t" fuzz/corpus/$t >"$scratch/log" 2>&1 || rc=$?
	grep -E '^(stat::number_of_executed_units|Done)' "$scratch/log" || true
	if [ "$rc" -ne 0 ]; then
		tail -40 "$scratch/log"
		for a in "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-*; do
			[ -e "$a" ] && echo "input (base64): $(base64 -w0 "$a")"
		done
		exit "$rc"
	fi
done
