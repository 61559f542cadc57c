package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/sandbox"
)

// runSandboxed runs one program in the sandbox: its own namespaces, only the work directory
// writable, no network unless configured, the limits set. The sandbox's init reaps every process
// the command starts and says whether any outlived it; on a timeout or cancel it is asked to stop
// them (see waitSandboxed), and killing it ends them all.
func (b *Box) runSandboxed(ctx context.Context, root string, words []string, timeout time.Duration, limited bool, out *capture) contract.ToolResult {
	cfg := *b.Sandbox
	sc, err := sandbox.Command(cfg, root, words, sandboxEnv(cfg.CacheDir != "", sandbox.GoBin()))
	if errors.Is(err, sandbox.ErrBusy) {
		return refused("The command was not started because too many commands are running on this worker at once; nothing was run and nothing changed. " +
			"Retry shortly.")
	}
	if err != nil {
		b.sandboxFailed(err)
		return refused("The command could not be started because its sandbox could not be prepared; nothing was run and nothing changed. " +
			"Retry as is; if it fails again, conclude and report that commands cannot run in this work directory.")
	}
	run, err := startLocked(sc.Exec, b.outputSink(out))
	sc.Started()
	if err != nil {
		sc.Report() // releases the report pipe; there is nothing in it
		b.sandboxFailed(fmt.Errorf("starting the sandbox's init: %w", err))
		return refused("The command could not be started because the system refused to create its sandbox; nothing was run and nothing changed. " +
			"Retry as is; if it fails again, conclude and report that commands cannot run.")
	}
	reason := waitSandboxed(ctx, run, sc, timeout)
	run.drain(readerDrain)
	rep, ok := sc.Report()
	switch {
	case reason == notStopped && ok && rep.Problem == sandbox.ProblemNotFound:
		return refused(fmt.Sprintf("The program %q is not available inside the sandbox commands run in (it holds the system's programs, the Go toolchain and the work directory); "+
			"nothing was run and nothing changed. Use another program.", words[0]))
	case reason == notStopped && ok && rep.Problem == sandbox.ProblemNotExecutable:
		return notStartable(words[0])
	case reason == notStopped && ok && rep.Problem != "":
		b.sandboxFailed(fmt.Errorf("setting up the sandbox: %s", rep.Problem))
		return refused("The command could not be started because its sandbox failed to set up; nothing was run and nothing changed. " +
			"Retry as is; if it fails again, conclude and report that commands cannot run.")
	}
	o := outcome{known: ok, code: rep.Code, signal: syscall.Signal(rep.Signal), leftovers: rep.Leftovers}
	text := out.String()
	o.limit = limitHit(sc.Limits(), rep, o, text)
	res := commandResult(reason, o, timeout, limited, text)
	if note := gitUndoneNote(rep.GitUndone); note != "" {
		head, tail, _ := strings.Cut(res.Content, "\n\n")
		res.Content = head + " " + note + "\n\n" + tail
	}
	return res
}

// gitUndoneNote tells the model what the worker undid of the command's changes to git's control
// files, and what it may do with the repository instead; "" when nothing was undone.
func gitUndoneNote(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("Git's control files are read-only to commands (git runs them as the user on the host), so what the command did to %s "+
		"was undone once it ended. Change the repository with git commands that write objects and refs (git add, git commit, git checkout); "+
		"its configuration, hooks and info folder stay as the user set them.", strings.Join(quoted, ", "))
}

// waitSandboxed waits for the sandbox's init to end. On a timeout or cancellation it asks the init
// to stop the command (SIGTERM to its processes, the grace period, SIGKILL) through a channel the
// command cannot reach: the init takes no signal, so that no command can end it. An init that
// has not ended by the grace period and killWait more is killed, and the kernel kills everything
// in its PID namespace.
func waitSandboxed(ctx context.Context, run *running, sc *sandbox.Cmd, timeout time.Duration) stopReason {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	reason := notStopped
	select {
	case err := <-run.exited:
		_ = err // the init's report, not its exit status, says how the command ended
		return notStopped
	case <-timer.C:
		reason = stoppedTimeout
	case <-ctx.Done():
		reason = stoppedCancel
	}
	sc.Stop()
	bound := time.NewTimer(sc.Grace() + killWait)
	defer bound.Stop()
	var err error
	select {
	case err = <-run.exited:
	case <-bound.C:
		_ = run.proc.Kill()
		err = <-run.exited
	}
	_ = err // as above: the report says how it ended
	return reason
}

// limitHit recognises a command that ran into one of the sandbox's limits, from what its cgroup
// counted, the signal the kernel sends or the words programs print, and says so with what to do
// next.
func limitHit(l sandbox.Limits, rep sandbox.Report, o outcome, output string) string {
	const after = " Nothing outside the work directory changed."
	shell := func(sig syscall.Signal) bool { return o.signal == sig || o.code == 128+int(sig) }
	lower := strings.ToLower(output)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(lower, w) {
				return true
			}
		}
		return false
	}
	processes := func() string {
		return fmt.Sprintf("It hit the sandbox's limit on processes (%d at once)."+after+
			" Start fewer processes at once, or conclude.", l.Processes)
	}
	if o.signal == 0 && o.code == 0 {
		// A command can succeed after forks were refused (a fork bomb that burned out, a
		// build that ran fewer jobs): the cgroup's count is the only sign left, and the model
		// should not read the run as unhindered.
		if rep.ProcessLimit {
			return processes()
		}
		return ""
	}
	switch {
	case rep.OutOfMemory:
		return fmt.Sprintf("It was stopped for using more memory than the sandbox's limit (%s for the command as a whole, files in /tmp included)."+after+
			" Use less memory (smaller inputs, fewer things at once, less in /tmp), or conclude.", mib(l.Memory))
	case shell(syscall.SIGXFSZ) || has("file too large"):
		return fmt.Sprintf("It hit the sandbox's limit on file size (%s per file), so a write was cut off."+after+
			" Write smaller files, or conclude.", mib(l.FileSize))
	case shell(syscall.SIGXCPU):
		return fmt.Sprintf("It hit the sandbox's limit on CPU time (%s per process)."+after+
			" Run less work per command, or conclude.", seconds(l.CPUTime))
	case has("cannot allocate memory", "out of memory", "memoryerror", "memory exhausted", "std::bad_alloc"):
		return fmt.Sprintf("It ran out of memory under the sandbox's limit (%s per process)."+after+
			" Use less memory (smaller inputs, fewer things at once), or conclude.", mib(l.Memory))
	case rep.ProcessLimit || has("resource temporarily unavailable", "cannot fork", "can't fork", "fork: retry"):
		return processes()
	}
	return ""
}

func mib(n int64) string {
	return fmt.Sprintf("%d MiB", n>>20)
}

// sandboxFailed tells the operator why a sandbox could not be set up, when someone listens.
func (b *Box) sandboxFailed(err error) {
	if b.SandboxFailed != nil {
		b.SandboxFailed(err)
	}
}
