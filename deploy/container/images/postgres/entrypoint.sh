#!/bin/sh
# First start: initdb with POSTGRES_PASSWORD, run /docker-entrypoint-initdb.d/*.sql on a server
# that listens on its Unix socket only, stop it. Then the server itself, as the postgres user.
set -eu
[ "${1:-postgres}" = "postgres" ] || exec "$@"
[ "$#" -gt 0 ] && shift
mkdir -p "$PGDATA"
chown postgres:postgres "$PGDATA"
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required on first start}"
    printf '%s\n' "$POSTGRES_PASSWORD" >/tmp/pwfile
    chown postgres /tmp/pwfile
    runuser -u postgres -- initdb --username=postgres --pwfile=/tmp/pwfile --auth-local=trust \
        --auth-host=scram-sha-256 --encoding=UTF8 -D "$PGDATA" >/dev/null
    rm -f /tmp/pwfile
    printf "host all all all scram-sha-256\n" >>"$PGDATA/pg_hba.conf"
    runuser -u postgres -- pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    for f in /docker-entrypoint-initdb.d/*.sql; do
        [ -e "$f" ] || continue
        echo "entrypoint: running $f"
        runuser -u postgres -- psql -v ON_ERROR_STOP=1 --username=postgres --dbname=postgres -q -f "$f"
    done
    runuser -u postgres -- pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    echo "entrypoint: initialised $PGDATA"
fi
exec runuser -u postgres -- postgres -D "$PGDATA" -c listen_addresses='*' "$@"
