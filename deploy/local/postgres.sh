#!/usr/bin/env bash
# PostgreSQL for the local stack: install Debian's package when missing, create a project-local
# cluster, start it on 127.0.0.1, create the owner, application and relay roles and the database.
# Usage: postgres.sh up|down|status
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PG_LOG="$MNEMO_LOGS/postgres.log"
PG_PIDFILE="$MNEMO_RUN/postgres.pid"
# One login role per service (ARCHITECTURE §2); the password defaults to the role's name locally.
SERVICE_ROLES="mnemo_ingest mnemo_classifier mnemo_navigator mnemo_audit"

pg_bindir() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [ -n "$dir" ] && [ -x "$dir/initdb" ] && printf '%s' "$dir"
}

ensure_installed() {
    if pg_bindir >/dev/null; then return 0; fi
    say "postgres: not installed; installing Debian's postgresql package (once)"
    if [ "$(id -u)" -ne 0 ]; then
        fail "PostgreSQL is missing and installing it needs root: run 'sudo apt-get install postgresql'"
    fi
    {
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
    } >"$MNEMO_LOGS/postgres-install.log" 2>&1 || fail "apt-get install postgresql failed" "$MNEMO_LOGS/postgres-install.log"
    # Debian's package starts its own cluster on 5432; ours is separate and leaves it alone.
    pg_bindir >/dev/null || fail "postgresql installed but no initdb found under /usr/lib/postgresql"
}

# The server refuses to run as root: as root we run it as the 'postgres' user, which must be able
# to reach the data folder. If the project folder is not reachable by that user, the cluster lives
# in a per-project folder under /var/tmp instead.
as_server_user() {
    if [ "$(id -u)" -eq 0 ]; then
        (cd / && runuser -u postgres -- "$@")  # from /, which the server user may enter
    else
        "$@"
    fi
}

data_dir() {
    local preferred="$MNEMO_LOCAL/postgres"
    if [ "$(id -u)" -ne 0 ]; then printf '%s' "$preferred"; return; fi
    mkdir -p "$preferred"
    chown postgres: "$preferred"
    if runuser -u postgres -- test -w "$preferred"; then
        printf '%s' "$preferred"
    else
        local key fallback
        key="$(printf '%s' "$MNEMO_ROOT" | sha256sum | cut -c1-12)"
        fallback="/var/tmp/mnemo-postgres-$key"
        # A cluster there that this checkout never recorded belongs to an earlier clone at the same
        # path: start afresh rather than inherit its state.
        if [ ! -f "$MNEMO_RUN/postgres.datadir" ] && [ -d "$fallback" ] \
            && ! { [ -f "$fallback/postmaster.pid" ] && kill -0 "$(head -n 1 "$fallback/postmaster.pid")" 2>/dev/null; }; then
            rm -rf "$fallback" "$fallback.log"
        fi
        printf '%s' "$fallback"
    fi
}

psql_super() {
    as_server_user "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PGDATA" -p "$MNEMO_PG_PORT" -d "${1:-postgres}" "${@:2}"
}

is_running() {
    pid_alive "$PG_PIDFILE" && as_server_user "$BIN/pg_isready" -q -h 127.0.0.1 -p "$MNEMO_PG_PORT"
}

# The server writes its own log, so it must live where the server user can write: beside the data
# when the data had to move out of the project, with a link from .local/logs so it is found as usual.
server_log() {
    if [ "$PGDATA" = "$MNEMO_LOCAL/postgres" ]; then
        printf '%s' "$PG_LOG"
    else
        ln -sfn "$PGDATA.log" "$PG_LOG"
        printf '%s' "$PGDATA.log"
    fi
}

