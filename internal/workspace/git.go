package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/keelrun/keel/internal/textfmt"
)

// hardened are the settings every git the worker runs is given on its command line, where no
// repository's configuration can override them: the repository being fetched is hostile, and
// git runs here outside the sandbox as the worker's user. No hook runs (an empty hooks path), no
// fsmonitor, no submodule is fetched or recursed into, no local or ext:: transport is used, no
// redirect is followed (a token must not travel to another host), and every object fetched is
// checked (transfer.fsckObjects refuses trees with ".git" entries and similar tricks).
var hardened = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.attributesFile=/dev/null",
	"core.symlinks=true",
	"core.protectNTFS=true",
	"core.protectHFS=true",
	"submodule.recurse=false",
	"fetch.recurseSubmodules=false",
	"protocol.file.allow=never",
	"protocol.ext.allow=never",
	"protocol.allow=user",
	"http.followRedirects=false",
	"transfer.fsckObjects=true",
	"gc.auto=0",
	"transfer.unpackLimit=1",
	"advice.detachedHead=false",
	"init.defaultBranch=main",
}

// git runs git commands for the manager with an environment of its own, built from nothing: no
// system or global configuration (where a filter driver, an LFS smudge, hooks or credentials of
// the worker's user may be configured), an empty home, no prompts.
type git struct {
	bin  string
	home string
}

// run runs git with args in dir (may be empty) and returns its standard output. extraConfig are
// more name=value settings (the credential header goes here, in the environment of this one
// process and nowhere on disk).
func (g git) run(ctx context.Context, dir string, extraConfig []string, args ...string) (string, error) {
	return g.runEnv(ctx, dir, extraConfig, nil, args...)
}

// runEnv is run with more variables in git's environment: the ones Keel sets itself (an index,
// an object directory, an identity), never any of the worker's.
func (g git) runEnv(ctx context.Context, dir string, extraConfig, extraEnv []string, args ...string) (string, error) {
	full := make([]string, 0, 2*len(hardened)+len(args))
	for _, c := range hardened {
		full = append(full, "-c", c)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, g.bin, full...)
	cmd.Dir = dir
	cmd.Env = append(g.env(extraConfig), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &limited{b: &errb, n: 4096}
	if err := cmd.Run(); err != nil {
		verb := args[0]
		for i := 0; i < len(args)-1 && strings.HasPrefix(verb, "--"); i++ {
			verb = args[i+1]
		}
		return out.String(), fmt.Errorf("git %s: %w: %s", verb, err, textfmt.Harmless(strings.TrimSpace(errb.String())))
	}
	return out.String(), nil
}

// env is git's whole environment. Settings given through GIT_CONFIG_COUNT stay out of every file
// and every other process's environment.
func (g git) env(extraConfig []string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + g.home,
		"XDG_CONFIG_HOME=" + g.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false",
		"SSH_ASKPASS=/bin/false",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_PROTOCOL_FROM_USER=0",
		"GIT_ALLOW_PROTOCOL=https:http",
		"LC_ALL=C",
	}
	if len(extraConfig) > 0 {
		env = append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(extraConfig)))
		for i, c := range extraConfig {
			k, v, _ := strings.Cut(c, "=")
			env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, k), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, v))
		}
	}
	return env
}

// limited keeps the first n bytes written to it: git's stderr for an error message.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
