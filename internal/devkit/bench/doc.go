// Package bench measures what Temporal orchestration costs Keel per turn, against a real dev
// server and an in-process worker: per-turn overhead against plain Go calls and against Temporal's
// own floor, throughput under concurrency, cost growth over a 1,000-turn session, and the server
// and worker settings that move the numbers. docs/benchmarks.md records the results.
//
// The benchmarks start their own dev servers and run for minutes, so they run only when asked:
//
//	go test ./internal/devkit/bench -run '^$' -bench . -benchtime 1x -timeout 30m -v
//
// The package's tests need no server and stay cheap under `go test ./...`.
package bench
