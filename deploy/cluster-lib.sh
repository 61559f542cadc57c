# cluster-lib.sh holds the settings and helpers run-cluster.sh and stop-cluster.sh share. It is
# sourced, not run; DEPLOY_DIR and REPO must be set first.

# --- Settings -----------------------------------------------------------------------------------

# STATE_DIR is Keel's state folder as the starter and worker choose it (dev.state_dir, else the
# user's state folder: config.DefaultStateDir). The cluster's files live there rather than in the
# repository, so that a session working in the repository can neither read the gateway key and the
# store's password in cluster.env nor replace the binaries this script restarts.
if [[ -n "${KEEL_DEV_STATE_DIR:-}" ]]; then
	STATE_DIR=$KEEL_DEV_STATE_DIR
elif [[ "${XDG_STATE_HOME:-}" == /* ]]; then
	STATE_DIR=$XDG_STATE_HOME/keel
else
	STATE_DIR=${HOME:?neither XDG_STATE_HOME nor HOME is set; set KEEL_CLUSTER_DIR}/.local/state/keel
fi
CLUSTER_DIR=${KEEL_CLUSTER_DIR:-$STATE_DIR/cluster}
mkdir -p "$CLUSTER_DIR"
CLUSTER_DIR=$(cd "$CLUSTER_DIR" && pwd)
BIN=${KEEL_CLUSTER_BIN:-$CLUSTER_DIR/bin}
mkdir -p "$BIN"
BIN=$(cd "$BIN" && pwd)
RUN=$CLUSTER_DIR/run
LOGS=$CLUSTER_DIR/log

PG_PORT=${KEEL_CLUSTER_PG_PORT:-5432}
PG_USER=${KEEL_CLUSTER_PG_USER:-postgres}
PG_PASSWORD=${KEEL_CLUSTER_PG_PASSWORD:-}
# A PostgreSQL this script installed itself has a password-authenticated role, recorded here.
if [[ -z "${KEEL_CLUSTER_PG_USER:-}" && -f "$CLUSTER_DIR/pg.env" ]]; then
	# shellcheck disable=SC1091
	source "$CLUSTER_DIR/pg.env"
fi
DB_PREFIX=${KEEL_CLUSTER_DB_PREFIX:-keel}
DB_TEMPORAL=${DB_PREFIX}_temporal
DB_VISIBILITY=${DB_PREFIX}_temporal_visibility
DB_KEEL=$DB_PREFIX

TEMPORAL_PORT=${KEEL_CLUSTER_TEMPORAL_PORT:-7233}
TEMPORAL_ADDRESS=127.0.0.1:$TEMPORAL_PORT
GATEWAY_PORT=${KEEL_CLUSTER_GATEWAY_PORT:-8089}
METRICS_PORT=${KEEL_CLUSTER_METRICS_PORT:-9464}
WORKERS=${KEEL_CLUSTER_WORKERS:-2}
EFFECT_LOG=${KEEL_CLUSTER_EFFECT_LOG:-}
TIMEOUT=${KEEL_CLUSTER_TIMEOUT:-90}

# The one pinned Temporal version lives in docker-compose.yml.
TEMPORAL_VERSION=$(sed -n 's/^x-temporal-version:[[:space:]]*"\{0,1\}\([0-9][0-9.]*\)"\{0,1\}[[:space:]]*$/\1/p' "$REPO/docker-compose.yml")
[[ -n "$TEMPORAL_VERSION" ]] || {
	echo "keel-cluster: no x-temporal-version in $REPO/docker-compose.yml" >&2
	exit 1
}

store_dsn() {
	local auth=$PG_USER
	[[ -n "$PG_PASSWORD" ]] && auth="$PG_USER:$PG_PASSWORD"
	echo "postgres://$auth@127.0.0.1:$PG_PORT/$DB_KEEL?sslmode=disable"
}
STORE_DSN=$(store_dsn)

# --- Output -------------------------------------------------------------------------------------

log() { echo "keel-cluster: $*"; }

die() {
	echo "keel-cluster: $*" >&2
	exit 1
}

# --- System -------------------------------------------------------------------------------------

as_root() {
	if [[ $EUID -eq 0 ]]; then
		"$@"
	else
		sudo "$@"
	fi
}

apt_install() {
	command -v apt-get >/dev/null || die "apt-get not found: install $* yourself"
	log "apt-get install $*"
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# psql_in runs psql as the cluster's PostgreSQL user against database $1.
psql_in() {
	local db=$1
	shift
	PGPASSWORD="$PG_PASSWORD" psql -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$db" -v ON_ERROR_STOP=1 -X "$@"
}

psql_admin() { psql_in postgres "$@"; }

port_open() { (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

port_free() { ! port_open "$1"; }

# wait_until runs a command until it succeeds, for at most $TIMEOUT seconds.
wait_until() {
	local what=$1 deadline=$((SECONDS + TIMEOUT))
	shift
	until "$@"; do
		((SECONDS < deadline)) || die "timed out after ${TIMEOUT}s waiting for $what"
		sleep 0.5
	done
}

# --- Processes ----------------------------------------------------------------------------------

pid_of() {
	[[ -s "$RUN/$1.pid" ]] || return 1
	cat "$RUN/$1.pid"
}

# alive is true when the pid file names a live process started from this cluster's bin/, so a pid
# reused by an unrelated process is never mistaken for ours.
alive() {
	local pid argv0
	pid=$(pid_of "$1") || return 1
	running "$pid" || return 1
	argv0=$(tr '\0' '\n' <"/proc/$pid/cmdline" | head -n 1)
	[[ "$argv0" == "$BIN/"* ]]
}

# exited is true when the process of a pid file is gone. Unlike ! alive, it holds no verdict on a
# process that is still becoming the program (a subshell about to exec it).
exited() {
	local pid
	pid=$(pid_of "$1") || return 0
	! running "$pid"
}

# start runs a command in the background in its own session, output appended to log/NAME.log and
# its pid in run/NAME.pid.
start() {
	local name=$1 dir=$2
	shift 2
	mkdir -p "$RUN" "$LOGS"
	(cd "$dir" && exec setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null) &
	echo $! >"$RUN/$name.pid"
	log "$name: started (pid $!, log $LOGS/$name.log)"
}

# running is true while pid is a process that has not exited (a zombie has).
running() {
	local state
	state=$(sed 's/.*) //; s/ .*//' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n "$state" && "$state" != Z ]]
}

# stop sends SIGTERM, waits up to 20 seconds, then SIGKILL; the pid file goes either way.
stop() {
	local name=$1 pid deadline
	if alive "$name"; then
		pid=$(pid_of "$name")
		kill -TERM "$pid" 2>/dev/null || true
		deadline=$((SECONDS + 20))
		while running "$pid" && ((SECONDS < deadline)); do
			sleep 0.2
		done
		if running "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
		log "$name: stopped (pid $pid)"
	fi
	rm -f "$RUN/$name.pid"
}
