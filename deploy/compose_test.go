// Package deploy checks Keel's deployment files: docker-compose.yml (loaded and validated with the
// compose-spec loader, as docker compose itself would) and the native cluster scripts beside it.
package deploy

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/config"
)

const composeFile = "../docker-compose.yml"

// loadProject loads docker-compose.yml with every profile active and no environment from the
// machine, so interpolation falls back to the file's own defaults.
func loadProject(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{composeFile},
		cli.WithWorkingDirectory(".."),
		cli.WithProfiles([]string{"*"}),
	)
	require.NoError(t, err)
	p, err := opts.LoadProject(context.Background())
	require.NoError(t, err, "docker-compose.yml does not load")
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, ok := p.Services[name]
	require.True(t, ok, "service %s is missing", name)
	return s
}

// pinnedVersion is the Temporal version docker-compose.yml pins in x-temporal-version.
func pinnedVersion(t *testing.T, p *types.Project) string {
	t.Helper()
	v, ok := p.Extensions["x-temporal-version"].(string)
	require.True(t, ok, "x-temporal-version is missing or not a string: %#v", p.Extensions["x-temporal-version"])
	require.Regexp(t, `^\d+\.\d+\.\d+$`, v)
	return v
}

func TestComposeServices(t *testing.T) {
	p := loadProject(t)
	v := pinnedVersion(t, p)
	tests := []struct {
		name        string
		image       string // exact image, or empty for a Keel service built from the Dockerfile
		imagePrefix string
		command     []string
		ports       []string // "published:target"
	}{
		{name: "postgresql", image: "postgres:16"},
		{name: "temporal-setup", image: "temporalio/admin-tools:" + v},
		{name: "temporal", image: "temporalio/server:" + v, ports: []string{"7233:7233"}},
		{name: "temporal-init", image: "temporalio/admin-tools:" + v},
		{name: "temporal-ui", image: "temporalio/ui:2.42.1", ports: []string{"8080:8080"}},
		{name: "keel-gateway", command: []string{"starter", "gateway", "--listen", "0.0.0.0:8089"}, ports: []string{"8089:8089"}},
		{name: "keel-worker-1", command: []string{"worker"}},
		{name: "keel-worker-2", command: []string{"worker"}},
		{name: "slackbot", command: []string{"slackbot"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := service(t, p, tt.name)
			switch {
			case tt.image != "":
				assert.Equal(t, tt.image, s.Image)
			case tt.imagePrefix != "":
				assert.True(t, strings.HasPrefix(s.Image, tt.imagePrefix), "image %q does not start with %q", s.Image, tt.imagePrefix)
			default:
				require.NotNil(t, s.Build, "a Keel service is built from the Dockerfile")
				root, err := filepath.Abs("..")
				require.NoError(t, err)
				assert.Equal(t, root, s.Build.Context)
				assert.Equal(t, "Dockerfile", s.Build.Dockerfile)
				assert.Equal(t, []string(tt.command), []string(s.Command))
			}
			for _, want := range tt.ports {
				assert.Contains(t, ports(s), want)
			}
		})
	}
}

func ports(s types.ServiceConfig) []string {
	var out []string
	for _, p := range s.Ports {
		out = append(out, p.Published+":"+strconv.Itoa(int(p.Target)))
	}
	return out
}

func TestComposeDependencies(t *testing.T) {
	p := loadProject(t)
	tests := []struct {
		service, on, condition string
	}{
		{"temporal-setup", "postgresql", types.ServiceConditionHealthy},
		{"temporal", "temporal-setup", types.ServiceConditionCompletedSuccessfully},
		{"temporal-init", "temporal", types.ServiceConditionHealthy},
		{"temporal-ui", "temporal", types.ServiceConditionHealthy},
		{"keel-worker-1", "temporal", types.ServiceConditionHealthy},
		{"keel-worker-1", "temporal-init", types.ServiceConditionCompletedSuccessfully},
		{"keel-worker-1", "postgresql", types.ServiceConditionHealthy},
		{"keel-worker-2", "temporal", types.ServiceConditionHealthy},
		{"keel-worker-2", "temporal-init", types.ServiceConditionCompletedSuccessfully},
		{"keel-worker-2", "postgresql", types.ServiceConditionHealthy},
		{"slackbot", "temporal-init", types.ServiceConditionCompletedSuccessfully},
	}
	for _, tt := range tests {
		t.Run(tt.service+"->"+tt.on, func(t *testing.T) {
			dep, ok := service(t, p, tt.service).DependsOn[tt.on]
			require.True(t, ok, "%s does not depend on %s", tt.service, tt.on)
			assert.Equal(t, tt.condition, dep.Condition)
		})
	}
}

func TestComposeHealthchecks(t *testing.T) {
	p := loadProject(t)
	tests := []struct{ service, probe string }{
		{"postgresql", "pg_isready"},
		{"temporal", "7233"},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			hc := service(t, p, tt.service).HealthCheck
			require.NotNil(t, hc, "%s has no healthcheck", tt.service)
			assert.Contains(t, strings.Join(hc.Test, " "), tt.probe)
		})
	}
}

