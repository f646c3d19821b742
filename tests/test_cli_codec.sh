#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# `rpcrdma decode` / `encode` from the outside: exact JSON for hand-checked messages,
# decode|encode identity over every valid corpus message, exit statuses.
set -u
BIN=$1
SRC=$2
CORPUS=$SRC/fuzz/corpus/decode
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
hx() { od -An -tx1 -v "$1" | tr -d ' \n'; }
expect_eq() { # name got want
	if [ "$2" == "$3" ]; then ok; else bad "$1"; echo "  got:  $2" >&2; echo "  want: $3" >&2; fi
}

# Exact JSON, written by hand from the vectors' comments (not from the tool's output).
expect_eq "json msg_read_call" "$($BIN decode --json "$(hx $CORPUS/msg_read_call)")" \
'{"xid":"0x00001001","vers":1,"credits":16,"proc":"RDMA_MSG","reads":[],"writes":[[{"handle":"0x11223344","length":4096,"offset":"0x00007f0012340000"}]],"reply":null,"error":null,"header_len":52,"rpc":{"xid":"0x00001001","direction":"call","prog":100003,"vers":3,"proc":6}}'
expect_eq "json msg_write_call" "$($BIN decode --json "$(hx $CORPUS/msg_write_call)")" \
'{"xid":"0x00001002","vers":1,"credits":16,"proc":"RDMA_MSG","reads":[{"position":72,"handle":"0x55667788","length":8192,"offset":"0x0000000000001000"}],"writes":[],"reply":[{"handle":"0x99aabbcc","length":1024,"offset":"0x0000000000002000"}],"error":null,"header_len":72,"rpc":{"xid":"0x00001002","direction":"call","prog":100003,"vers":3,"proc":7}}'
expect_eq "json msgp_call" "$($BIN decode --json "$(hx $CORPUS/msgp_call)")" \
'{"xid":"0x00004004","vers":1,"credits":16,"proc":"RDMA_MSGP","align":4096,"thresh":1024,"reads":[],"writes":[],"reply":null,"error":null,"header_len":36,"rpc":{"xid":"0x00004004","direction":"call","prog":100003,"vers":3,"proc":7}}'
expect_eq "json msg_read_reply" "$($BIN decode --json "$(hx $CORPUS/msg_read_reply)")" \
'{"xid":"0x00001001","vers":1,"credits":32,"proc":"RDMA_MSG","reads":[],"writes":[[{"handle":"0x11223344","length":1000,"offset":"0x00007f0012340000"}],[]],"reply":null,"error":null,"header_len":60,"rpc":{"xid":"0x00001001","direction":"reply"}}'
expect_eq "json error_vers" "$($BIN decode --json "$(hx $CORPUS/error_vers)")" \
'{"xid":"0x00005005","vers":1,"credits":0,"proc":"RDMA_ERROR","reads":[],"writes":[],"reply":null,"error":{"code":"ERR_VERS","vers_low":1,"vers_high":1},"header_len":28,"rpc":null}'
expect_eq "json error_chunk" "$($BIN decode --json "$(hx $CORPUS/error_chunk)")" \
'{"xid":"0x00005006","vers":1,"credits":0,"proc":"RDMA_ERROR","reads":[],"writes":[],"reply":null,"error":{"code":"ERR_CHUNK"},"header_len":20,"rpc":null}'
expect_eq "json done" "$($BIN decode --json "$(hx $CORPUS/done_msg)")" \
'{"xid":"0x00001005","vers":1,"credits":1,"proc":"RDMA_DONE","reads":[],"writes":[],"reply":null,"error":null,"header_len":16,"rpc":null}'

# Invalid input: exit 2 and the invalid object.
out=$($BIN decode --json "$(hx $CORPUS/bad_xid)"); rc=$?
expect_eq "invalid xid json" "$out" '{"invalid":"xid_mismatch","answer":"ERR_CHUNK","offset":28}'
expect_eq "invalid xid exit" "$rc" 2
out=$($BIN decode --json "$(hx $CORPUS/bad_vers)"); rc=$?
expect_eq "invalid vers json" "$out" '{"invalid":"version","answer":"ERR_VERS","offset":4}'
expect_eq "invalid vers exit" "$rc" 2
out=$($BIN decode "$(hx $CORPUS/bad_pos_order)"); rc=$?
expect_eq "invalid text" "$out" "invalid: read chunks out of order or overlapping (position_order) at offset 44; answer ERR_CHUNK"
expect_eq "invalid text exit" "$rc" 2

