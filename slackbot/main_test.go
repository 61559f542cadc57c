package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/escalation"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func fullEnv() map[string]string {
	return map[string]string{envSecret: "sec", envToken: "xoxb-1", envTeam: "T1", envApprovers: "U1, U2 ,"}
}

func TestRunMissingKeys(t *testing.T) {
	tests := []struct {
		name    string
		drop    string
		wantKey string
	}{
		{"secret", envSecret, envSecret},
		{"token", envToken, envToken},
		{"team", envTeam, envTeam},
		{"approvers", envApprovers, envApprovers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fullEnv()
			delete(env, tt.drop)
			var stderr bytes.Buffer
			code := run(context.Background(), nil, envOf(env), &stderr)
			assert.Equal(t, 2, code)
			out := stderr.String()
			assert.Equal(t, 1, strings.Count(out, "\n"), "one line: %q", out)
			assert.Contains(t, out, tt.wantKey)
		})
	}
}

func TestRunTemporalUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	env := fullEnv()
	env[envTemporal] = addr
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	code := run(ctx, []string{"--listen", "127.0.0.1:0"}, envOf(env), &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "connecting to temporal at "+addr)
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(t *testing.T, c escalation.BotConfig)
	}{
		{name: "defaults", env: fullEnv(), check: func(t *testing.T, c escalation.BotConfig) {
			assert.Equal(t, "127.0.0.1:3000", c.Listen)
			assert.Equal(t, "127.0.0.1:7233", c.TemporalAddress)
			assert.Equal(t, "default", c.Namespace)
			assert.Equal(t, []string{"U1", "U2"}, c.Approvers)
			assert.Equal(t, "sec", c.SigningSecret)
			assert.Equal(t, "xoxb-1", c.BotToken)
			assert.Equal(t, "T1", c.TeamID)
		}},
		{name: "TEMPORAL_ADDRESS fallback", env: with(fullEnv(), envTemporal2, "10.0.0.1:7233"), check: func(t *testing.T, c escalation.BotConfig) {
			assert.Equal(t, "10.0.0.1:7233", c.TemporalAddress)
		}},
		{name: "KEEL_ wins over TEMPORAL_", env: with(with(fullEnv(), envTemporal2, "b:1"), envTemporal, "a:1"), check: func(t *testing.T, c escalation.BotConfig) {
			assert.Equal(t, "a:1", c.TemporalAddress)
		}},
		{name: "flags win over env", env: with(with(fullEnv(), envAPIURL, "http://env/"), envListen, "127.0.0.1:1"),
			args: []string{"--slack-api-url", "http://flag/", "--team", "T2", "--approvers", "U9", "--namespace", "ns"},
			check: func(t *testing.T, c escalation.BotConfig) {
				assert.Equal(t, "http://flag/", c.SlackAPIURL)
				assert.Equal(t, "T2", c.TeamID)
				assert.Equal(t, []string{"U9"}, c.Approvers)
				assert.Equal(t, "ns", c.Namespace)
				assert.Equal(t, "127.0.0.1:1", c.Listen)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newCommand(envOf(tt.env), &bytes.Buffer{})
			cmd.RunE = func(*cobra.Command, []string) error { return nil }
			require.NoError(t, cmd.ParseFlags(tt.args))
			c, err := loadConfig(cmd, envOf(tt.env))
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func with(m map[string]string, k, v string) map[string]string {
	m[k] = v
	return m
}
