package connect

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/devkit/certs"
)

// mapEnv is an environment for tests; it never reads the real one, nor the user's temporal.toml.
type mapEnv map[string]string

func (m mapEnv) LookupEnv(k string) (string, bool) { v, ok := m[k]; return v, ok }
func (m mapEnv) Environ() []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// frontend is a local gRPC server that answers the calls a dial makes, recording the
// authorization header each call brought and refusing any but "Bearer good-key".
type frontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu   sync.Mutex
	seen []string
}

func (f *frontend) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{Capabilities: &workflowservice.GetSystemInfoResponse_Capabilities{}}, nil
}

func (f *frontend) DescribeNamespace(context.Context, *workflowservice.DescribeNamespaceRequest) (*workflowservice.DescribeNamespaceResponse, error) {
	return &workflowservice.DescribeNamespaceResponse{}, nil
}

func (f *frontend) auth(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	got := strings.Join(md.Get("authorization"), ",")
	if strings.HasPrefix(info.FullMethod, "/temporal.") {
		f.mu.Lock()
		f.seen = append(f.seen, got)
		f.mu.Unlock()
		if got != "Bearer good-key" {
			return nil, status.Error(codes.Unauthenticated, "Request unauthorized.")
		}
	}
	return h(ctx, req)
}

// serve starts the frontend with TLS from set on loopback.
func serve(t *testing.T, set certs.Set) (*frontend, string) {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(set.ServerCert, set.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	f := &frontend{}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})), grpc.UnaryInterceptor(f.auth))
	workflowservice.RegisterWorkflowServiceServer(s, f)
	hs := health.NewServer()
	hs.SetServingStatus("temporal.api.workflowservice.v1.WorkflowService", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return f, ln.Addr().String()
}

func base(addr string) config.Config {
	var cfg config.Config
	cfg.Temporal.Address, cfg.Temporal.Namespace, cfg.Temporal.ConnectTimeout = addr, "default", 5*time.Second
	return cfg
}

