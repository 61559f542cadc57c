package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/connect"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/certs"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestMutualTLS starts Keel's Temporal server with mTLS on loopback (certificates made here) and
// runs a session through a worker process and the starter, both connecting with the client
// certificate of a temporal.toml profile. A client without a certificate, one trusting another CA
// and one without TLS each fail within seconds, in one line naming the setting to fix.
func TestMutualTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	good, err := certs.Make(dir, "keel")
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.Make(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	addr := startTLSServer(ctx, t, dir, good)

	toml := filepath.Join(dir, "temporal.toml")
	profiles := fmt.Sprintf(`
[profile.secure]
address = %[1]q
namespace = "default"
[profile.secure.tls]
client_cert_path = %[2]q
client_key_path = %[3]q
server_ca_cert_path = %[4]q

[profile.nocert]
address = %[1]q
[profile.nocert.tls]
server_ca_cert_path = %[4]q

[profile.wrongca]
address = %[1]q
[profile.wrongca.tls]
client_cert_path = %[2]q
client_key_path = %[3]q
server_ca_cert_path = %[5]q

[profile.plain]
address = %[1]q
`, addr, good.ClientCert, good.ClientKey, good.CA, other.CA)
	if err := os.WriteFile(toml, []byte(profiles), 0o600); err != nil {
		t.Fatal(err)
	}
	queue := "q-" + t.Name()
	// Only the profile says where the server is and how to reach it.
	profileEnv := func(profile string, extra ...string) []string {
		var out []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "KEEL_TEMPORAL_") && !strings.HasPrefix(kv, "TEMPORAL_") {
				out = append(out, kv)
			}
		}
		out = append(out, "TEMPORAL_CONFIG_FILE="+toml, "TEMPORAL_PROFILE="+profile,
			"KEEL_TEMPORAL_TASK_QUEUE="+queue, "KEEL_DEV_STATE_DIR="+filepath.Join(dir, "state"), "KEEL_TEMPORAL_CONNECT_TIMEOUT=5s")
		return append(out, extra...)
	}

	t.Run("mistakes fail in seconds", func(t *testing.T) {
		cases := []struct{ profile, want string }{
			{"nocert", "set temporal.tls.cert and temporal.tls.key"},
			{"wrongca", "set temporal.tls.ca"},
			{"plain", "the server expects TLS"},
		}
		for _, c := range cases {
			t.Run(c.profile, func(t *testing.T) {
				cmd := exec.CommandContext(ctx, starter, "list")
				cmd.Env = profileEnv(c.profile)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				start := time.Now()
				err := cmd.Run()
				took := time.Since(start)
				line := strings.TrimSpace(stderr.String())
				if err == nil || took > 8*time.Second || !strings.Contains(line, c.want) || strings.Contains(line, "\n") {
					t.Fatalf("starter list with profile %s: %v after %s, stderr %q; want one line with %q within seconds", c.profile, err, took, line, c.want)
				}
				t.Logf("%s (%s): %s", c.profile, took.Round(time.Millisecond), line)
			})
		}
	})

	t.Run("a session over mTLS", func(t *testing.T) {
		workerBin, err := env.Build("./worker")
		if err != nil {
			t.Fatal(err)
		}
		gw := startGateway(t)
		environ := profileEnv("secure", "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw+"/v1")
		w := &workerProc{bin: workerBin, env: environ, t: t}
		w.start()
		defer w.kill()
		ws := t.TempDir()
		if err := demo.CopyWorkspace(ws); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, starter, "run", "--output", "jsonl", "--workdir", ws, "fix the failing test")
		cmd.Env = environ
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		if status := summaryStatus(stdout.String()); err != nil || status != string(contract.StatusCompleted) {
			t.Fatalf("starter run over mTLS: %v, status %q\nstderr:\n%s", err, status, stderr.String())
		}
		if got := readFile(t, filepath.Join(ws, demo.SourceFile)); !strings.Contains(got, demo.FixedLine) {
			t.Fatalf("the session did not fix %s:\n%s", demo.SourceFile, got)
		}
	})
}

