package contract

import "time"

// The sandbox's settings for commands when tools.network and tools.limits.* do not say otherwise.
// They are written here rather than in the sandbox package so that the configuration's key table
// can name them as its defaults without linking the sandbox, whose init turns any program that
// links it into a possible sandbox init (the Slack bot and the starter's client commands must not).
const (
	// SandboxNetworkNone gives a command a network namespace of its own with only a loopback
	// device: nothing outside the sandbox, the worker's loopback included, is reachable.
	SandboxNetworkNone = "none"
	// SandboxNetworkHost shares the worker's network: an explicit opt-in for tasks that fetch
	// modules.
	SandboxNetworkHost = "host"

	// DefaultSandboxProcesses caps the processes and threads alive at once in one command.
	DefaultSandboxProcesses = 512
	// DefaultSandboxMemory caps one command's memory, in bytes.
	DefaultSandboxMemory = 2 << 30
	// DefaultSandboxCPUTime caps each process's CPU time.
	DefaultSandboxCPUTime = 5 * time.Minute
	// DefaultSandboxFileSize caps the size of any file a command writes, in bytes.
	DefaultSandboxFileSize = 1 << 30
)
