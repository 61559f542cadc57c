// Package connect is how every Keel program reaches Temporal: the worker, the starter's commands
// and the Slack bot dial through Dial, so they read the same settings in the same order (flags,
// then keel.yaml and KEEL_* keys, then the standard Temporal client profile: temporal.toml and the
// TEMPORAL_* variables, as the temporal CLI reads them), speak TLS, mTLS or API keys alike, and
// encrypt payloads alike once a key is configured. A connection that cannot work fails within
// temporal.connect_timeout with one line naming the setting to check.
package connect

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/keelrun/keel/internal/codec"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// Env reads environment variables; os.LookupEnv in programs, a map in tests.
type Env interface {
	LookupEnv(key string) (string, bool)
	Environ() []string
}

// osEnv is the process environment.
type osEnv struct{}

func (osEnv) LookupEnv(key string) (string, bool) { return os.LookupEnv(key) }
func (osEnv) Environ() []string                   { return os.Environ() }

// OSEnv is the process's environment.
var OSEnv Env = osEnv{}

// Keys reads the configured encryption keys (codec.keys); nil when none is configured.
func Keys(cfg config.Config, env Env) (*codec.Keyring, error) {
	if len(cfg.Codec.Keys) == 0 {
		return nil, nil
	}
	r, err := codec.ParseKeys(cfg.Codec.Keys, env.LookupEnv)
	if err != nil {
		return nil, &config.Error{Key: config.CodecKeys, Msg: err.Error()}
	}
	return r, nil
}

// Options are the client options cfg and the Temporal profile in env describe: address,
// namespace, TLS, API key and, with codec.keys, the encrypting data and failure converters.
// Keel's keys override the profile; a Keel address or namespace left at its default yields to
// the profile's.
func Options(cfg config.Config, env Env) (client.Options, error) {
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFileProfile: cfg.Temporal.Profile, EnvLookup: env,
	})
	if err != nil {
		return client.Options{}, &config.Error{Key: config.TemporalProfile,
			Msg: fmt.Sprintf("reading the Temporal client profile (temporal.toml, TEMPORAL_* variables): %v", err)}
	}
	overlay(&prof, cfg)
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, &config.Error{Key: "temporal.tls", Msg: tlsHint(err)}
	}
	if loopback(opts.HostPort) {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	keys, err := Keys(cfg, env)
	if err != nil {
		return client.Options{}, err
	}
	if keys != nil {
		opts.DataConverter = keys.DataConverter()
		opts.FailureConverter = keys.FailureConverter()
		dec, err := decodeResponses(keys)
		if err != nil {
			return client.Options{}, err
		}
		opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions, grpc.WithChainUnaryInterceptor(dec))
	}
	return opts, nil
}

// loopback says the server is on this machine. The SDK gzips every request and the server every
// answer; on the same machine that saves no bytes and costs both sides CPU on every call, so Keel
// turns compression off there.
func loopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	return contract.LoopbackHost(host)
}

// decodeResponses decrypts the payloads of every answer the server sends (search attributes
// aside), so the commands that read histories, memos and descriptions raw (attempts, watch,
// list) see what the data converter would: requests stay as the data converter encrypted them.
func decodeResponses(keys *codec.Keyring) (grpc.UnaryClientInterceptor, error) {
	return proxy.NewPayloadVisitorInterceptor(proxy.PayloadVisitorInterceptorOptions{
		Inbound: &proxy.VisitPayloadsOptions{
			Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
				return keys.Decode(ps)
			},
			SkipSearchAttributes: true,
		},
	})
}

// overlay puts Keel's temporal.* keys over the profile.
func overlay(prof *envconfig.ClientConfigProfile, cfg config.Config) {
	t := cfg.Temporal
	if prof.Address == "" || !isDefault(config.TemporalAddress, t.Address) {
		prof.Address = t.Address
	}
	if prof.Namespace == "" || !isDefault(config.TemporalNamespace, t.Namespace) {
		prof.Namespace = t.Namespace
	}
	if t.APIKey != "" {
		prof.APIKey = t.APIKey
	}
	tl := t.TLS
	if !tl.Enabled && tl.CA == "" && tl.Cert == "" && tl.Key == "" && tl.ServerName == "" {
		return
	}
	if prof.TLS == nil || prof.TLS.Disabled {
		prof.TLS = &envconfig.ClientConfigTLS{}
	}
	if tl.CA != "" {
		prof.TLS.ServerCACertPath, prof.TLS.ServerCACertData = tl.CA, nil
	}
	if tl.Cert != "" || tl.Key != "" {
		prof.TLS.ClientCertPath, prof.TLS.ClientCertData = tl.Cert, nil
		prof.TLS.ClientKeyPath, prof.TLS.ClientKeyData = tl.Key, nil
	}
	if tl.ServerName != "" {
		prof.TLS.ServerName = tl.ServerName
	}
}

// isDefault says whether v is the table's default of key, so a profile may set it instead.
func isDefault(key, v string) bool {
	s, ok := config.Lookup(key)
	return ok && fmt.Sprint(s.Default) == v
}

