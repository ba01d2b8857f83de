# lib/postgres.sh — sourced by the heat, nova and keystone *-standalone.sh scripts: apt
# installs and the Debian PostgreSQL cluster they keep their databases in.
# The sourcing script defines `log MSG`, `die MSG` and `as_postgres CMD...` (runs CMD as the
# postgres user) before it calls any of these.
#
#   apt_install PKG...    apt-get install (apt-get update once first); needs root
#   pg_server_installed   exit 0 if a PostgreSQL server and pg_lsclusters are installed
#   pg_cluster            prints "VERSION NAME PORT STATUS" of the first cluster
#   ensure_postgres       the first cluster made if none, started, answering; sets PG_PORT

pg_server_installed() {
    command -v pg_lsclusters >/dev/null 2>&1 && compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null
}

apt_updated=0
apt_install() {
    [ "$(id -u)" = 0 ] || die "need root to apt-get install $*"
    if [ "$apt_updated" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

pg_cluster() {
    pg_lsclusters -h 2>/dev/null | awk 'NR==1 {print $1, $2, $3, $4}'
}

ensure_postgres() {
    local c ver name port status i
    c="$(pg_cluster)"
    if [ -z "$c" ]; then
        ver="$(basename "$(dirname "$(dirname "$(compgen -G '/usr/lib/postgresql/*/bin/postgres' | sort -V | tail -1)")")")"
        log "creating PostgreSQL cluster $ver/main"
        pg_createcluster "$ver" main >&2
        c="$(pg_cluster)"
    fi
    read -r ver name port status <<<"$c"
    if [ "$status" != online ]; then
        log "starting PostgreSQL $ver/$name"
        pg_ctlcluster "$ver" "$name" start >&2 || service postgresql start >&2
    fi
    for i in $(seq 1 60); do
        as_postgres psql -p "$port" -Atqc 'select 1' >/dev/null 2>&1 && break
        sleep 0.5
    done
    as_postgres psql -p "$port" -Atqc 'select 1' >/dev/null || die "PostgreSQL $ver/$name does not answer"
    PG_PORT="$port"
}
