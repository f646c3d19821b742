#!/usr/bin/env bash
# Run the decoder's libFuzzer target for N seconds (default 20) from the committed
# corpus, with ASan + UBSan. New inputs go to a scratch folder, not the repository.
# Skipped, with a message, when clang cannot build libFuzzer targets.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
if ! command -v clang >/dev/null; then
	echo "== fuzz: skipped (no clang)"
	exit 0
fi
mkdir -p build-fuzz
clang -std=c11 -D_POSIX_C_SOURCE=200809L -O1 -g -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -Iinclude lib/codec_*.c lib/errors.c fuzz/fuzz_decode.c \
	-o build-fuzz/fuzz_decode
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "== fuzz: decoder for ${secs}s"
build-fuzz/fuzz_decode -max_total_time="$secs" -print_final_stats=1 "$scratch" \
	fuzz/corpus/decode 2>&1 | grep -E '^(stat::number_of_executed_units|Done|==.*ERROR)' || true
test "${PIPESTATUS[0]}" -eq 0