// tlsHint turns the profile's TLS error into the setting to fix.
func tlsHint(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "client cert"):
		return msg + ": set temporal.tls.cert and temporal.tls.key together (or TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH), both readable PEM files"
	case strings.Contains(msg, "server CA"):
		return msg + ": temporal.tls.ca (or TEMPORAL_TLS_SERVER_CA_CERT_PATH) must be a readable PEM file of the server's CA"
	}
	return msg
}

// Dial connects with the options Options builds plus what tune adds (logger, metrics, external
// storage), checks the server's health and the namespace within temporal.connect_timeout, and
// explains a failure in one line.
func Dial(ctx context.Context, cfg config.Config, tune func(*client.Options)) (client.Client, error) {
	return DialEnv(ctx, cfg, OSEnv, tune)
}

// DialEnv is Dial with the Temporal profile's variables read from env.
func DialEnv(ctx context.Context, cfg config.Config, env Env, tune func(*client.Options)) (client.Client, error) {
	opts, err := Options(cfg, env)
	if err != nil {
		return nil, err
	}
	if tune != nil {
		tune(&opts)
	}
	return DialOptions(ctx, opts, cfg.Temporal.ConnectTimeout)
}

// DefaultTimeout bounds connecting when no timeout is configured.
const DefaultTimeout = 10 * time.Second

// DialOptions dials opts and proves the connection within timeout with a call the namespace
// authorizes, so a refused key or a missing namespace shows now, not at the first session.
func DialOptions(ctx context.Context, opts client.Options, timeout time.Duration) (client.Client, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.DialContext(dctx, opts)
	if err == nil {
		_, err = c.WorkflowService().DescribeNamespace(dctx, &workflowservice.DescribeNamespaceRequest{Namespace: opts.Namespace})
		if err != nil {
			c.Close()
		}
	}
	if err != nil {
		return nil, Explain(opts, timeout, err)
	}
	return c, nil
}

// Error is a failed connection: Msg is the one line for the person, Err the SDK's error.
type Error struct {
	Msg string
	Err error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Explain names the setting behind a failed dial and its likely fix.
func Explain(opts client.Options, timeout time.Duration, err error) error {
	addr, ns := opts.HostPort, opts.Namespace
	tlsOn := opts.ConnectionOptions.TLS != nil
	msg := err.Error()
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	var why string
	switch code := serviceerror.ToStatus(err).Code(); {
	case has("certificate signed by unknown authority", "unknown certificate authority"):
		why = "the server's certificate is not signed by the CA the client trusts: set temporal.tls.ca (or TEMPORAL_TLS_SERVER_CA_CERT_PATH) to the CA that signed it"
	case has("certificate is valid for", "doesn't contain any IP SANs", "not valid for any names"):
		why = "the server's certificate does not carry the name the client expects: set temporal.tls.server_name (or TEMPORAL_TLS_SERVER_NAME) to a name in the certificate"
	case has("expired certificate", "certificate has expired", "expired or is not yet valid"):
		why = "a certificate has expired or is not yet valid: renew the client certificate in temporal.tls.cert (or TEMPORAL_TLS_CLIENT_CERT_PATH), or check the server's"
	case has("certificate required", "bad certificate", "handshake failure"):
		why = "the server requires a client certificate it accepts (mTLS): set temporal.tls.cert and temporal.tls.key (or TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH) to one its CA signed"
	case has("first record does not look like a TLS handshake"):
		why = "the server does not speak TLS: remove temporal.tls.* and temporal.api_key (or the profile's TLS settings), or point temporal.address at the TLS port"
	case tlsOn && len(opts.ConnectionOptions.TLS.Certificates) == 0 && has("broken pipe", "connection reset", "EOF"):
		// TLS 1.3 finishes the client's side of the handshake before the server checks for a
		// certificate, so a missing one shows as the server hanging up.
		why = "the server hung up after the TLS handshake, as a server that requires client certificates (mTLS) does: set temporal.tls.cert and temporal.tls.key (or TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH)"
	case !tlsOn && has("server preface", "connection reset", "EOF", "http2: frame too large"):
		why = "the server expects TLS and the client connects in plain text: set temporal.tls.ca (self-hosted) or temporal.tls.enabled, with temporal.tls.cert/key or temporal.api_key as the server requires"
	case code == codes.Unauthenticated || code == codes.PermissionDenied || has("Request unauthorized", "PermissionDenied", "Unauthenticated"):
		why = "the server refused the credentials: check temporal.api_key (or TEMPORAL_API_KEY) and that it may use namespace " + ns
	case code == codes.NotFound || has("Namespace "+ns+" is not found", "namespace not found"):
		why = "namespace " + ns + " does not exist on this server: check temporal.namespace (or TEMPORAL_NAMESPACE)"
	case has("connection refused", "no such host", "deadline exceeded", "DeadlineExceeded", "context deadline"):
		why = fmt.Sprintf("no Temporal server answered within %s: check temporal.address (or TEMPORAL_ADDRESS), and that the server runs", timeout)
	default:
		why = "check temporal.address, temporal.namespace and temporal.tls.* (or the TEMPORAL_* profile)"
	}
	return &Error{Msg: fmt.Sprintf("connecting to temporal at %s (namespace %s): %s (%s)", addr, ns, why, firstLine(msg)), Err: err}
}

// firstLine keeps the SDK's error to one line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
