#!/usr/bin/env bash
# run-cluster.sh brings up docker-compose.yml's topology from native binaries, without Docker:
#
#   PostgreSQL   reused when one answers on 127.0.0.1:$KEEL_CLUSTER_PG_PORT, else installed from
#                Debian's packages (apt-get install postgresql) and started
#   Temporal     Keel's build of the server (deploy/temporal-server, a Go module of its own, at the
#                version docker-compose.yml pins in x-temporal-version; its `sql` command is the
#                SQL schema tool), worker commands on; schema set up in two databases,
#                frontend on 127.0.0.1:$KEEL_CLUSTER_TEMPORAL_PORT; the default namespace and Keel's
#                search attributes registered with the temporal CLI
#   Keel         the fake model gateway (starter gateway) and two workers, transcript store on the
#                same PostgreSQL (store.backend=postgres)
#
# Usage:
#   deploy/run-cluster.sh            bring everything up (or check it is up); prints what runs where
#   deploy/run-cluster.sh version    print the Temporal server version the cluster uses
#   deploy/run-cluster.sh build      link the Temporal server (with its SQL tool) into $KEEL_CLUSTER_BIN,
#                                    building it into Keel's cache only when it is not there; start nothing
#   deploy/run-cluster.sh render-config  write the server's configuration only; print its path
#   deploy/stop-cluster.sh [--reset] stop it (--reset also drops its databases)
#
# The script is idempotent: a second run reuses the built binaries, the databases and every process
# that is still alive, and starts only what is missing (for example a worker that was killed).
# The Temporal server is the build the dev server launcher caches (Keel's cache folder, keyed by the
# content of deploy/temporal-server, see build_temporal): when neither the tests nor `starter dev`
# built it yet, the first run builds it, about 8 minutes on an idle 2-core machine.
#
# Everything it writes is under $KEEL_CLUSTER_DIR (default the cluster folder of Keel's state folder,
# ~/.local/state/keel/cluster, outside the repository, so that no session working there can read
# cluster.env or replace a binary):
#   bin/            temporal-server (server and schema tool: a link to the cached build), temporal
#                   (CLI, unless one is on PATH), starter, worker
#   config/         the server's configuration, from deploy/temporal.yaml.tmpl, and worker.yaml, the
#                   workers' (empty) Keel configuration file: they take theirs from KEEL_* variables
#   run/NAME.pid    pid of each process: temporal, gateway, worker-1, worker-2
#   log/NAME.log    its output
#   cluster.env     KEEL_* variables that point a starter (or a test) at this cluster
#
# Settings (environment):
#   KEEL_CLUSTER_DIR            state folder (default $KEEL_DEV_STATE_DIR/cluster, else
#                               $XDG_STATE_HOME/keel/cluster, else ~/.local/state/keel/cluster)
#   KEEL_CLUSTER_BIN            where binaries are built (default $KEEL_CLUSTER_DIR/bin); clusters
#                               in different state folders can share one, built once
#   KEEL_CLUSTER_PG_PORT        PostgreSQL port on 127.0.0.1 (default 5432)
#   KEEL_CLUSTER_PG_USER        PostgreSQL user (default postgres, trust auth; keel when this script
#   KEEL_CLUSTER_PG_PASSWORD    installed PostgreSQL itself, password keel)
#   KEEL_CLUSTER_DB_PREFIX      database names: PREFIX_temporal, PREFIX_temporal_visibility and
#                               PREFIX for Keel's store (default keel)
#   KEEL_CLUSTER_TEMPORAL_PORT  Temporal frontend gRPC port (default 7233); the server's other ports
#                               are derived from it, so it must be 1324 to 33061 (the membership
#                               ports, P-300 to P-294, are kept in a PostgreSQL smallint column)
#   KEEL_CLUSTER_GATEWAY_PORT   fake gateway port (default 8089)
#   KEEL_CLUSTER_METRICS_PORT   first worker's metrics port (default 9464; the next gets +1)
#   KEEL_CLUSTER_WORKERS        number of workers (default 2)
#   KEEL_CLUSTER_EFFECT_LOG     when set, the workers are built from internal/devkit/recworker and
#                               append one line per tool execution to this file (the drill's record)
#   KEEL_CLUSTER_TIMEOUT        seconds to wait for each process to become ready (default 90)
#
# Nothing listens on anything but 127.0.0.1.
set -euo pipefail

