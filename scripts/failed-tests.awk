# Prints the whole `go test -v` output of each top-level test that failed,
# so a CI log that shows only the summary lines (`make test-interop`) still
# shows why: the t.Log/t.Fatal lines, which are indented and filtered out.
# Usage: awk -f scripts/failed-tests.awk interop.log
/^=== RUN   [^\/]+$/ {
	cur = $3
	out[cur] = ""
}
cur != "" {
	out[cur] = out[cur] $0 "\n"
}
/^--- FAIL: [^\/ ]+ / {
	name = $3
	if (name in out) {
		printf "---- output of failed test %s ----\n%s", name, out[name]
		delete out[name]
	}
	cur = ""
}
/^--- (PASS|SKIP): [^\/ ]+ / {
	delete out[$3]
	cur = ""
}
# A test still running when the binary died (panic, -timeout): its output
# holds the reason.
END {
	if (cur != "" && (cur in out)) {
		printf "---- output of unfinished test %s ----\n%s", cur, out[cur]
	}
}
