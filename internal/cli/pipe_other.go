//go:build !linux

package cli

// outputGone takes every SIGPIPE for the reader of the output going away where the output's state
// is not polled.
func outputGone() bool { return true }
