package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/program"
)

var (
	envSecret = config.EnvName(config.EscalationGitHubSecret)
	envToken  = config.EnvName(config.EscalationGitHubToken)
	envTeams  = config.EnvName(config.EscalationGitHubTeams)
)

// setEnv gives the test a clean configuration environment with the given variables set.
func setEnv(t *testing.T, env map[string]string) {
	t.Chdir(t.TempDir())
	for _, k := range []string{"KEEL_CONFIG", envSecret, envToken, envTeams, config.EnvName(config.EscalationGitHubListen), config.EnvName(config.EscalationGitHubJobs)} {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// TestRunConfigErrors: a missing secret or token stops the bot with exit 2 and one line naming
// the key and its variable; a team that is not org/slug stops it too, before Temporal is dialled.
func TestRunConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		code int
		want []string
	}{
		{"secret", map[string]string{envToken: "ghp-1"}, program.ExitConfig, []string{config.EscalationGitHubSecret, envSecret, "required by the GitHub bot"}},
		{"token", map[string]string{envSecret: "s"}, program.ExitConfig, []string{config.EscalationGitHubToken, envToken}},
		{"rule file", map[string]string{envSecret: "s", envToken: "ghp-1", config.EnvName(config.EscalationGitHubJobs): "/nonexistent/keel-rules.yaml"}, 1, []string{"/nonexistent/keel-rules.yaml"}},
		{"team", map[string]string{envSecret: "s", envToken: "ghp-1", envTeams: "keepers", "KEEL_TEMPORAL_ADDRESS": "127.0.0.1:1"}, 1, []string{`team "keepers" is not org/team-slug`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			var stderr bytes.Buffer
			code := run(context.Background(), nil, &stderr)
			assert.Equal(t, tt.code, code, stderr.String())
			for _, w := range tt.want {
				assert.Contains(t, stderr.String(), w)
			}
			if tt.code == program.ExitConfig {
				assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
			}
		})
	}
}

// TestLinksNoSandbox: the GitHub bot only answers and starts sessions, so like the Slack bot it
// links neither the sandbox, the model gateway nor MCP (nor the starter's terminal code).
func TestLinksNoSandbox(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"/internal/tools/sandbox", "/internal/gateway", "/internal/tools/mcp", "/internal/cli"} {
			assert.False(t, strings.HasSuffix(dep, banned), "the GitHub bot links %s", dep)
		}
	}
}
