// Package defaults holds the command sandbox's settings for when the configuration says nothing.
//
// It imports nothing but the standard library, and must stay so. The sandbox links it, and the
// sandbox's init (which turns the worker's re-executed binary into a sandbox's init) runs only
// after every package the sandbox imports has initialised: a Temporal or protobuf import here
// would put their initialisation in front of every command, which doubled the cost of `true`
// (TestSandboxLinksLittle holds it). The configuration's key table names the same values
// without linking the sandbox, whose init must not reach the Slack bot or the starter's client
// commands.
package defaults

import "time"

const (
	// NetworkNone gives a command a network namespace of its own with only a loopback device:
	// nothing outside the sandbox, the worker's loopback included, is reachable.
	NetworkNone = "none"
	// NetworkHost shares the worker's network: an explicit opt-in for tasks that fetch modules.
	NetworkHost = "host"

	// Processes caps the processes and threads alive at once in one command.
	Processes = 512
	// Memory caps one command's memory, in bytes.
	Memory = 2 << 30
	// CPUTime caps each process's CPU time.
	CPUTime = 5 * time.Minute
	// FileSize caps the size of any file a command writes, in bytes.
	FileSize = 1 << 30
)