// TestDialAPIKeyAndMistakes dials a TLS frontend that wants an API key: the key reaches it as the
// authorization header, and each mistake fails within seconds, in one line naming the setting.
func TestDialAPIKeyAndMistakes(t *testing.T) {
	dir := t.TempDir()
	good, err := certs.Make(dir, "good")
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.Make(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	f, addr := serve(t, good)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	_ = closed.Close()
	noFile := filepath.Join(dir, "none.toml")
	cases := []struct {
		name    string
		cfg     func(config.Config) config.Config
		env     mapEnv
		wantErr string
	}{
		{"profile variables", nil, mapEnv{"TEMPORAL_API_KEY": "good-key", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": good.CA}, ""},
		{"keel keys over the profile", func(c config.Config) config.Config {
			c.Temporal.APIKey, c.Temporal.TLS.CA = "good-key", good.CA
			return c
		}, mapEnv{"TEMPORAL_API_KEY": "stale-key"}, ""},
		{"refused key", nil, mapEnv{"TEMPORAL_API_KEY": "bad-key", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": good.CA}, "check temporal.api_key"},
		{"wrong CA", nil, mapEnv{"TEMPORAL_API_KEY": "good-key", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": other.CA}, "set temporal.tls.ca"},
		{"plain client against TLS", nil, mapEnv{}, "the server expects TLS"},
		{"wrong server name", func(c config.Config) config.Config {
			c.Temporal.APIKey, c.Temporal.TLS.CA, c.Temporal.TLS.ServerName = "good-key", good.CA, "temporal.example"
			return c
		}, mapEnv{}, "set temporal.tls.server_name"},
		{"nobody listens", func(c config.Config) config.Config { c.Temporal.Address = deadAddr; return c }, mapEnv{}, "check temporal.address"},
		{"half a client certificate", func(c config.Config) config.Config { c.Temporal.TLS.Cert = good.ClientCert; return c }, mapEnv{}, "set temporal.tls.cert and temporal.tls.key together"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base(addr)
			if c.cfg != nil {
				cfg = c.cfg(cfg)
			}
			c.env["TEMPORAL_CONFIG_FILE"] = noFile
			f.mu.Lock()
			f.seen = nil
			f.mu.Unlock()
			start := time.Now()
			cl, err := DialEnv(context.Background(), cfg, c.env, nil)
			took := time.Since(start)
			if took > 8*time.Second {
				t.Fatalf("the dial took %s", took)
			}
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				cl.Close()
				f.mu.Lock()
				defer f.mu.Unlock()
				if len(f.seen) == 0 || f.seen[0] != "Bearer good-key" {
					t.Fatalf("the server saw authorization %q, want Bearer good-key", f.seen)
				}
				return
			}
			if err == nil {
				cl.Close()
				t.Fatalf("dial succeeded, want %q", c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want one line with %q", err, c.wantErr)
			}
		})
	}
}

// TestOptionsOrder checks the order settings apply in: the profile file, its variables, then
// Keel's keys; a Keel address left at its default yields to the profile.
func TestOptionsOrder(t *testing.T) {
	dir := t.TempDir()
	toml := filepath.Join(dir, "temporal.toml")
	if err := os.WriteFile(toml, []byte(`
[profile.default]
address = "file-default:7233"
namespace = "file-ns"
[profile.cloud]
address = "cloud.example:7233"
namespace = "cloud-ns"
api_key = "file-key"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	def := func(key string) string { s, _ := config.Lookup(key); return s.Default.(string) }
	cases := []struct {
		name               string
		addr, ns, profile  string
		env                mapEnv
		wantAddr, wantNS   string
		wantTLS, wantCreds bool
	}{
		{"file default profile", def(config.TemporalAddress), def(config.TemporalNamespace), "", mapEnv{}, "file-default:7233", "file-ns", false, false},
		{"named profile with a key", def(config.TemporalAddress), def(config.TemporalNamespace), "cloud", mapEnv{}, "cloud.example:7233", "cloud-ns", true, true},
		{"TEMPORAL_PROFILE", def(config.TemporalAddress), def(config.TemporalNamespace), "", mapEnv{"TEMPORAL_PROFILE": "cloud"}, "cloud.example:7233", "cloud-ns", true, true},
		{"keel keys win", "keel:7233", "keel-ns", "cloud", mapEnv{}, "keel:7233", "keel-ns", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base(c.addr)
			cfg.Temporal.Namespace, cfg.Temporal.Profile = c.ns, c.profile
			c.env["TEMPORAL_CONFIG_FILE"] = toml
			opts, err := Options(cfg, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if opts.HostPort != c.wantAddr || opts.Namespace != c.wantNS || (opts.ConnectionOptions.TLS != nil) != c.wantTLS || (opts.Credentials != nil) != c.wantCreds {
				t.Fatalf("options %s %s tls=%v creds=%v", opts.HostPort, opts.Namespace, opts.ConnectionOptions.TLS != nil, opts.Credentials != nil)
			}
		})
	}
}

// TestCompressionOffOnLoopback: a server on this machine is reached without gzip, any other with
// the SDK's default.
func TestCompressionOffOnLoopback(t *testing.T) {
	cases := []struct {
		addr string
		off  bool
	}{
		{"127.0.0.1:7233", true},
		{"127.8.9.10:7233", true},
		{"localhost:7233", true},
		{"LocalHost:7233", true},
		{"[::1]:7233", true},
		{"10.0.0.5:7233", false},
		{"temporal.example:7233", false},
		{"[2001:db8::1]:7233", false},
	}
	for _, c := range cases {
		t.Run(c.addr, func(t *testing.T) {
			opts, err := Options(base(c.addr), mapEnv{})
			if err != nil {
				t.Fatal(err)
			}
			_, off := opts.ConnectionOptions.GrpcCompression.(*client.GrpcCompressionNone)
			if off != c.off {
				t.Fatalf("compression off = %v for %s, want %v", off, c.addr, c.off)
			}
		})
	}
}
