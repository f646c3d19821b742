#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Every source, script and build file carries an SPDX license tag in its first lines
# (LICENSE: BSD-2-Clause). Usage: test_spdx.sh SOURCE_DIR
set -u
cd "$1" || exit 1
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "not a git checkout: nothing to check"
	exit 77
fi
missing=$(git ls-files -co --exclude-standard -- '*.c' '*.h' '*.x' '*.sh' '*.in' '*.txt' \
	'.ci/run' | while read -r f; do
	[ -f "$f" ] && ! head -3 "$f" | grep -q 'SPDX-License-Identifier:' && echo "$f"
done)
if [ -n "$missing" ]; then
	echo "FAIL: files without an SPDX-License-Identifier line:"
	echo "$missing"
	exit 1
fi
echo "every source file carries an SPDX tag"
