#!/bin/bash
# Part of make test: make demo for a few seconds, then make demo-stop, on
# the test broker and on Apache Kafka (SSP_DEMO_KAFKA=apache).  The demo
# must show its four views running and filled, and demo-stop must leave
# nothing of it running.  Run by run_tests.sh (as the unprivileged
# user, after the other tests); exits non-zero on failure.
set -uo pipefail
for kafka in mock apache; do
out=$SSP_WORK/demo-$kafka.out
fail() { echo "make demo check ($kafka): $*" >&2; tail -n 40 "$out" >&2; exit 1; }

SSP_DEMO_KAFKA=$kafka SSP_DEMO_DIR=$SSP_WORK/demo-$kafka SSP_DEMO_SECONDS=${SSP_DEMO_SECONDS:-8} SSP_DEMO_BACKLOG=20000 SSP_DEMO_PORT=54339 \
    bash "$SSP_SRC/test/demo.sh" >"$out" 2>&1 || fail "make demo failed"
demo=$(cat /tmp/ssp-demo.current 2>/dev/null) || fail "no demo recorded in /tmp/ssp-demo.current"

# the last frame: each view running, every table with rows
last=$(awk '/ssp demo: orders, payments and customers/ { frame = "" } { frame = frame $0 "\n" } END { printf "%s", frame }' "$out")
for v in customer_directory payment_delay revenue_per_minute spend_per_customer; do
    grep -Eq "^ $v +\| running " <<<"$last" || fail "view $v is not running in the last frame"
done
for section in 'revenue per region and minute' 'order to payment, by region' 'top customers'; do
    rows=$(awk -v s="$section" 'index($0, s) == 1 { on = 1; next } on && /^-+\+/ { data = 1; next }
                                data && /^ / { n++ } data && !/^ / { exit } END { print n + 0 }' <<<"$last")
    [ "$rows" -gt 0 ] || fail "the table \"$section\" is empty"
done
grep -q "make demo-stop" "$out" || fail "the demo did not say how to stop it"

bash "$SSP_SRC/test/demo_stop.sh" >/dev/null || fail "make demo-stop failed"
sleep 1
[ ! -e "$demo/pgdata/postmaster.pid" ] || fail "Postgres still runs after make demo-stop"
# (the broker removes its pid file as it exits: read it once, quietly)
if pid=$(cat "$demo/broker.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
    fail "the test broker still runs after make demo-stop"
fi
! pgrep -f "$demo" >/dev/null || fail "processes of the demo still run: $(pgrep -af "$demo")"
[ ! -e /tmp/ssp-demo.current ] || fail "/tmp/ssp-demo.current is still there"
echo "make demo ($kafka): four views running and filled; make demo-stop left nothing running"
done