// TestComposeTemporalSetup checks the one-shot schema service does what the server needs: both
// databases, created, set up and updated from the image's postgres12 schema folders.
func TestComposeTemporalSetup(t *testing.T) {
	s := service(t, loadProject(t), "temporal-setup")
	assert.Equal(t, "postgres12", deref(s.Environment["SQL_PLUGIN"]))
	script := strings.Join(s.Command, "\n")
	for _, want := range []string{
		"temporal-sql-tool", "create-database", "setup-schema -v 0.0", "update-schema",
		"temporal:temporal", "temporal_visibility:visibility", "/etc/temporal/schema/postgresql/v12",
	} {
		assert.Contains(t, script, want)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestComposeKeelVariablesAreConfigKeys guards against a compose file that sets a variable no
// binary reads: every KEEL_* variable must be one the key table names (the Slack bot's included).
func TestComposeKeelVariablesAreConfigKeys(t *testing.T) {
	p := loadProject(t)
	known := map[string]bool{}
	for _, s := range config.Settings() {
		for _, env := range s.EnvNames() {
			known[env] = true
		}
	}
	seen := 0
	for name, s := range p.Services {
		for v := range s.Environment {
			if !strings.HasPrefix(v, "KEEL_") {
				continue
			}
			seen++
			assert.True(t, known[v], "service %s sets %s, which is no configuration key", name, v)
		}
	}
	assert.Greater(t, seen, 10, "expected the Keel services to be configured through KEEL_* variables")
}

// TestComposeWorkerConfigLoads feeds a worker's environment to config.Load, exactly as the worker
// binary does, and checks it points at the cluster's services.
func TestComposeWorkerConfigLoads(t *testing.T) {
	p := loadProject(t)
	for _, name := range []string{"keel-worker-1", "keel-worker-2"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KEEL_CONFIG", "")
			for k, v := range service(t, p, name).Environment {
				t.Setenv(k, deref(v))
			}
			cfg, err := config.Load("", nil, nil)
			require.NoError(t, err)
			assert.Equal(t, "temporal:7233", cfg.Temporal.Address)
			assert.Equal(t, "default", cfg.Temporal.Namespace)
			assert.Equal(t, "postgres", cfg.Store.Backend)
			dsn, err := url.Parse(cfg.Store.DSN)
			require.NoError(t, err)
			assert.Equal(t, "postgresql:5432", dsn.Host, "the store is the compose file's PostgreSQL")
			assert.Equal(t, "/keel", dsn.Path)
			gw, err := url.Parse(cfg.Gateway.BaseURL)
			require.NoError(t, err)
			assert.Equal(t, "keel-gateway:8089", gw.Host, "the workers use the fake gateway service")
			assert.NotEmpty(t, cfg.Metrics.Address)
		})
	}
}

// TestTemporalVersionMatchesNativeScript checks the native script runs the version the compose file
// pins, by asking the script itself.
func TestTemporalVersionMatchesNativeScript(t *testing.T) {
	p := loadProject(t)
	out := runScript(t, "run-cluster.sh", "version")
	assert.Equal(t, pinnedVersion(t, p), strings.TrimSpace(out))
}

// TestNativeServerConfig renders the server configuration the native script would use and checks
// it listens on loopback only, on the configured frontend port, with nothing left unfilled.
func TestNativeServerConfig(t *testing.T) {
	tests := []struct {
		name, port, dbPrefix string
	}{
		{"defaults", "", ""},
		{"other port and databases", "17233", "keeltest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := []string{}
			wantPort, wantDB := "7233", "keel_temporal"
			if tt.port != "" {
				env = append(env, "KEEL_CLUSTER_TEMPORAL_PORT="+tt.port)
				wantPort = tt.port
			}
			if tt.dbPrefix != "" {
				env = append(env, "KEEL_CLUSTER_DB_PREFIX="+tt.dbPrefix)
				wantDB = tt.dbPrefix + "_temporal"
			}
			path := strings.TrimSpace(runScriptEnv(t, "run-cluster.sh", []string{"render-config"}, env))
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			cfg := string(raw)
			assert.NotContains(t, cfg, "@@", "a placeholder was left unfilled")
			assert.Contains(t, cfg, "grpcPort: "+wantPort+"\n")
			assert.Contains(t, cfg, `rpcAddress: "127.0.0.1:`+wantPort+`"`)
			assert.Contains(t, cfg, `databaseName: "`+wantDB+`"`)
			assert.Contains(t, cfg, `databaseName: "`+wantDB+`_visibility"`)
			assert.Contains(t, cfg, `pluginName: "postgres12"`)
			binds := regexp.MustCompile(`(?m)^\s*(bindOnIP|broadcastAddress|listenAddress|connectAddr): "([^"]*)"`).FindAllStringSubmatch(cfg, -1)
			assert.Len(t, binds, 8, "four services, broadcast, metrics and two datastores")
			for _, b := range binds {
				assert.True(t, strings.HasPrefix(b[2], "127.0.0.1"), "%s is %q, not loopback", b[1], b[2])
			}
			assert.NotContains(t, cfg, "bindOnLocalHost")
		})
	}
}

// runScript runs a deploy script with its state in a temporary folder and returns its output.
func runScript(t *testing.T, script string, args ...string) string {
	t.Helper()
	return runScriptEnv(t, script, args, nil)
}

func runScriptEnv(t *testing.T, script string, args, env []string) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	cmd := exec.Command(bash, append([]string{script}, args...)...)
	cmd.Env = append(append(os.Environ(), "KEEL_CLUSTER_DIR="+t.TempDir()), env...)
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(t, err, "%s %v: %s", script, args, stderr)
	return string(out)
}

// TestScriptsParse checks every shell script in deploy/ is valid bash.
func TestScriptsParse(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	scripts, err := filepath.Glob("*.sh")
	require.NoError(t, err)
	require.Len(t, scripts, 3)
	for _, s := range scripts {
		t.Run(s, func(t *testing.T) {
			out, err := exec.Command(bash, "-n", s).CombinedOutput()
			assert.NoError(t, err, "%s", out)
		})
	}
}