// startTLSServer starts Keel's Temporal server with its frontend on mTLS: a dev server first
// creates the SQLite file (schema, namespace, search attributes) and stops, then the same binary
// serves that file from a configuration file whose frontend requires client certificates signed
// by set's CA. It returns the frontend's address once an mTLS client gets an answer.
func startTLSServer(ctx context.Context, t *testing.T, dir string, set certs.Set) string {
	t.Helper()
	db := filepath.Join(dir, "temporal.db")
	addr := freeAddr(t)
	seed, err := devserver.Start(ctx, devserver.Options{Address: addr, DBFile: db})
	if err != nil {
		t.Fatal(err)
	}
	if err := seed.Stop(); err != nil {
		t.Fatal(err)
	}
	bin, err := devserver.FindServer(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	ports := map[string]string{"Frontend": port}
	for _, name := range []string{"FrontendMembership", "FrontendHTTP", "History", "HistoryMembership", "Matching", "MatchingMembership", "Worker", "WorkerMembership"} {
		_, ports[name], _ = net.SplitHostPort(freeAddr(t))
	}
	var cfg bytes.Buffer
	err = tlsServerConfig.Execute(&cfg, map[string]any{"P": ports, "DB": db, "Certs": set,
		"Dynamic": filepath.Join(testenv.RepoRoot(), "deploy", "dynamicconfig.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(cfgFile, cfg.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "start", "--config-file", cfgFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		_ = logFile.Close()
	})
	opts, err := mtlsOptions(t, addr, set)
	if err != nil {
		t.Fatal(err)
	}
	ready := testenv.WaitFor(90*time.Second, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		c, err := connect.DialOptions(ctx, opts, 2*time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	select {
	case <-exited:
		ready = false
	default:
	}
	if !ready {
		log, _ := os.ReadFile(logFile.Name())
		t.Fatalf("the mTLS server never answered:\n%s", lastBytes(string(log), 3000))
	}
	return addr
}

// summaryStatus is the status of the summary line of a starter's JSONL output.
func summaryStatus(out string) string {
	status := ""
	for _, line := range strings.Split(out, "\n") {
		var ev struct{ Event, Status string }
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "summary" {
			status = ev.Status
		}
	}
	return status
}

// mtlsOptions are client options with set's client certificate and CA, through the same
// profile code the programs use.
func mtlsOptions(t *testing.T, addr string, set certs.Set) (client.Options, error) {
	cfg := env.Config(t, nil)
	cfg.Temporal.Address, cfg.Temporal.TLS.CA, cfg.Temporal.TLS.Cert, cfg.Temporal.TLS.Key = addr, set.CA, set.ClientCert, set.ClientKey
	cfg.Codec.Keys = nil
	return connect.Options(cfg, mapLookup{"TEMPORAL_CONFIG_FILE": os.DevNull + ".none"})
}

// mapLookup is an environment of its own, so no TEMPORAL_* variable of the test's process leaks
// into a client.
type mapLookup map[string]string

func (m mapLookup) LookupEnv(k string) (string, bool) { v, ok := m[k]; return v, ok }
func (m mapLookup) Environ() []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// tlsServerConfig is the server's configuration (the format of the server repository's config/
// folder): the dev server's SQLite file and cluster, every service on loopback, and the frontend
// requiring client certificates; the server's own worker reaches the frontend with one too.
var tlsServerConfig = template.Must(template.New("server").Parse(`
log:
  stdout: true
  level: error
persistence:
  defaultStore: sqlite-default
  visibilityStore: sqlite-default
  numHistoryShards: 1
  datastores:
    sqlite-default:
      sql:
        pluginName: "sqlite"
        databaseName: "{{.DB}}"
        connectAddr: "localhost"
        connectProtocol: "tcp"
        connectAttributes:
          mode: "rwc"
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
  tls:
    frontend:
      server:
        certFile: "{{.Certs.ServerCert}}"
        keyFile: "{{.Certs.ServerKey}}"
        requireClientAuth: true
        clientCaFiles: ["{{.Certs.CA}}"]
      client:
        serverName: "localhost"
        rootCaFiles: ["{{.Certs.CA}}"]
    systemWorker:
      certFile: "{{.Certs.ServerCert}}"
      keyFile: "{{.Certs.ServerKey}}"
      client:
        serverName: "localhost"
        rootCaFiles: ["{{.Certs.CA}}"]
services:
  frontend:
    rpc:
      grpcPort: {{.P.Frontend}}
      membershipPort: {{.P.FrontendMembership}}
      httpPort: {{.P.FrontendHTTP}}
      bindOnIP: "127.0.0.1"
  matching:
    rpc:
      grpcPort: {{.P.Matching}}
      membershipPort: {{.P.MatchingMembership}}
      bindOnIP: "127.0.0.1"
  history:
    rpc:
      grpcPort: {{.P.History}}
      membershipPort: {{.P.HistoryMembership}}
      bindOnIP: "127.0.0.1"
  worker:
    rpc:
      grpcPort: {{.P.Worker}}
      membershipPort: {{.P.WorkerMembership}}
      bindOnIP: "127.0.0.1"
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:{{.P.Frontend}}"
      httpAddress: "127.0.0.1:{{.P.FrontendHTTP}}"
dcRedirectionPolicy:
  policy: "noop"
archival:
  history:
    state: "disabled"
  visibility:
    state: "disabled"
namespaceDefaults:
  archival:
    history:
      state: "disabled"
    visibility:
      state: "disabled"
publicClient:
  hostPort: "127.0.0.1:{{.P.Frontend}}"
dynamicConfigClient:
  filepath: "{{.Dynamic}}"
  pollInterval: "10s"
`))
