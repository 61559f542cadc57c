//go:build unix

package tools

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// DefaultGrace is how long a process group gets to exit after SIGTERM before SIGKILL.
const DefaultGrace = 2 * time.Second

// killWait bounds the wait for a group to vanish after SIGKILL (the kernel needs a moment).
const killWait = 5 * time.Second

// KillGroup stops a whole process group: SIGTERM, up to grace for it to exit, then SIGKILL, and
// it returns only once no live process of the group remains (or reports that some did). Stopping
// the group rather than the process reaches the grandchildren a shell or a test runner started.
// Callers must reap the group leader themselves (exec.Cmd.Wait) for it to count as gone.
func KillGroup(pgid int, grace time.Duration) error {
	if pgid <= 1 {
		return fmt.Errorf("stopping process group %d: refusing to signal that group", pgid)
	}
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stopping process group %d: %w", pgid, err)
	}
	if waitGone(pgid, grace) {
		return nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	if waitGone(pgid, killWait) {
		return nil
	}
	return fmt.Errorf("killing process group %d: still alive after %s", pgid, killWait)
}

// waitGone polls until the group has no live process or the time is up.
func waitGone(pgid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if !groupAlive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}
