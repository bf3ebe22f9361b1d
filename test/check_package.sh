#!/bin/bash
# The Debian package: builds postgresql-15-ssp from a copy of the tree
# (SSP_SRC) with dpkg-buildpackage and debian/ (pg_buildext, as
# apt.postgresql.org builds extensions), checks what it holds, then installs
# it into a fresh cluster and creates the extension there.  As root, the
# package is installed for real with apt-get and removed again afterwards
# (not if the system had ssp before: then it is checked unpacked, as below);
# as an ordinary user, it is unpacked over a private copy of the Postgres
# installation.  Work happens in SSP_WORK (a fresh folder when unset).
# Needs the packages in SSP_PACKAGE_PACKAGES (lib.sh) and librdkafka-dev;
# exits non-zero on failure.
set -euo pipefail
given_src=${SSP_SRC:-}
source "$(dirname "$0")/lib.sh"
SSP_SRC=${given_src:-$SSP_SRC}

PKG=postgresql-$SSP_PG_VERSION-ssp
LIBDIR=usr/lib/postgresql/$SSP_PG_VERSION/lib
EXTDIR=usr/share/postgresql/$SSP_PG_VERSION/extension
PORT=${SSP_PACKAGE_PORT:-54341}

for p in $SSP_PACKAGE_PACKAGES librdkafka-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        ssp_die "package check: $p is not installed (needs: $SSP_PACKAGE_PACKAGES librdkafka-dev)"
done
SSP_WORK=${SSP_WORK:-$(mktemp -d /tmp/ssp-check_package.XXXXXX)}
WORK=$SSP_WORK/package
rm -rf "$WORK"
mkdir -p "$WORK"
ROOT_MODE=
if [ "$(id -u)" -eq 0 ]; then
    ROOT_MODE=1
    id -u "$SSP_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$SSP_USER"
    # the clusters run as $SSP_USER
    chmod 755 "$SSP_WORK" "$WORK"
fi

# as_user CMD...: CMD as the user Postgres runs as
as_user() {
    if [ -n "$ROOT_MODE" ]; then runuser -u "$SSP_USER" -- "$@"; else "$@"; fi
}

STARTED=()          # data folders of running clusters
INSTALLED=          # set while the package is installed by this script
package_cleanup() {
    local data
    for data in "${STARTED[@]+"${STARTED[@]}"}"; do
        as_user "$PG_BINDIR/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    done
    STARTED=()
    if [ -n "$INSTALLED" ]; then
        ssp_log "removing $PKG"
        dpkg --purge "$PKG" >"$WORK/dpkg-purge.log" 2>&1 || cat "$WORK/dpkg-purge.log" >&2
        INSTALLED=
    fi
    ssp_cleanup
}
trap package_cleanup EXIT
fail() { ssp_die "package check: $*"; }

# ---- build ----------------------------------------------------------------
ssp_log "package: building $PKG with dpkg-buildpackage in $WORK (as $(id -un))"
start=$SECONDS
mkdir "$WORK/ssp"
tar -C "$SSP_SRC" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
    --exclude='./build-*' -cf - . | tar -C "$WORK/ssp" -xf -
(cd "$WORK/ssp" && dpkg-buildpackage -b -uc -us) >"$WORK/build.log" 2>&1 ||
    { tail -n 40 "$WORK/build.log" >&2; fail "dpkg-buildpackage failed (log: $WORK/build.log)"; }
