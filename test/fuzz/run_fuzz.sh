#!/bin/bash
# test/fuzz/run_fuzz.sh [SECONDS [keep]]: fuzz the decoders and the secret mask
# with libFuzzer.
#
# Builds each target in test/fuzz (fuzz_*.c, with the source file of
# src/ it tests) with clang, -fsanitize=fuzzer,address,undefined; runs every
# input kept in test/fuzz/corpus/TARGET once, as a regression test; then
# fuzzes each target for SECONDS (default 300).  What a run finds that
# covers new code is merged into test/fuzz/corpus/TARGET with "keep", to be
# committed (make fuzz; make test runs this for 30 seconds, keeping nothing).  A
# crash or a difference from the reference fails the run, and leaves the
# input that caused it in the work folder.
source "$(dirname "$0")/../lib.sh"
SSP_PACKAGES="postgresql-server-dev-$SSP_PG_VERSION clang libclang-rt-14-dev"
SSP_COPY_BACK=test/fuzz/corpus
ssp_setup "$@"

seconds=${1:-300}
keep=${2:-}
pg_config=$PG_BINDIR/pg_config
out=$SSP_WORK/fuzz
mkdir -p "$out"

# fuzz_target NAME SOURCE...: build test/fuzz/fuzz_NAME.c with src/SOURCE...
fuzz_target() {
    local name=$1 bin=$out/fuzz_$1 corpus=$SSP_SRC/test/fuzz/corpus/$1 source
    local -a sources=()
    for source in "${@:2}"; do sources+=("$SSP_SRC/src/$source"); done
    local -a args=(-rss_limit_mb=2048 -artifact_prefix="$out/$name-")
    [ -f "$SSP_SRC/test/fuzz/$name.dict" ] && args+=(-dict="$SSP_SRC/test/fuzz/$name.dict")
    ssp_log "fuzz $name: building"
    clang -g -O1 -Wall -Werror -Wno-ignored-attributes -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -I"$("$pg_config" --includedir-server)" -I"$SSP_SRC/src" -I"$SSP_SRC/src/stream" \
        -o "$bin" "$SSP_SRC/test/fuzz/fuzz_$name.c" "${sources[@]}" \
        -L"$("$pg_config" --pkglibdir)" -lpgcommon -lpgport
    ssp_log "fuzz $name: the $(find "$corpus" -type f | wc -l) kept inputs"
    "$bin" "${args[@]}" -runs=0 "$corpus" >"$out/$name-regress.log" 2>&1 ||
        { tail -n 30 "$out/$name-regress.log"; ssp_die "fuzz $name: a kept input fails"; }
    ssp_log "fuzz $name: $seconds s"
    mkdir -p "$out/$name-new"
    "$bin" "${args[@]}" -max_total_time="$seconds" -print_final_stats=1 "$out/$name-new" "$corpus" \
        >"$out/$name.log" 2>&1 ||
        { tail -n 30 "$out/$name.log"; ssp_die "fuzz $name failed; the input is in $out"; }
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+.*DONE" "$out/$name.log" | sed "s/^/   $name: /" >&2 || true
    if [ "$keep" = keep ]; then
        "$bin" "${args[@]}" -merge=1 "$corpus" "$out/$name-new" >"$out/$name-merge.log" 2>&1 ||
            { tail -n 30 "$out/$name-merge.log"; ssp_die "fuzz $name: merge failed"; }
        ssp_log "fuzz $name: $(find "$corpus" -type f | wc -l) inputs kept in test/fuzz/corpus/$name"
    fi
}

fuzz_target jsonscan stream/jsonscan.c
fuzz_target isotime stream/isotime.c
fuzz_target avro stream/avro_read.c
fuzz_target protobuf stream/protobuf_schema.c stream/protobuf_read.c
fuzz_target secret kafka/secret.c
ssp_log "fuzzing passed"
