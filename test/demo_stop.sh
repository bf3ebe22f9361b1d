#!/bin/bash
# make demo-stop: stop the Postgres and the broker (the test broker, or
# Apache Kafka) that make demo left running.
set -uo pipefail
demo=$(cat /tmp/ssp-demo.current 2>/dev/null) || { echo "no demo is running"; exit 0; }
run() { if [ "$(id -u)" -eq 0 ] && [ "$(stat -c %U "$demo")" != root ]; then runuser -u "$(stat -c %U "$demo")" -- "$@"; else "$@"; fi; }
[ -d "$demo/pgdata" ] && run /usr/lib/postgresql/15/bin/pg_ctl -D "$demo/pgdata" -m fast stop >/dev/null 2>&1
pid=$(cat "$demo/broker.pid" 2>/dev/null) && kill "$pid" 2>/dev/null
[ -d "$demo/kafka" ] && run "$(dirname "$0")/kafka/kafka_ctl" stop "$demo/kafka"
rm -f /tmp/ssp-demo.current
echo "demo stopped"