debs=("$WORK/${PKG}_"*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "no single ${PKG}_*.deb in $WORK: $(ls "$WORK")"
DEB=${debs[0]}
ssp_log "package: built $(basename "$DEB") in $((SECONDS - start)) s"

# ---- contents -------------------------------------------------------------
# the extension and nothing else: ssp.so, its bitcode (when the server has
# JIT), the control file, every install and upgrade script of sql/, the docs
dpkg-deb -c "$DEB" | awk '$6 !~ /\/$/ { sub("^\\./", "", $6); print $6 }' | sort >"$WORK/contents"
want=("$LIBDIR/ssp.so" "$EXTDIR/ssp.control")
for f in "$SSP_SRC"/sql/ssp--*.sql; do
    want+=("$EXTDIR/$(basename "$f")")
done
if grep -q '^with_llvm *= *yes' "$PG_PGXS/src/Makefile.global"; then
    want+=("$LIBDIR/bitcode/ssp.index.bc")
fi
for f in "${want[@]}"; do
    grep -qxF "$f" "$WORK/contents" ||
        fail "$(basename "$DEB") has no $f; besides bitcode and docs it has:$(printf '\n  %s' $(grep -v -e /bitcode/ -e ^usr/share/doc/ "$WORK/contents"))"
done
stray=$(grep -vE "^($LIBDIR/ssp\.so|$LIBDIR/bitcode/ssp(\.index\.bc|/.*\.bc)|$EXTDIR/ssp(\.control|--[0-9.]+(--[0-9.]+)?\.sql)|usr/share/doc/$PKG/.*)\$" "$WORK/contents" || true)
[ -z "$stray" ] || fail "$(basename "$DEB") holds files that are not the extension's:$(printf '\n  %s' $stray)"
default_version=$(dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - "./$EXTDIR/ssp.control" |
    sed -n "s/^default_version *= *'\(.*\)'.*/\1/p")
[ -n "$default_version" ] || fail "the packaged ssp.control has no default_version"
depends=$(dpkg-deb -f "$DEB" Depends)
for d in "postgresql-$SSP_PG_VERSION" librdkafka1; do
    grep -q "\b$d\b" <<<"$depends" || fail "the package does not depend on $d (Depends: $depends)"
done
ssp_log "package: $(wc -l <"$WORK/contents") files, extension version $default_version; Depends: $depends"

# ---- a fresh cluster ------------------------------------------------------
# check_cluster BINDIR NAME: initdb a cluster with ssp preloaded, using the
# Postgres in BINDIR, and check the extension there: CREATE EXTENSION at
# the default version, ALTER EXTENSION UPDATE from every older version the
# package has, the launcher (the preloaded library's background worker),
# a window function and a Kafka server.
check_cluster() {
    local bindir=$1 dir=$WORK/$2
    mkdir -p "$dir"
    [ -z "$ROOT_MODE" ] || chown "$SSP_USER:" "$dir"
    as_user test -w "$dir" || fail "user $(as_user id -un) cannot write to $dir"
    as_user "$bindir/initdb" -D "$dir/data" -A trust -U postgres >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; fail "initdb failed ($bindir)"; }
    as_user tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
shared_preload_libraries = 'ssp'
port = $PORT
unix_socket_directories = '$dir'
listen_addresses = ''
CONF
    STARTED+=("$dir/data")
    as_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w start >/dev/null ||
        { tail -n 20 "$dir/postgres.log" >&2; fail "the cluster with ssp preloaded did not start ($bindir)"; }
    local psql=("$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$dir" -p "$PORT" -U postgres)
    local out
    out=$(as_user "${psql[@]}" -d postgres 2>&1 <<'SQL'
SET TimeZone = 'UTC';
CREATE EXTENSION ssp;
SELECT 'version ' || extversion FROM pg_extension WHERE extname = 'ssp';
DO $$ BEGIN    -- the launcher starts as the server opens: give it 10 s
    FOR i IN 1..100 LOOP
        EXIT WHEN EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'ssp launcher');
        PERFORM pg_sleep(0.1), pg_stat_clear_snapshot();
    END LOOP;
END $$;
SELECT 'launcher ' || count(*) FROM pg_stat_activity WHERE backend_type = 'ssp launcher';
SELECT 'tumble ' || ssp.tumble('2026-12-01 10:07:30+00', '5 minutes');
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'localhost:9092');
SELECT 'server ' || srvname || ' ' || fdwname FROM pg_foreign_server s
  JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw;
SQL
) || { echo "$out" >&2; tail -n 20 "$dir/postgres.log" >&2; fail "the SQL checks failed ($bindir)"; }
    local expected="version $default_version
launcher 1
tumble 2026-12-01 10:05:00+00
server kafka ssp_kafka"
    [ "$out" = "$expected" ] || fail "unexpected results ($bindir):
