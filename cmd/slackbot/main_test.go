package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/logs"
	"github.com/keelrun/keel/internal/program"
	"github.com/keelrun/keel/internal/slackbot"
)

// The environment variables of the keys the bot reads, as the key table names them.
var (
	envSecret    = config.EnvName(config.EscalationSlackSigningSecret)
	envToken     = config.EnvName(config.EscalationSlackBotToken)
	envTeam      = config.EnvName(config.EscalationSlackTeamID)
	envApprovers = config.EnvName(config.EscalationSlackApprovers)
	envListen    = config.EnvName(config.EscalationSlackListen)
	envAPIURL    = config.EnvName(config.EscalationSlackAPIURL)
	envTemporal  = config.EnvName(config.TemporalAddress)
	envNamespace = config.EnvName(config.TemporalNamespace)
	envLogLevel  = config.EnvName(config.Log)
)

// setEnv gives the test a clean configuration environment (no keel.yaml, no stray Temporal
// variables) with the given variables set.
func setEnv(t *testing.T, env map[string]string) {
	t.Chdir(t.TempDir())
	for _, k := range []string{"KEEL_CONFIG", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", envTemporal, envNamespace,
		envSecret, envToken, envTeam, envApprovers, envListen, envAPIURL, "KEEL_ESCALATION_CHANNELS", envLogLevel} {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

func fullEnv() map[string]string {
	return map[string]string{envSecret: "sec", envToken: "xoxb-1", envTeam: "T1", envApprovers: "U1, U2 ,"}
}

func without(m map[string]string, k string) map[string]string {
	delete(m, k)
	return m
}

func with(m map[string]string, k, v string) map[string]string {
	m[k] = v
	return m
}

func TestRunConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantKey []string
	}{
		{"secret", without(fullEnv(), envSecret), []string{config.EscalationSlackSigningSecret, envSecret}},
		{"token", without(fullEnv(), envToken), []string{config.EscalationSlackBotToken, envToken}},
		{"team", without(fullEnv(), envTeam), []string{config.EscalationSlackTeamID, envTeam, "--team"}},
		{"approvers", without(fullEnv(), envApprovers), []string{config.EscalationSlackApprovers, envApprovers, "nobody could answer"}},
		{"bad value elsewhere in the configuration", with(fullEnv(), "KEEL_ESCALATION_DEADLINE", "soon"), []string{config.EscalationDeadline}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			var stderr bytes.Buffer
			code := run(context.Background(), nil, &stderr)
			assert.Equal(t, program.ExitConfig, code)
			out := stderr.String()
			assert.Equal(t, 1, strings.Count(out, "\n"), "one line: %q", out)
			for _, want := range tt.wantKey {
				assert.Contains(t, out, want)
			}
		})
	}
}

func TestRunTemporalUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	setEnv(t, with(fullEnv(), envTemporal, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	code := run(ctx, []string{"--listen", "127.0.0.1:0"}, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "connecting to temporal at "+addr)
}

func TestLoadConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keel.yaml")
	require.NoError(t, os.WriteFile(file, []byte("escalation:\n  slack:\n    team_id: TFILE\n    listen: 127.0.0.1:4000\n"), 0o600))
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(t *testing.T, c slackbot.RunConfig)
	}{
		{name: "defaults", env: fullEnv(), check: func(t *testing.T, c slackbot.RunConfig) {
			assert.Equal(t, "127.0.0.1:3000", c.Listen)
			assert.Equal(t, "127.0.0.1:7233", c.TemporalAddress)
			assert.Equal(t, "default", c.Namespace)
			assert.Equal(t, []string{"U1", "U2"}, c.Approvers)
			assert.Equal(t, "sec", c.SigningSecret)
			assert.Equal(t, "xoxb-1", c.BotToken)
			assert.Equal(t, "T1", c.TeamID)
			assert.Empty(t, c.SlackAPIURL)
			assert.Empty(t, c.LogLevel)
		}},
		{name: "KEEL_LOG sets the level", env: with(fullEnv(), envLogLevel, "error"), check: func(t *testing.T, c slackbot.RunConfig) {
			assert.Equal(t, "error", c.LogLevel)
		}},
		{name: "the worker's keys", env: with(with(fullEnv(), envAPIURL, "http://127.0.0.1:9/api/"), envListen, "0.0.0.0:3000"), check: func(t *testing.T, c slackbot.RunConfig) {
			assert.Equal(t, "http://127.0.0.1:9/api/", c.SlackAPIURL)
			assert.Equal(t, "0.0.0.0:3000", c.Listen)
		}},
		{name: "TEMPORAL_ADDRESS fallback", env: with(fullEnv(), "TEMPORAL_ADDRESS", "10.0.0.1:7233"), check: func(t *testing.T, c slackbot.RunConfig) {
			assert.Equal(t, "10.0.0.1:7233", c.TemporalAddress)
		}},
		{name: "KEEL_ wins over TEMPORAL_", env: with(with(fullEnv(), "TEMPORAL_ADDRESS", "b:1"), envTemporal, "a:1"), check: func(t *testing.T, c slackbot.RunConfig) {
			assert.Equal(t, "a:1", c.TemporalAddress)
		}},
		{name: "file, then env", env: with(without(fullEnv(), envTeam), envListen, "127.0.0.1:5000"), args: []string{"--config", file},
			check: func(t *testing.T, c slackbot.RunConfig) {
				assert.Equal(t, "TFILE", c.TeamID)
				assert.Equal(t, "127.0.0.1:5000", c.Listen)
			}},
		{name: "flags win over env", env: with(with(fullEnv(), envAPIURL, "http://env/"), envListen, "127.0.0.1:1"),
			args: []string{"--slack-api-url", "http://flag/", "--team", "T2", "--approvers", "U9,U8", "--namespace", "ns", "--temporal-address", "t:7", "--listen", "127.0.0.1:2"},
			check: func(t *testing.T, c slackbot.RunConfig) {
				assert.Equal(t, "http://flag/", c.SlackAPIURL)
				assert.Equal(t, "T2", c.TeamID)
				assert.Equal(t, []string{"U9", "U8"}, c.Approvers)
				assert.Equal(t, "ns", c.Namespace)
				assert.Equal(t, "t:7", c.TemporalAddress)
				assert.Equal(t, "127.0.0.1:2", c.Listen)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			cmd := newCommand(&bytes.Buffer{})
			cmd.RunE = func(*cobra.Command, []string) error { return nil }
			require.NoError(t, cmd.ParseFlags(tt.args))
			c, err := loadConfig(cmd)
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

// TestTemporalClientLogs: the bot's Temporal client logs through the bot's own logger, as the
// worker's does: by default its warnings reach standard error as structured lines and its routine
// info does not; log: error keeps only errors.
func TestTemporalClientLogs(t *testing.T) {
	tests := []struct {
		level      string
		want, lost []string
	}{
		{"", []string{`level=INFO msg="slack bot starting"`, `level=WARN msg="Failed to poll for task."`, "level=ERROR"}, []string{"Started Worker"}},
		{"error", []string{"level=ERROR"}, []string{"slack bot starting", "Failed to poll", "Started Worker"}},
	}
	for _, tt := range tests {
		t.Run("level="+tt.level, func(t *testing.T) {
			prev := slog.Default()
			defer slog.SetDefault(prev)
			var stderr bytes.Buffer
			logs.Operator(&stderr, tt.level).Info("slack bot starting")
			var o client.Options
			sdkLogs(config.Config{LogLevel: tt.level})(&o)
			require.NotNil(t, o.Logger)
			o.Logger.Info("Started Worker")
			o.Logger.Warn("Failed to poll for task.")
			o.Logger.Error("error line")
			for _, w := range tt.want {
				assert.Contains(t, stderr.String(), w)
			}
			for _, l := range tt.lost {
				assert.NotContains(t, stderr.String(), l)
			}
		})
	}
}

// TestLinksNoSandbox: the bot links neither the sandbox (whose init would make it a sandbox init)
// nor the gateway: the configuration it reads depends on nothing of Keel's but the contract.
func TestLinksNoSandbox(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"/internal/tools/sandbox", "/internal/gateway", "/internal/tools/mcp"} {
			assert.False(t, strings.HasSuffix(dep, banned), "the Slack bot links %s", dep)
		}
	}
}
