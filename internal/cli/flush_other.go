//go:build !linux

package cli

// flushInput is a no-op where tcflush is not wired up: discardInput still drops the reads the
// starter has taken.
func flushInput(int) {}