$out
expected:
$expected"
    # each older version the package can install must update to the default
    local script v updated=()
    for script in $(grep -E "^$EXTDIR/ssp--[0-9.]+\.sql\$" "$WORK/contents"); do
        v=${script##*/ssp--}
        v=${v%.sql}
        [ "$v" != "$default_version" ] || continue
        out=$(as_user "${psql[@]}" -d postgres 2>&1 <<SQL
CREATE DATABASE ssp_from_$(tr . _ <<<"$v");
\\c ssp_from_$(tr . _ <<<"$v")
CREATE EXTENSION ssp VERSION '$v';
ALTER EXTENSION ssp UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'ssp';
SQL
) || { echo "$out" >&2; fail "ALTER EXTENSION ssp UPDATE from $v failed ($bindir)"; }
        [ "$out" = "$default_version" ] || fail "ALTER EXTENSION ssp UPDATE from $v gave version $out, not $default_version"
        updated+=("$v")
    done
    as_user "$bindir/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
    STARTED=()
    ssp_log "package: CREATE EXTENSION ssp (version $default_version), the launcher, ssp.tumble and a ssp_kafka server work${updated[*]:+; updated from ${updated[*]}}"
}

# system_ssp_files: ssp's files in the system's Postgres (any owner)
system_ssp_files() {
    find "/$LIBDIR" "/$EXTDIR" \( -name 'ssp.*' -o -name 'ssp--*' -o -path "*/bitcode/ssp*" \) 2>/dev/null | sort
}

# ---- install --------------------------------------------------------------
start=$SECONDS
real=
if [ -n "$ROOT_MODE" ]; then
    real=1
    if dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q "ok installed"; then
        ssp_log "package: $PKG $(dpkg-query -W -f='${Version}' "$PKG") is installed already: not replacing it; checking the package unpacked instead"
        real=
    elif [ -n "$(system_ssp_files)" ]; then
        ssp_log "package: ssp is in the system's Postgres already (make install?): not overwriting it; checking the package unpacked instead:$(printf ' %s' $(system_ssp_files))"
        real=
    fi
fi
if [ -n "$real" ]; then
    ssp_log "package: apt-get install $(basename "$DEB")"
    dpkg-query -W -f='${Package} ${Version}\n' | sort >"$WORK/packages.before"
    INSTALLED=1
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$DEB" \
        >"$WORK/apt-get.log" 2>&1 || { cat "$WORK/apt-get.log" >&2; fail "apt-get install $DEB failed"; }
    for f in "${want[@]}"; do
        [ -f "/$f" ] || fail "/$f is not there after apt-get install"
    done
    check_cluster "$PG_BINDIR" cluster-system
    ssp_log "package: dpkg --purge $PKG"
    dpkg --purge "$PKG" >"$WORK/dpkg-purge.log" 2>&1 ||
        { cat "$WORK/dpkg-purge.log" >&2; fail "dpkg --purge $PKG failed"; }
    INSTALLED=
    left=$(system_ssp_files)
    [ -z "$left" ] || fail "files of ssp are left after dpkg --purge $PKG:$(printf '\n  %s' $left)"
    dpkg-query -W -f='${Package} ${Version}\n' | sort >"$WORK/packages.after"
    diff -u "$WORK/packages.before" "$WORK/packages.after" >&2 ||
        fail "apt-get install changed other packages than $PKG (above); they are left as they are"
    ssp_log "package: installed with apt-get, checked in a fresh cluster, removed, in $((SECONDS - start)) s"
else
    # a private copy of the Postgres installation with the package's files
    # over it (as ssp_build does with make install)
    ssp_log "package: dpkg-deb -x $(basename "$DEB"), over a private copy of Postgres $SSP_PG_VERSION"
    dpkg-deb -x "$DEB" "$WORK/root"
    install=$WORK/install
    # without any ssp of the system's (make install), which would hide a
    # package without it
    ssp_copy_postgres "$install"
    cp -a "$WORK/root/usr/." "$install/usr/"
    check_cluster "$install$PG_BINDIR" cluster-unpacked
    ssp_log "package: unpacked, checked in a fresh cluster, in $((SECONDS - start)) s"
fi
echo "package $(basename "$DEB"): built, holds the extension, works in a fresh cluster ($([ -n "$real" ] && echo "installed with apt-get and removed" || echo "unpacked"))"
