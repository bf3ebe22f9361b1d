# test/lib.sh: shared by make test, make demo and make bench.
#
# Each entry script sources this file and calls, in order:
#   ssp_setup "$@"     packages (as root), then re-runs the script as the
#                      unprivileged user "ssp" in a copy of the tree, since
#                      Postgres refuses to run as root
#   ssp_build          build, and install into a private copy of the
#                      Postgres installation under $SSP_WORK/install, so no
#                      root is needed and the system install is untouched
#   ssp_start_broker   the test broker (or SSP_TEST_BROKERS / KAFKA_BROKERS)
#   ssp_start_kafka    Apache Kafka, fetched with Maven (test/kafka/kafka_ctl)
# Everything started is stopped by the EXIT trap, even on failure.

set -euo pipefail

SSP_PG_VERSION=15
# the test clusters are UTF8 (tests use multibyte names and invalid UTF-8)
export LANG=${LANG:-C.UTF-8}
SSP_PACKAGES="postgresql-$SSP_PG_VERSION postgresql-server-dev-$SSP_PG_VERSION librdkafka-dev libcurl4-openssl-dev kcat libipc-run-perl make gcc"
# Apache Kafka (test/kafka/kafka_ctl): Java 17 and Maven, which fetches it
SSP_KAFKA_PACKAGES="default-jdk-headless maven"
# the Debian package (test/check_package.sh: pg_buildext, dpkg-buildpackage;
# dpkg-checkbuilddeps wants build-essential)
SSP_PACKAGE_PACKAGES="postgresql-server-dev-all debhelper build-essential"
SSP_USER=${SSP_USER:-sspuser}
SSP_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SSP_SRC
PG_BINDIR=/usr/lib/postgresql/$SSP_PG_VERSION/bin
PG_PGXS=/usr/lib/postgresql/$SSP_PG_VERSION/lib/pgxs

