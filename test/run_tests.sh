#!/bin/bash
# make test: every test of ssp, from a fresh Debian 12 machine, as root or
# not.  pg_regress (sql/, expected/) and the isolation tests (specs/),
# with make installcheck against servers started here, on Apache Kafka (SSP_TEST_KAFKA=mock: the test broker; an external
# cluster in SSP_TEST_BROKERS), then the TAP tests (test/tap/t/), which start
# brokers of their own, Apache Kafka and the test broker (to break it), then
# make demo for a few seconds and make demo-stop (test/check_demo.sh), then
# the decoders' fuzz targets (test/fuzz/) on their kept inputs and for
# SSP_FUZZ_SECONDS (default 30) each.
source "$(dirname "$0")/lib.sh"
SSP_PACKAGES="$SSP_PACKAGES clang libclang-rt-14-dev"	# test/fuzz
SSP_PACKAGES="$SSP_PACKAGES $SSP_KAFKA_PACKAGES $SSP_PACKAGE_PACKAGES"
# the Debian package, built and installed for real with apt-get once the
# tests have run as $SSP_USER (as an ordinary user: unpacked, below)
ssp_as_root() {
    ssp_log "the Debian package (test/check_package.sh)"
    SSP_WORK=$(mktemp -d /tmp/ssp-check_package.XXXXXX) bash "$SSP_SRC/test/check_package.sh"
}
# sql/aggregates.sql: approximate aggregates (ssp does not need them to run)
SSP_PACKAGES="$SSP_PACKAGES postgresql-$SSP_PG_VERSION-hll postgresql-$SSP_PG_VERSION-tdigest"
# as root: a small filesystem for test/tap/t/014_disk_full.pl to fill
if [ "$(id -u)" -eq 0 ] && [ -z "${SSP_INNER:-}" ] && [ -z "${SSP_SMALL_DISK:-}" ]; then
    SSP_SMALL_DISK=$(mktemp -d /tmp/ssp-small-disk.XXXXXX)
    if mount -t tmpfs -o size=24m,mode=1777 tmpfs "$SSP_SMALL_DISK"; then
        export SSP_SMALL_DISK
        trap 'umount "$SSP_SMALL_DISK" 2>/dev/null; rmdir "$SSP_SMALL_DISK"; ssp_cleanup' EXIT
    else
        rmdir "$SSP_SMALL_DISK"
        SSP_SMALL_DISK=
    fi
fi
ssp_setup "$@"
ssp_build
export SSP_TEST_KAFKA=${SSP_TEST_KAFKA:-apache}
ssp_log "fetching Apache Kafka (once: cached in ${SSP_CACHE:-~/.cache/ssp} and ~/.m2)"
"$SSP_SRC/test/kafka/kafka_ctl" fetch >/dev/null

# Tests name their topics with SSP_RUN_ID.  A fresh broker (the test
# broker, or an Apache Kafka cluster started for the run) has no topics, so
# "t" keeps the outputs as expected/ has them; on an external Kafka, each
# run needs topics of its own, and its outputs are compared with the run id
# replaced by "t".
if [ -n "${SSP_TEST_BROKERS:-}" ]; then
    export SSP_RUN_ID=${SSP_RUN_ID:-r$(date +%s)}
else
    export SSP_RUN_ID=t
fi
status=0
# what failed, a line or a few each: printed last (by the run as root too,
# after the package), where a CI log that keeps only its tail shows it
SSP_FAILURES=$SSP_WORK/failures.txt
: >"$SSP_FAILURES"
failed() {
    status=1
    printf '%s\n' "$*" >>"$SSP_FAILURES"
}

# pg_regress and the isolation specs run as make installcheck does, each
# against a server of its own with the settings of test/regress.conf (ssp
# in shared_preload_libraries; workers for the views they run at once; see
# doc/testing.md) and a broker of its own
mapfile -t regress_conf <"$SSP_SRC/test/regress.conf"
installcheck() {
    make -s -C "$SSP_SRC" installcheck PG_CONFIG="$SSP_INSTALL$PG_BINDIR/pg_config" TAP_TESTS= "$@"
}

ssp_log "pg_regress, with make installcheck (on ${SSP_TEST_BROKERS:+the Kafka at }${SSP_TEST_BROKERS:-$SSP_TEST_KAFKA})"
ssp_start_broker "$SSP_WORK/broker"
ssp_start_postgres "$SSP_WORK/regress" "${regress_conf[@]}"
# SSP_REGRESS and SSP_TAP narrow the run while developing
regress_tests=${SSP_REGRESS:-$(sed -n 's/^REGRESS = //p' "$SSP_SRC/Makefile")}
if ! installcheck REGRESS="$regress_tests" ISOLATION= \
        REGRESS_OPTS="--inputdir=$SSP_SRC --outputdir=$SSP_WORK/regress --load-extension=ssp"; then
    if [ "$SSP_RUN_ID" != t ]; then
        ssp_log "comparing with the run id $SSP_RUN_ID replaced"
        for t in $regress_tests; do
            sed "s/_$SSP_RUN_ID\b/_t/g" "$SSP_WORK/regress/results/$t.out" |
                diff -u "$SSP_SRC/expected/$t.out" - || failed "pg_regress: $t"
        done
    else
        cat "$SSP_WORK/regress/regression.diffs" || true
        failed "pg_regress failed: $(sed -n 's|^diff .* [^ ]*/results/\([^ /]*\)\.out$|\1|p' "$SSP_WORK/regress/regression.diffs" 2>/dev/null | tr '\n' ' ')"
        head -c 3000 "$SSP_WORK/regress/regression.diffs" >>"$SSP_FAILURES" 2>/dev/null || true
    fi