DEPLOY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$DEPLOY_DIR/.." && pwd)
# shellcheck source=deploy/cluster-lib.sh
source "$DEPLOY_DIR/cluster-lib.sh"

TEMPORAL_CLI_VERSION=v1.5.1

main() {
	case "${1:-up}" in
	up) up ;;
	version) echo "$TEMPORAL_VERSION" ;;
	build) build_temporal ;;
	render-config)
		mkdir -p "$CLUSTER_DIR/config"
		render_server_config
		render_worker_config
		echo "$CLUSTER_DIR/config/keel.yaml"
		;;
	-h | --help | help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' ;;
	*) die "unknown command $1 (use up, version, build, render-config or help)" ;;
	esac
}

up() {
	check_temporal_port
	mkdir -p "$CLUSTER_DIR"/{config,run,log}
	ensure_postgres
	build_temporal
	setup_schemas
	start_temporal
	register_namespace
	build_keel
	start_gateway
	render_worker_config
	start_workers
	write_env
	summary
}

# check_temporal_port rejects a frontend port whose derived ports do not fit: the server stores its
# membership ports (P-300 to P-294) in a PostgreSQL smallint column, so they must stay at or below
# 32767, and it dies at start-up when one does not.
check_temporal_port() {
	[[ "$TEMPORAL_PORT" =~ ^[0-9]+$ ]] || die "KEEL_CLUSTER_TEMPORAL_PORT=$TEMPORAL_PORT is not a port number"
	((TEMPORAL_PORT >= 1324 && TEMPORAL_PORT <= 33061)) ||
		die "KEEL_CLUSTER_TEMPORAL_PORT=$TEMPORAL_PORT is out of range: use 1324 to 33061 (the server's membership ports, P-300 to P-294, must be 1024 to 32767)"
}

# --- PostgreSQL ---------------------------------------------------------------------------------

ensure_postgres() {
	if ! command -v pg_isready >/dev/null || ! command -v psql >/dev/null; then
		apt_install postgresql-client
	fi
	if pg_isready -q -h 127.0.0.1 -p "$PG_PORT"; then
		log "postgres: reusing the server on 127.0.0.1:$PG_PORT"
	else
		install_postgres
	fi
	if ! psql_admin -c 'SELECT 1' >/dev/null 2>&1; then
		die "postgres: cannot log in to 127.0.0.1:$PG_PORT as $PG_USER; set KEEL_CLUSTER_PG_USER and KEEL_CLUSTER_PG_PASSWORD"
	fi
	ensure_database "$DB_KEEL"
}

# install_postgres installs Debian's PostgreSQL, starts it on $PG_PORT (loopback only, the package
# default) and creates a password-authenticated role for this script, recorded in pg.env so later
# runs log in the same way.
install_postgres() {
	log "postgres: nothing answers on 127.0.0.1:$PG_PORT; installing Debian's postgresql"
	apt_install postgresql
	local ver
	ver=$(ls /usr/lib/postgresql | sort -V | tail -1)
	if ! pg_isready -q -h 127.0.0.1 -p "$PG_PORT"; then
		if pg_lsclusters -h 2>/dev/null | awk -v p="$PG_PORT" '$3 == p {found=1} END {exit !found}'; then
			as_root pg_ctlcluster "$(pg_lsclusters -h | awk -v p="$PG_PORT" '$3 == p {print $1; exit}')" \
				"$(pg_lsclusters -h | awk -v p="$PG_PORT" '$3 == p {print $2; exit}')" start
		else
			as_root pg_createcluster --port "$PG_PORT" --start "$ver" "keel$PG_PORT"
		fi
	fi
	wait_until "postgres on 127.0.0.1:$PG_PORT" pg_isready -q -h 127.0.0.1 -p "$PG_PORT"
	if [[ -z "${KEEL_CLUSTER_PG_USER:-}" ]]; then
		PG_USER=keel PG_PASSWORD=keel
		STORE_DSN=$(store_dsn)
		as_root runuser -u postgres -- psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qc \
			"DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'keel') THEN CREATE ROLE keel LOGIN CREATEDB PASSWORD 'keel'; END IF; END \$\$"
		printf 'PG_USER=%q\nPG_PASSWORD=%q\n' "$PG_USER" "$PG_PASSWORD" >"$CLUSTER_DIR/pg.env"
	fi
}

