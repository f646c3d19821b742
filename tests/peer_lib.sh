# Sourced by the two-process tests: start a peer server that prints "listening PORT",
# wait for it, and set $spid and $port. Exits 77 (skip) when the provider is not usable
# here, 1 when the server fails otherwise. Usage: start_server LOGFILE CMD...
start_server() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		grep -q '^listening' "$log" 2>/dev/null && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	port=$(sed -n 's/^listening //p' "$log")
	if [ -z "$port" ]; then
		cat "$log"
		grep -q 'no usable\|not usable' "$log" && { echo "SKIPPED: provider not usable"; exit 77; }
		exit 1
	fi
}