fi
ssp_cleanup

# isolation tests (specs/): races between a batch in flight and users
ssp_log "isolation tests, with make installcheck"
ssp_start_broker "$SSP_WORK/broker-isolation"
ssp_start_postgres "$SSP_WORK/isolation" "${regress_conf[@]}"
isolation_tests=${SSP_ISOLATION:-$(sed -n 's/^ISOLATION = //p' "$SSP_SRC/Makefile")}
if [ -n "$isolation_tests" ] && ! installcheck REGRESS= ISOLATION="$isolation_tests" \
        ISOLATION_OPTS="--inputdir=$SSP_SRC --outputdir=$SSP_WORK/isolation --load-extension=ssp"; then
    cat "$SSP_WORK/isolation/regression.diffs" || true
    failed "isolation tests:"
    head -c 3000 "$SSP_WORK/isolation/regression.diffs" >>"$SSP_FAILURES" 2>/dev/null || true
fi
ssp_cleanup

ssp_log "TAP tests"
export PG_REGRESS="$SSP_INSTALL$PG_PGXS/src/test/regress/pg_regress"
export TESTDIR="$SSP_WORK/tap"
mkdir -p "$TESTDIR"
# the TAP tests that inject faults add their figures here (SspTest::report)
export SSP_RELIABILITY_REPORT="$SSP_WORK/reliability.tsv"
: >"$SSP_RELIABILITY_REPORT"
set -o pipefail
if ! prove -j "${SSP_TAP_JOBS:-2}" --timer -I "$PG_PGXS/src/test/perl" -I "$SSP_SRC/test/tap" ${SSP_TAP:-"$SSP_SRC"/test/tap/t/*.pl} 2>&1 |
        tee "$SSP_WORK/prove.out"; then
    # the summary prove prints last, and the end of each failed test's log
    failed "TAP tests:"
    sed -n '/^Test Summary Report/,$p' "$SSP_WORK/prove.out" >>"$SSP_FAILURES"
    for t in $(sed -n 's/^\([^ ]*\.pl\) *(Wstat.*/\1/p' "$SSP_WORK/prove.out"); do
        log="$TESTDIR/tmp_check/log/regress_log_$(basename "$t" .pl)"
        printf '%s\n' "-- the end of $log" >>"$SSP_FAILURES"
        # its failed assertions, comments and death, without the harness's chatter
        grep -E '(^|\) )(not ok|# )| line [0-9]+\.$' "$log" 2>/dev/null |
            grep -vE '^# (Running|No postmaster|Postmaster PID|Checking port|Found port|Taking pg_)' |
            tail -n 30 >>"$SSP_FAILURES" || true
    done
fi
set +o pipefail

if [ -s "$SSP_RELIABILITY_REPORT" ]; then
    ssp_log "reliability report"
    awk -F '\t' 'BEGIN {
            fmt = "%-28s %-7s %7s %10s %10s %7s %5s %6s\n"
            printf fmt, "test", "broker", "faults", "produced", "applied", "dead", "lost", "twice"
        }
        { printf fmt, $1, $8, $2, $3, $4, $5, $6, $7
          for (i = 2; i <= 7; i++) t[i] += $i }
        END { printf fmt, "total", "", t[2], t[3], t[4], t[5], t[6], t[7]
              if (t[6] + t[7] > 0) { print "MESSAGES LOST OR COUNTED TWICE"; exit 1 } }' \
        "$SSP_RELIABILITY_REPORT" | tee "$SSP_WORK/reliability.txt" >&2 || failed "reliability: messages lost or counted twice"
fi

ssp_log "make demo, briefly, then make demo-stop"
bash "$SSP_SRC/test/check_demo.sh" || failed "make demo (test/check_demo.sh)"

if [ -z "${SSP_INNER:-}" ]; then
    ssp_log "the Debian package, unpacked (test/check_package.sh)"
    bash "$SSP_SRC/test/check_package.sh" || failed "the Debian package, unpacked (test/check_package.sh)"
fi

ssp_log "fuzzing the decoders"
bash "$SSP_SRC/test/fuzz/run_fuzz.sh" "${SSP_FUZZ_SECONDS:-30}" || failed "fuzzing (test/fuzz/run_fuzz.sh)"

if [ $status -eq 0 ]; then
    ssp_log "all tests passed"
else
    ssp_log "tests FAILED; outputs in $SSP_WORK; what failed:"
    [ -n "${SSP_INNER:-}" ] || cat "$SSP_FAILURES" >&2
fi
exit $status