ensure_database() {
	local db=$1
	if [[ -z $(psql_admin -Atc "SELECT 1 FROM pg_database WHERE datname = '$db'") ]]; then
		log "postgres: creating database $db"
		psql_admin -qc "CREATE DATABASE \"$db\""
	fi
}

# --- Temporal -----------------------------------------------------------------------------------

# build_temporal links bin/temporal-server to the build of deploy/temporal-server the dev server
# launcher keeps in Keel's cache (devserver.FindServer, keyed by the module's content), building
# it there only when the cache lacks that content: the tests, `starter dev` and the cluster share
# one build. Its go.mod must pin the version docker-compose.yml names.
build_temporal() {
	local src=$DEPLOY_DIR/temporal-server cached
	grep -qF "go.temporal.io/server v$TEMPORAL_VERSION" "$src/go.mod" ||
		die "temporal: $src/go.mod does not require go.temporal.io/server v$TEMPORAL_VERSION (x-temporal-version in docker-compose.yml)"
	mkdir -p "$BIN"
	cached=$(cd "$REPO" && go run ./internal/devkit/devserver/cmd/findserver) ||
		die "temporal: finding or building the server v$TEMPORAL_VERSION failed (see above)"
	if [[ "$(readlink "$BIN/temporal-server" 2>/dev/null)" != "$cached" ]]; then
		log "temporal: the server v$TEMPORAL_VERSION is $cached"
		ln -sfn "$cached" "$BIN/temporal-server"
	fi
	rm -f "$BIN/temporal-server.src"
}

