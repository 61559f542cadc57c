// Package gitview asks git which of a work directory's files `git status` would not show: ignored
// ones (.gitignore, .git/info/exclude, the global excludes file) that git does not track, and
// tracked ones marked assume-unchanged or skip-worktree. A session's summary names them, so a
// file the model hid from review (a Go file with an init, listed in a .gitignore it wrote) is
// seen anyway.
//
// Everything in the work directory was written by the model, and the worker asking runs as
// root: git runs with no fsmonitor, no hooks, no untracked cache and no pager, from the worker's
// PATH, with none of the worker's GIT_* variables, and only the plumbing commands ls-files and
// check-ignore, which run no filter, alias or external program. It reads the repository's
// configuration, as it must to find the excludes file; that file is read-only to the model
// (docs/tools.md, Git's control files).
package gitview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Timeout bounds each git command.
const Timeout = 20 * time.Second

// maxOutput bounds what is read of a git command's output.
const maxOutput = 64 << 20

// safety are the settings every git command runs with, over whatever the repository says.
var safety = []string{
	"--no-pager",
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.untrackedCache=false",
	// The worker (root) asks about a repository another user owns; what it runs reads only.
	"-c", "safe.directory=*",
}

// ErrNoGit means git is not installed where the worker looks.
var ErrNoGit = errors.New("git is not installed")

// Hidden says, for each of present and deleted (paths relative to workdir, slash-separated, as a
// snapshot names them; present ones exist, deleted ones no longer do) whose change git status in
// workdir would not show, why: "ignored by SOURCE:LINE: PATTERN", "assume-unchanged" or
// "skip-worktree". Only present paths are checked against the exclude rules: git stops at a path
// beyond a symbolic link, which a deleted one may now be, and an untracked file that is gone
// leaves nothing to review. A workdir outside any git work tree hides nothing. On an error the
// answer holds what git said before it.
func Hidden(ctx context.Context, workdir string, present, deleted []string) (map[string]string, error) {
	out := map[string]string{}
	paths := append(append([]string(nil), present...), deleted...)
	if len(paths) == 0 {
		return out, nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		return out, ErrNoGit
	}
	if inside, err := run(ctx, workdir, nil, "rev-parse", "--is-inside-work-tree"); err != nil || strings.TrimSpace(string(inside)) != "true" {
		return out, nil
	}
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	// Tracked files whose changes git status does not look at. -v writes assume-unchanged
	// files' tags in lowercase; skip-worktree files are tagged S.
	listed, err := run(ctx, workdir, nil, "ls-files", "-z", "-v")
	if err != nil {
		return out, fmt.Errorf("listing the tracked files of %s: %w", workdir, err)
	}
	for rec := range bytes.SplitSeq(listed, []byte{0}) {
		if len(rec) < 3 || rec[1] != ' ' {
			continue
		}
		p := string(rec[2:])
		if !want[p] {
			continue
		}
		switch tag := rec[0]; {
		case tag == 'S' || tag == 's':
			out[p] = "skip-worktree"
		case tag >= 'a' && tag <= 'z':
			out[p] = "assume-unchanged"
		}
	}
	// Untracked files an exclude rule hides. check-ignore leaves tracked files out: git status
	// shows their changes whatever the rules say.
	if len(present) == 0 {
		return out, nil
	}
	var in bytes.Buffer
	for _, p := range present {
		in.WriteString(p)
		in.WriteByte(0)
	}
	ignored, err := run(ctx, workdir, &in, "check-ignore", "-z", "-v", "--stdin")
	if err != nil {
		err = fmt.Errorf("asking git which files of %s it ignores: %w", workdir, err)
	}
	f := bytes.Split(ignored, []byte{0})
	for i := 0; i+3 < len(f); i += 4 {
		source, line, pattern, p := string(f[i]), string(f[i+1]), string(f[i+2]), string(f[i+3])
		if !want[p] || strings.HasPrefix(pattern, "!") {
			continue
		}
		if _, ok := out[p]; !ok {
			out[p] = fmt.Sprintf("ignored by %s:%s: %s", source, line, pattern)
		}
	}
	return out, err
}

// run runs one git command in dir and returns its output; check-ignore's exit status 1 (no path
// ignored) is not a failure.
func run(ctx context.Context, dir string, stdin io.Reader, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append(append([]string{"-C", dir}, safety...), args...)...)
	cmd.Env = environ()
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &limited{w: &stderr, n: 4096}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	out, rerr := io.ReadAll(io.LimitReader(stdout, maxOutput))
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && len(args) > 0 && args[0] == "check-ignore" {
		err = nil
	}
	if err != nil {
		return out, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, rerr
}

// environ is the worker's environment without git's own variables (GIT_DIR, GIT_CONFIG_*, ...),
// which would point git elsewhere or add settings.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// limited writes at most n bytes to w and drops the rest.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}
