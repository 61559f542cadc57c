// Command temporal-server is the Temporal server Keel runs on: a single-process development server
// (SQLite, one namespace, Keel's search attributes, the Web UI) for the demo, `starter dev` and the
// tests, and the same server started from a configuration file for the PostgreSQL cluster in
// deploy/. It is a Go module of its own because the Temporal server and the SDK version Keel's
// workers use do not compile in one module.
//
// The Temporal CLI from v1.6 on cannot be installed with go install, and the last one that can
// (v1.5.1) embeds server v1.29.1, which lacks worker commands: the server pushing an activity's
// cancellation to the worker that runs it, so that activities need not heartbeat to learn of it.
// This program embeds a server that has them.
//
// Usage:
//
//	temporal-server server start-dev [flags]   development server (the flags of `temporal server start-dev`)
//	temporal-server start --config-file FILE    server from a configuration file (the cluster)
//	temporal-server sql ARGS...                 the SQL schema tool (temporal-sql-tool)
//	temporal-server --version                   the embedded server's version
package main

import (
	"fmt"
	"os"

	"go.temporal.io/server/common/headers"
	sqltool "go.temporal.io/server/tools/sql"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "temporal-server:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("missing command: use `server start-dev`, `start`, `sql` or `--version`")
	}
	switch args[0] {
	case "--version", "version":
		fmt.Println(headers.ServerVersion)
		return nil
	case "server":
		if len(args) < 2 || args[1] != "start-dev" {
			return fmt.Errorf("unknown command %q: the only server command is `server start-dev`", args)
		}
		return startDev(args[2:])
	case "start-dev":
		return startDev(args[1:])
	case "start":
		return startFromConfig(args[1:])
	case "sql":
		return sqltool.RunTool(append([]string{"temporal-sql-tool"}, args[1:]...))
	default:
		return fmt.Errorf("unknown command %q: use `server start-dev`, `start`, `sql` or `--version`", args[0])
	}
}