# setup_schemas creates Temporal's two databases and brings both schemas to the version the server
# expects; update-schema applies only what is missing, so it is safe every time.
setup_schemas() {
	local pair db schema
	for pair in "$DB_TEMPORAL:temporal" "$DB_VISIBILITY:visibility"; do
		db=${pair%%:*} schema=${pair##*:}
		ensure_database "$db"
		if [[ -z $(psql_in "$db" -Atc "SELECT to_regclass('public.schema_version')") ]]; then
			log "temporal: setting up the $schema schema in $db"
			sql_tool --db "$db" setup-schema -v 0.0 >>"$LOGS/schema.log" 2>&1 ||
				die "temporal: setting up the $schema schema in $db failed; see $LOGS/schema.log"
		fi
		sql_tool --db "$db" update-schema --schema-name "postgresql/v12/$schema" >>"$LOGS/schema.log" 2>&1 ||
			die "temporal: updating the $schema schema in $db failed; see $LOGS/schema.log"
	done
}

sql_tool() {
	SQL_PASSWORD="$PG_PASSWORD" "$BIN/temporal-server" sql --plugin postgres12 --ep 127.0.0.1 --port "$PG_PORT" --user "$PG_USER" "$@"
}

start_temporal() {
	render_server_config
	if alive temporal; then
		log "temporal: already running (pid $(pid_of temporal))"
	else
		port_free "$TEMPORAL_PORT" || die "temporal: port $TEMPORAL_PORT is taken by another process; set KEEL_CLUSTER_TEMPORAL_PORT"
		start temporal "$CLUSTER_DIR" "$BIN/temporal-server" start --config-file "$CLUSTER_DIR/config/keel.yaml"
	fi
	wait_until "temporal frontend on $TEMPORAL_ADDRESS" temporal_healthy
}

# temporal_healthy is true once the frontend answers a health check; it gives up at once when the
# server has exited, rather than waiting out the timeout.
temporal_healthy() {
	exited temporal && die "temporal: the server exited; see $LOGS/temporal.log"
	temporal_cli operator cluster health
}

render_server_config() {
	local p=$TEMPORAL_PORT
	sed -e "s|@@DB_TEMPORAL@@|$DB_TEMPORAL|g" -e "s|@@DB_VISIBILITY@@|$DB_VISIBILITY|g" \
		-e "s|@@PG_PORT@@|$PG_PORT|g" -e "s|@@PG_USER@@|$PG_USER|g" -e "s|@@PG_PASSWORD@@|$PG_PASSWORD|g" \
		-e "s|@@FRONTEND_PORT@@|$p|g" -e "s|@@FRONTEND_HTTP_PORT@@|$((p + 10))|g" \
		-e "s|@@HISTORY_PORT@@|$((p + 1))|g" -e "s|@@MATCHING_PORT@@|$((p + 2))|g" -e "s|@@WORKER_PORT@@|$((p + 6))|g" \
		-e "s|@@FRONTEND_MEMBERSHIP_PORT@@|$((p - 300))|g" -e "s|@@HISTORY_MEMBERSHIP_PORT@@|$((p - 299))|g" \
		-e "s|@@MATCHING_MEMBERSHIP_PORT@@|$((p - 298))|g" -e "s|@@WORKER_MEMBERSHIP_PORT@@|$((p - 294))|g" \
		-e "s|@@METRICS_PORT@@|$((p + 767))|g" -e "s|@@DYNAMIC_CONFIG@@|$CLUSTER_DIR/config/dynamicconfig.yaml|g" \
		"$DEPLOY_DIR/temporal.yaml.tmpl" >"$CLUSTER_DIR/config/keel.yaml.new"
	mv "$CLUSTER_DIR/config/keel.yaml.new" "$CLUSTER_DIR/config/keel.yaml"
	cp "$DEPLOY_DIR/dynamicconfig.yaml" "$CLUSTER_DIR/config/dynamicconfig.yaml"
}

# find_temporal_cli uses a temporal CLI on PATH, or builds the pinned one into bin/.
find_temporal_cli() {
	if [[ -z "${TEMPORAL_CLI:-}" ]]; then
		if command -v temporal >/dev/null; then
			TEMPORAL_CLI=$(command -v temporal)
		else
			if [[ ! -x "$BIN/temporal" ]]; then
				log "temporal: building the temporal CLI $TEMPORAL_CLI_VERSION into $BIN (about 3.5 minutes)"
				(cd "$CLUSTER_DIR" && GOBIN="$BIN" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION")
			fi
			TEMPORAL_CLI=$BIN/temporal
		fi
	fi
}

temporal_cli() {
	find_temporal_cli
	"$TEMPORAL_CLI" --address "$TEMPORAL_ADDRESS" --command-timeout 5s "$@" >/dev/null 2>&1
}

# register_namespace creates the default namespace and the search attributes Keel's sessions keep up
# to date, each only if missing. A new namespace takes a moment to reach every service, hence the
# retries.
register_namespace() {
	if ! temporal_cli operator namespace describe --namespace default; then
		log "temporal: registering namespace default"
		temporal_cli operator namespace create --namespace default --retention 72h ||
			die "temporal: registering namespace default failed"
	fi
	local sa
	for sa in KeelStatus:Keyword KeelTurns:Int KeelTokens:Int KeelPendingEscalation:Bool KeelPullRequest:Keyword KeelGitHubJob:KeywordList KeelTask:Keyword; do
		wait_until "search attribute ${sa%%:*}" search_attribute "${sa%%:*}" "${sa##*:}"
	done
}

# search_attribute is true once the attribute exists, registering it if it is missing.
search_attribute() {
	local name=$1 type=$2 list
	find_temporal_cli
	list=$("$TEMPORAL_CLI" --address "$TEMPORAL_ADDRESS" --command-timeout 5s operator search-attribute list --namespace default 2>/dev/null) ||
		return 1
	grep -qw "$name" <<<"$list" && return 0
	log "temporal: registering search attribute $name ($type)"
	temporal_cli operator search-attribute create --namespace default --name "$name" --type "$type"
	return 1
}

# --- Keel ---------------------------------------------------------------------------------------

build_keel() {
	log "keel: building starter and worker into $BIN"
	local worker=./worker
	[[ -n "$EFFECT_LOG" ]] && worker=./internal/devkit/recworker
	(cd "$REPO" && go build -o "$BIN/starter" ./starter && go build -o "$BIN/worker" "$worker")
}

start_gateway() {
	if alive gateway; then
		log "gateway: already running (pid $(pid_of gateway))"
	else
		port_free "$GATEWAY_PORT" || die "gateway: port $GATEWAY_PORT is taken by another process; set KEEL_CLUSTER_GATEWAY_PORT"
		start gateway "$CLUSTER_DIR" "$BIN/starter" gateway --listen "127.0.0.1:$GATEWAY_PORT"
	fi
	wait_until "fake gateway on 127.0.0.1:$GATEWAY_PORT" port_open "$GATEWAY_PORT"
}

# start_workers starts the workers one after another, each once the one before polls: workers that
# start together race to create the store's table, and PostgreSQL's CREATE TABLE IF NOT EXISTS
# is not safe against that race (one of them fails on pg_type's unique index and exits).
start_workers() {
	local i name
	for ((i = 1; i <= WORKERS; i++)); do
		name=worker-$i
		if alive "$name"; then
			log "$name: already running (pid $(pid_of "$name"))"
		else
			mkdir -p "$CLUSTER_DIR/$name"
			(
				export_keel_env
				export KEEL_METRICS_ADDRESS="127.0.0.1:$((METRICS_PORT + i - 1))"
				export KEEL_DEV_STATE_DIR="$CLUSTER_DIR/$name"
				if [[ -n "$EFFECT_LOG" ]]; then
					start "$name" "$CLUSTER_DIR/$name" "$BIN/worker" -effect-log "$EFFECT_LOG"
				else
					start "$name" "$CLUSTER_DIR/$name" "$BIN/worker"
				fi
			)
		fi
		wait_until "$name polling task queue keel" worker_polling "$name"
	done
}

# render_worker_config writes the workers' configuration file: empty, so that their configuration is
# the KEEL_* variables below alone and no keel.yaml of the user's (~/.config/keel) reaches them.
render_worker_config() {
	echo "# The workers of deploy/run-cluster.sh take their configuration from KEEL_* variables." >"$CLUSTER_DIR/config/worker.yaml"
}

# export_keel_env sets the configuration the workers read: the same KEEL_* keys docker-compose.yml
# gives them, pointed at this cluster.
export_keel_env() {
	export KEEL_CONFIG="$CLUSTER_DIR/config/worker.yaml"
	export KEEL_TEMPORAL_ADDRESS="$TEMPORAL_ADDRESS"
	export KEEL_TEMPORAL_NAMESPACE=default
	export KEEL_GATEWAY_PROVIDER=openai
	export KEEL_GATEWAY_BASE_URL="http://127.0.0.1:$GATEWAY_PORT/v1"
	export KEEL_GATEWAY_API_KEY=fake-gateway-key
	export KEEL_STORE_BACKEND=postgres
	export KEEL_STORE_DSN="$STORE_DSN"
	# The cluster runs no Web UI: sessions and escalation notices link to none.
	export KEEL_TEMPORAL_UI_URL=off
}

# worker_polling is true once the worker's process is among the task queue's pollers: the SDK's
# default identity starts with the pid.
worker_polling() {
	local pid
	pid=$(pid_of "$1") || return 1
	exited "$1" && die "$1 exited; see $LOGS/$1.log"
	find_temporal_cli
	"$TEMPORAL_CLI" --address "$TEMPORAL_ADDRESS" --command-timeout 5s task-queue describe \
		--namespace default --task-queue keel 2>/dev/null | grep -q "[[:space:]]$pid@"
}

write_env() {
	export_keel_env
	{
		echo "# Source this file to point a Keel starter at the cluster run-cluster.sh started."
		for v in KEEL_TEMPORAL_ADDRESS KEEL_TEMPORAL_NAMESPACE KEEL_TEMPORAL_UI_URL KEEL_GATEWAY_PROVIDER \
			KEEL_GATEWAY_BASE_URL KEEL_GATEWAY_API_KEY KEEL_STORE_BACKEND KEEL_STORE_DSN; do
			printf 'export %s=%q\n' "$v" "${!v}"
		done
	} >"$CLUSTER_DIR/cluster.env"
}

summary() {
	local name
	echo
	echo "keel cluster is up (state in $CLUSTER_DIR)"
	echo "  postgres     127.0.0.1:$PG_PORT  databases $DB_TEMPORAL, $DB_VISIBILITY, $DB_KEEL"
	echo "  temporal     $TEMPORAL_ADDRESS  pid $(pid_of temporal)  log $LOGS/temporal.log"
	echo "  gateway      http://127.0.0.1:$GATEWAY_PORT/v1  pid $(pid_of gateway)  log $LOGS/gateway.log"
	for ((i = 1; i <= WORKERS; i++)); do
		name=worker-$i
		echo "  $name     pid $(pid_of "$name")  pid file $RUN/$name.pid  log $LOGS/$name.log"
	done
	echo "  environment  source $CLUSTER_DIR/cluster.env"
	echo "  stop         $DEPLOY_DIR/stop-cluster.sh"
}

main "$@"
