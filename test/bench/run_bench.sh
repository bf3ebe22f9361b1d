#!/bin/bash
# make bench: ssp's benchmarks.  Each workload is a function bench_NAME that
# writes its report, headed by a description of the machine, to
# test/bench/results/NAME.txt and to the terminal; main runs the workloads
# named as arguments, or all of them.  Workloads:
#   json_parsers   Postgres's jsonapi against cJSON (test/bench/json_parsers.c)
# Settings: SSP_BENCH_MESSAGES (default 1000000), SSP_BENCH_RUNS (default 5).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(dirname "$0")/../lib.sh"

BENCH_WORKLOADS=(json_parsers)
BENCH_DIR=test/bench  # main runs in $SSP_SRC
BENCH_RESULTS=$BENCH_DIR/results
PG_CONFIG=${PG_CONFIG:-$PG_BINDIR/pg_config}

# bench_need_packages PKG...: install missing Debian packages as root;
# otherwise fail, saying what to run.
bench_need_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] ||
        ssp_die "missing packages: ${missing[*]}; run as root: apt-get install -y ${missing[*]}"
    ssp_log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# bench_machine: what the numbers were measured on.
bench_machine() {
    local cpu
    cpu=$(sed -n '/^model name/{s/^model name[[:space:]]*:[[:space:]]*//p;q}' /proc/cpuinfo)
    echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "uname:    $(uname -a)"
    echo "nproc:    $(nproc)"
    echo "cpu:      ${cpu:-unknown}"
    echo "compiler: $(cc --version | head -n 1)"
}

# bench_report NAME CMD...: run CMD, its output after bench_machine's, into
# results/NAME.txt and the terminal; a failed run keeps the previous report.
bench_report() {
    local out=$BENCH_RESULTS/$1.txt
    shift
    mkdir -p "$BENCH_RESULTS"
    { bench_machine; echo; "$@"; } 2>&1 | tee "$out.tmp"
    mv "$out.tmp" "$out"
    ssp_log "report: $out"
}

# bench_json_parsers: decoding JSON order messages, Postgres's jsonapi
# (as src/decode.c uses it) against cJSON.
bench_json_parsers() {
    local bin=$BENCH_DIR/json_parsers
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    local -a build
    bench_need_packages libcjson-dev "postgresql-server-dev-$SSP_PG_VERSION" gcc
    build=(cc -O2 -Wall -Wextra -Werror -I"$("$PG_CONFIG" --includedir-server)"
        -o "$bin" "$bin.c" -L"$("$PG_CONFIG" --pkglibdir)" -lpgcommon -lpgport -lcjson)
    ssp_log "json_parsers: building"
    "${build[@]}"
    ssp_log "json_parsers: $n messages, $r rounds"
    bench_report json_parsers bench_json_parsers_run "${build[*]}" "$bin" "$n" "$r"
}

# bench_json_parsers_run BUILD CMD...: the report's body.
bench_json_parsers_run() {
    echo "build:    $1"
    shift
    echo "run:      $*"
    echo
    "$@"
}

# main [WORKLOAD...]: run the workloads named, or all of them.
main() {
    local w
    cd "$SSP_SRC"
    [ $# -gt 0 ] || set -- "${BENCH_WORKLOADS[@]}"
    for w in "$@"; do
        declare -F "bench_$w" >/dev/null ||
            ssp_die "no workload $w (there are: ${BENCH_WORKLOADS[*]})"
        "bench_$w"
    done
}

main "$@"
