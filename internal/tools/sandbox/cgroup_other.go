//go:build !linux

package sandbox

// Enforcement says there are no limits to enforce outside Linux: there is no sandbox.
func Enforcement() string { return "sandbox limits: none, there is no sandbox outside Linux" }

// Limits are empty outside Linux.
func (c *Cmd) Limits() Limits { return Limits{} }

// Bounded reports whether commands get a cgroup of their own: never outside Linux.
func Bounded() bool { return false }