ssp_log() { printf '== %s\n' "$*" >&2; }
ssp_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# ssp_packages: install the Debian packages that are missing.
ssp_packages() {
    local missing=() p
    for p in $SSP_PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    ssp_log "installing ${missing[*]}"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo -n true 2>/dev/null || ssp_die "missing packages: ${missing[*]}; install them as root (apt-get install ${missing[*]}) or run this as root"
        sudo="sudo -n"
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# ssp_setup: packages; as root, re-run the calling script as $SSP_USER in a
# copy of the tree (the exit status is the script's), then run the calling
# script's function ssp_as_root, if it has one.  Sets SSP_WORK.
ssp_setup() {
    if [ -z "${SSP_INNER:-}" ]; then
        ssp_packages
    fi
    if [ "$(id -u)" -eq 0 ]; then
        id -u "$SSP_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$SSP_USER"
        local work
        work=$(mktemp -d "/tmp/ssp-$(basename "$0" .sh).XXXXXX")
        mkdir "$work/src"
        tar -C "$SSP_SRC" --exclude=.git --exclude='*.o' --exclude='*.so' -cf - . | tar -C "$work/src" -xf -
        # the history, for the upgrade tests (they build earlier versions)
        local git_dir=
        if git_dir=$(git -C "$SSP_SRC" rev-parse --absolute-git-dir 2>/dev/null); then
            cp -a "$git_dir" "$work/git"
            git_dir=$work/git
        fi
        chown -R "$SSP_USER:" "$work"
        chmod 755 "$work"
        ssp_log "running as user $SSP_USER in $work"
        local status=0
        runuser -u "$SSP_USER" -- env SSP_INNER=1 SSP_WORK="$work" \
            SSP_TEST_BROKERS="${SSP_TEST_BROKERS:-}" KAFKA_BROKERS="${KAFKA_BROKERS:-}" \
            SSP_TEST_KAFKA="${SSP_TEST_KAFKA:-}" SSP_DEMO_KAFKA="${SSP_DEMO_KAFKA:-}" SSP_BENCH_KAFKA="${SSP_BENCH_KAFKA:-}" SSP_CACHE="${SSP_CACHE:-}" SSP_GIT_DIR="$git_dir" \
            SSP_BENCH_RUNS="${SSP_BENCH_RUNS:-}" SSP_REGRESS="${SSP_REGRESS:-}" SSP_ISOLATION="${SSP_ISOLATION:-}" SSP_TAP="${SSP_TAP:-}" SSP_DEMO_SECONDS="${SSP_DEMO_SECONDS:-}" SSP_FUZZ_SECONDS="${SSP_FUZZ_SECONDS:-}" SSP_SMALL_DISK="${SSP_SMALL_DISK:-}" \
            PATH="$PATH" bash "$work/src/${0#"$SSP_SRC"/}" "$@" || status=$?
        # what the script does as root once the rest has run (ssp_as_root)
        if declare -F ssp_as_root >/dev/null; then
            ssp_as_root || { status=1; echo "as root: ssp_as_root of $(basename "$0") failed" >>"$work/failures.txt"; }
        fi
        # what failed (the script writes it in SSP_WORK/failures.txt), last
        if [ $status -ne 0 ] && [ -s "$work/failures.txt" ]; then
            ssp_log "what failed (outputs in $work):"
            cat "$work/failures.txt" >&2
        fi
        # what the run wrote for the tree (SSP_COPY_BACK: a folder), back in it
        if [ -n "${SSP_COPY_BACK:-}" ] && [ -d "$work/src/$SSP_COPY_BACK" ]; then
            mkdir -p "$SSP_SRC/$SSP_COPY_BACK"
            cp -r "$work/src/$SSP_COPY_BACK/." "$SSP_SRC/$SSP_COPY_BACK/"
        fi
        exit $status
    fi
    SSP_WORK=${SSP_WORK:-$(mktemp -d "/tmp/ssp-$(basename "$0" .sh).XXXXXX")}
    export SSP_WORK
    cd "$SSP_SRC"
}

# ssp_build: build with warnings as errors; install into $SSP_INSTALL.
ssp_build() {
    SSP_INSTALL=$SSP_WORK/install
    export SSP_INSTALL
    ssp_log "building"
    make -s -C "$SSP_SRC" PG_CONFIG=$PG_BINDIR/pg_config >/dev/null
    ssp_copy_postgres "$SSP_INSTALL"
    make -s -C "$SSP_SRC" PG_CONFIG=$PG_BINDIR/pg_config DESTDIR="$SSP_INSTALL" install >/dev/null
    export PATH="$SSP_INSTALL$PG_BINDIR:$PATH"
}

# ssp_copy_postgres ROOT: a private copy of the Postgres installation under
# ROOT (ROOT/usr/lib/postgresql/15, ROOT/usr/share/postgresql/15), without
# any ssp the system may have; Postgres finds its share and lib directories
# relative to its binary, so ROOT$PG_BINDIR runs it.
ssp_copy_postgres() {
    local root=$1
    rm -rf "$root"
    mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql"
    cp -a "/usr/lib/postgresql/$SSP_PG_VERSION" "$root/usr/lib/postgresql/"
    cp -a "/usr/share/postgresql/$SSP_PG_VERSION" "$root/usr/share/postgresql/"
    find "$root/usr/lib/postgresql/$SSP_PG_VERSION/lib" "$root/usr/share/postgresql/$SSP_PG_VERSION/extension" \
        \( -name 'ssp.*' -o -name 'ssp--*' -o -path "*/bitcode/ssp*" \) -prune -exec rm -rf {} +
}

# ssp_start_postgres DIR [LINE...]: a Postgres cluster of the run's own in
# DIR/data with ssp in shared_preload_libraries (and the lines given in
# postgresql.conf), on a socket in DIR only; sets PGHOST and PGPORT, as
# make installcheck wants them.
ssp_start_postgres() {
    local dir=$1
    shift
    rm -rf "$dir/data"
    mkdir -p "$dir"
    initdb -D "$dir/data" -A trust -N >"$dir/initdb.log" 2>&1 || ssp_die "initdb failed: $(cat "$dir/initdb.log")"
    {
        echo "shared_preload_libraries = 'ssp'"   # again in the lines given: the last wins
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$dir'"
        printf '%s\n' "$@"
    } >>"$dir/data/postgresql.conf"
    SSP_PG_DIRS+=("$dir/data")
    pg_ctl -D "$dir/data" -l "$dir/postgres.log" -w start >/dev/null ||
        ssp_die "Postgres did not start: $(tail -n 20 "$dir/postgres.log")"
    export PGHOST=$dir PGPORT=5432
}

SSP_PIDS=()
SSP_KAFKA_DIRS=()
SSP_PG_DIRS=()
ssp_cleanup() {
    local pid dir
    for dir in "${SSP_PG_DIRS[@]+"${SSP_PG_DIRS[@]}"}"; do
        pg_ctl -D "$dir" -m fast stop >/dev/null 2>&1 || true
    done
    SSP_PG_DIRS=()
    for dir in "${SSP_KAFKA_DIRS[@]+"${SSP_KAFKA_DIRS[@]}"}"; do
        "$SSP_SRC/test/kafka/kafka_ctl" stop "$dir" || true
    done
    SSP_KAFKA_DIRS=()
    for pid in "${SSP_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${SSP_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    SSP_PIDS=()
}
trap ssp_cleanup EXIT

# ssp_start_kafka DIR [kafka_ctl start options]: an Apache Kafka cluster of
# its own in DIR; sets SSP_BROKERS and SSP_KAFKA_DIR (SSP_BROKER_CONTROL is
# empty: no faults to inject).
ssp_start_kafka() {
    local dir=$1
    shift
    ssp_log "starting Apache Kafka in $dir"
    SSP_KAFKA_DIRS+=("$dir")
    SSP_BROKERS=$("$SSP_SRC/test/kafka/kafka_ctl" start "$dir" "$@" | tail -n 1) ||
        ssp_die "Apache Kafka did not start (logs in $dir)"
    SSP_KAFKA_DIR=$dir SSP_BROKER_CONTROL=
    export SSP_BROKERS SSP_KAFKA_DIR SSP_BROKER_CONTROL
}

# ssp_start_broker DIR [ARGS]: the broker a test runs on: Apache Kafka if
# SSP_TEST_KAFKA is apache, an external cluster in SSP_TEST_BROKERS, or the
# test broker (librdkafka's mock cluster, which takes faults through its
# control socket); sets SSP_BROKERS, and SSP_BROKER_CONTROL for the last.
ssp_start_broker() {
    local dir=$1
    shift
    if [ -n "${SSP_TEST_BROKERS:-}" ]; then
        export SSP_BROKERS=$SSP_TEST_BROKERS SSP_BROKER_CONTROL= SSP_KAFKA_DIR=
        return 0
    fi
    if [ "${SSP_TEST_KAFKA:-mock}" = apache ]; then
        ssp_start_kafka "$dir"
        return 0
    fi
    export SSP_KAFKA_DIR=
    mkdir -p "$dir"
    "$SSP_SRC/test/broker/ssp_test_broker" --bootstrap-file "$dir/bootstrap" \
        --control-file "$dir/control" "$@" 2>"$dir/broker.log" &
    SSP_PIDS+=($!)
    local i
    for i in $(seq 100); do
        [ -f "$dir/control" ] && break
        sleep 0.1
    done
    [ -f "$dir/control" ] || ssp_die "the test broker did not start: $(cat "$dir/broker.log")"
    SSP_BROKERS=$(cat "$dir/bootstrap")
    SSP_BROKER_CONTROL=$dir/control
    export SSP_BROKERS SSP_BROKER_CONTROL
    # like a real Kafka, consumers do not create topics; producers do
    "$SSP_SRC/test/broker/broker_ctl" "$SSP_BROKER_CONTROL" apiversion Metadata 0 4 >/dev/null
}