# Over the whole corpus, batched (one process per step): every valid message survives
# decode --body | encode as the same bytes and encode | decode as the same JSON; every
# invalid one gets the invalid object.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "$CORPUS"/*; do
	h=$(hx "$f")
	echo "${h:-00}"
done >"$tmp/all.hex"
$BIN decode --json <"$tmp/all.hex" >"$tmp/all.json"
expect_eq "corpus: one answer per message" "$(wc -l <"$tmp/all.json")" "$(wc -l <"$tmp/all.hex")"
paste -d'\t' "$tmp/all.hex" "$tmp/all.json" >"$tmp/pairs"
grep -v $'\t{"invalid":' "$tmp/pairs" | cut -f1 >"$tmp/valid.hex"
n_invalid=$(grep -c $'\t{"invalid":"[a-z_]*","answer":"ERR_\(CHUNK\|VERS\)","offset":[0-9]*}$' "$tmp/pairs")
expect_eq "corpus: invalid answers well formed" \
	"$((n_invalid + $(wc -l <"$tmp/valid.hex")))" "$(wc -l <"$tmp/all.hex")"
$BIN decode --json --body <"$tmp/valid.hex" | $BIN encode --json >"$tmp/back.hex"
if cmp -s "$tmp/back.hex" "$tmp/valid.hex"; then ok; else bad "corpus: decode|encode identity"; diff "$tmp/back.hex" "$tmp/valid.hex" | head -5 >&2; fi
$BIN decode --json <"$tmp/valid.hex" >"$tmp/j1"
$BIN decode --json <"$tmp/back.hex" >"$tmp/j2"
if cmp -s "$tmp/j1" "$tmp/j2"; then ok; else bad "corpus: encode|decode identity"; fi
expect_eq "corpus: valid messages present" "$(( $(wc -l <"$tmp/valid.hex") > 10 ))" 1

# Several messages from standard input, comments and blank lines skipped.
out=$($BIN decode < "$SRC/samples/messages.hex"); rc=$?
expect_eq "sample file exit" "$rc" 0
expect_eq "sample file messages" "$(grep -c '^RDMA_' <<<"$out")" \
	"$(grep -vc -e '^#' -e '^$' "$SRC/samples/messages.hex")"

# encode from hand-written JSON with a numeric proc and hex strings.
out=$(echo '{"xid":"0x2a","credits":32,"proc":3}' | $BIN encode --json)
expect_eq "encode done" "$out" "0000002a000000010000002000000003"
out=$(echo '{"xid":7,"proc":"RDMA_ERROR","error":{"code":"ERR_CHUNK"}}' | $BIN encode --json)
expect_eq "encode err_chunk" "$out" "00000007000000010000000000000004""00000002"

# Usage errors and bad input: exit 2; help: exit 0.
$BIN decode zz >/dev/null 2>&1; expect_eq "bad hex" $? 2
$BIN decode abc >/dev/null 2>&1; expect_eq "odd hex" $? 2
$BIN decode --bogus >/dev/null 2>&1; expect_eq "bad option" $? 2
echo '{"xid":' | $BIN encode --json >/dev/null 2>&1; expect_eq "bad json" $? 2
echo '{"credits":1,"proc":0}' | $BIN encode --json >/dev/null 2>&1; expect_eq "missing xid" $? 2
echo '{"xid":1,"proc":0,"writes":[[{"handle":1,"length":8,"offset":-4}]]}' | $BIN encode --json >/dev/null 2>&1
expect_eq "negative offset" $? 2
echo '{"xid":1,"proc":0,"writes":[[{"handle":1,"length":8,"offset":"-4"}]]}' | $BIN encode --json >/dev/null 2>&1
expect_eq "negative offset string" $? 2
$BIN encode >/dev/null 2>&1; expect_eq "encode without --json" $? 2
$BIN nosuch >/dev/null 2>&1; expect_eq "unknown command" $? 2
$BIN decode --help >/dev/null; expect_eq "decode help" $? 0
$BIN --help >/dev/null; expect_eq "help" $? 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
