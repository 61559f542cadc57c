#!/usr/bin/env bash
# stop-cluster.sh stops what deploy/run-cluster.sh started: the workers, the fake gateway and the
# Temporal server (SIGTERM, then SIGKILL after 20 seconds). PostgreSQL keeps running, since it may be
# shared with other work.
#
# Usage:
#   deploy/stop-cluster.sh          stop the processes; databases and built binaries stay
#   deploy/stop-cluster.sh --reset  also drop the cluster's three databases and its state (not bin/),
#                                   so the next run-cluster.sh starts from empty databases
#
# It reads the same KEEL_CLUSTER_* settings as run-cluster.sh (state folder, PostgreSQL login,
# database prefix), and is safe to run when nothing is running.
set -euo pipefail

DEPLOY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$DEPLOY_DIR/.." && pwd)
# shellcheck source=deploy/cluster-lib.sh
source "$DEPLOY_DIR/cluster-lib.sh"

reset=false
case "${1:-}" in
"") ;;
--reset) reset=true ;;
*) die "unknown argument $1 (use --reset or nothing)" ;;
esac

shopt -s nullglob
for f in "$RUN"/worker-*.pid; do
	stop "$(basename "$f" .pid)"
done
stop gateway
stop temporal

if $reset; then
	for db in "$DB_TEMPORAL" "$DB_VISIBILITY" "$DB_KEEL"; do
		psql_admin -qc "DROP DATABASE IF EXISTS \"$db\"" && log "postgres: dropped database $db"
	done
	rm -rf "$CLUSTER_DIR"/{config,run,log,worker-*} "$CLUSTER_DIR/cluster.env"
	log "removed the cluster's state in $CLUSTER_DIR (kept bin/)"
fi