up() {
    ensure_installed
    BIN="$(pg_bindir)"
    PGDATA="$(data_dir)"
    PG_SERVER_LOG="$(server_log)"
    if is_running; then
        ensure_roles
        say "postgres: already running on 127.0.0.1:$MNEMO_PG_PORT (pid $(cat "$PG_PIDFILE")), nothing to do"
        return 0
    fi
    if port_open "$MNEMO_PG_PORT"; then
        fail "port $MNEMO_PG_PORT is taken by another program; set MNEMO_PG_PORT to a free port"
    fi
    if [ ! -f "$PGDATA/PG_VERSION" ]; then
        say "postgres: creating the cluster in $PGDATA"
        mkdir -p "$PGDATA"
        [ "$(id -u)" -eq 0 ] && chown postgres: "$PGDATA"
        : >"$PG_SERVER_LOG"
        [ "$(id -u)" -eq 0 ] && chown postgres: "$PG_SERVER_LOG"
        as_server_user "$BIN/initdb" -D "$PGDATA" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
            -E UTF8 --locale=C.UTF-8 >>"$PG_LOG" 2>&1 || fail "initdb failed" "$PG_LOG"
        cat >>"$PGDATA/postgresql.conf" <<CONF
# Mnemo local stack: loopback only, tuned for fast tests (not for durability).
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PGDATA'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
shared_buffers = 256MB
CONF
    fi
    [ "$(id -u)" -eq 0 ] && { touch "$PG_SERVER_LOG"; chown postgres: "$PG_SERVER_LOG"; }
    say "postgres: starting on 127.0.0.1:$MNEMO_PG_PORT"
    as_server_user "$BIN/pg_ctl" -D "$PGDATA" -l "$PG_SERVER_LOG" -o "-p $MNEMO_PG_PORT" -w -t 60 start >/dev/null \
        || fail "postgres did not start" "$PG_LOG"
    head -n 1 "$PGDATA/postmaster.pid" >"$PG_PIDFILE"
    printf '%s\n' "$PGDATA" >"$MNEMO_RUN/postgres.datadir"
    ensure_roles
    say "postgres: ready (pid $(cat "$PG_PIDFILE")), log $PG_LOG"
}

# The roles come from the one file a deployment on Postgres Mnemo does not run uses too
# (helm/mnemo/files/roles.sql: idempotent, NOBYPASSRLS, passwords from session settings); here each
# password defaults to its role's name (MNEMO_PG_<ROLE>_PASSWORD to change one).
ROLES_SQL="$MNEMO_ROOT/helm/mnemo/files/roles.sql"

role_passwords() {
    local role upper password_var password options=""
    for role in mnemo_owner mnemo_app mnemo_relay $SERVICE_ROLES; do
        upper="$(printf '%s' "${role#mnemo_}" | tr '[:lower:]' '[:upper:]')"
        password_var="MNEMO_PG_${upper}_PASSWORD"
        password="${!password_var:-$role}"
        password="${password//\\/\\\\}"  # PGOPTIONS escapes backslashes and spaces
        options+=" -c mnemo.password_$role=${password// /\\ }"
    done
    printf '%s' "${options# }"
}

ensure_roles() {
    PGOPTIONS="$(role_passwords)" psql_super postgres <"$ROLES_SQL"
    if [ -z "$(psql_super postgres -tA -c "SELECT 1 FROM pg_database WHERE datname = '$MNEMO_PG_DB'")" ]; then
        psql_super postgres -c "CREATE DATABASE $MNEMO_PG_DB OWNER mnemo_owner"
        psql_super "$MNEMO_PG_DB" -c "REVOKE ALL ON SCHEMA public FROM PUBLIC"
        say "postgres: created database $MNEMO_PG_DB and roles mnemo_owner, mnemo_app, mnemo_relay, ${SERVICE_ROLES// /, }"
    fi
    fulltext_leakproof
}

# Opt-in (MNEMO_PG_FULLTEXT_LEAKPROOF=1; 0 undoes it; unset leaves it as it is): mark the full-text
# match `tsvector @@ tsquery` leakproof in the Mnemo database, so that under row-level security the
# GIN index of a documents store serves retrieve's match instead of a per-row test after the tenant
# policy. Only a superuser may; it changes a built-in function for every role of this database.
# See services/navigator/README.md ("Full text under row-level security") before turning it on.
fulltext_leakproof() {
    case "${MNEMO_PG_FULLTEXT_LEAKPROOF:-}" in
        1) psql_super "$MNEMO_PG_DB" -c "ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF"
           say "postgres: tsvector @@ tsquery marked leakproof (MNEMO_PG_FULLTEXT_LEAKPROOF=1)" ;;
        0) psql_super "$MNEMO_PG_DB" -c "ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF" ;;
        *) ;;
    esac
}

down() {
    if [ -f "$MNEMO_RUN/postgres.datadir" ] && pid_alive "$PG_PIDFILE"; then
        BIN="$(pg_bindir)"
        PGDATA="$(cat "$MNEMO_RUN/postgres.datadir")"
        as_server_user "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
    fi
    stop_pidfile postgres "$PG_PIDFILE"
}

status() {
    if pid_alive "$PG_PIDFILE" && port_open "$MNEMO_PG_PORT"; then
        say "postgres: up on 127.0.0.1:$MNEMO_PG_PORT (pid $(cat "$PG_PIDFILE"))"
    else
        say "postgres: down"
    fi
}

"${1:?usage: postgres.sh up|down|status}"
