//go:build !linux

package sandbox

import (
	"io"
	"os/exec"
)

// Cmd is a command prepared to run in a sandbox; there is none outside Linux.
type Cmd struct {
	// Exec is never set outside Linux.
	Exec *exec.Cmd
}

// Command fails outside Linux: there are no namespaces to build a sandbox from.
func Command(cfg Config, workdir string, args, env []string) (*Cmd, error) {
	return nil, ErrUnsupported
}

// Started does nothing outside Linux.
func (c *Cmd) Started() {}

// Report has nothing to say outside Linux.
func (c *Cmd) Report() (Report, bool) { return Report{}, false }

// Available says the sandbox cannot run outside Linux.
func Available(cfg Config) error { return ErrUnsupported }

// GoBin is empty outside Linux.
func GoBin() string { return "" }

// Run fails outside Linux.
func Run(cfg Config, workdir string, args, env []string, out io.Writer) (Report, error) {
	return Report{}, ErrUnsupported
}
