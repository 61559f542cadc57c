package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// devOptions are the flags of `server start-dev`: the ones `temporal server start-dev` has and the
// SDK's testsuite.StartDevServer passes, plus the metrics port.
type devOptions struct {
	ip          string
	port        int
	httpPort    int
	uiPort      int
	metricsPort int
	headless    bool
	dbFile      string
	logLevel    string
	logFormat   string
	namespaces  multiFlag
	searchAttrs multiFlag
	dynamic     multiFlag
}

// multiFlag collects a flag given more than once.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseDevFlags(args []string) (devOptions, error) {
	var o devOptions
	fs := flag.NewFlagSet("server start-dev", flag.ContinueOnError)
	fs.StringVar(&o.ip, "ip", "127.0.0.1", "IP address the frontend, the Web UI and the metrics listen on")
	fs.IntVar(&o.port, "port", 7233, "frontend gRPC port")
	fs.IntVar(&o.httpPort, "http-port", 0, "frontend HTTP port (0 picks a free one)")
	fs.IntVar(&o.uiPort, "ui-port", 0, "Web UI port (0: the frontend port + 1000)")
	fs.IntVar(&o.metricsPort, "metrics-port", 0, "serve the server's Prometheus metrics on this port at /metrics (0: off)")
	fs.BoolVar(&o.headless, "headless", false, "do not serve the Web UI")
	fs.StringVar(&o.dbFile, "db-filename", "", "SQLite file that keeps the server's state (empty: in memory)")
	fs.StringVar(&o.logLevel, "log-level", "warn", "server log level: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "console", "server log format: console or json")
	fs.Var(&o.namespaces, "namespace", "namespace to create (repeatable; default is always created)")
	fs.Var(&o.searchAttrs, "search-attribute", "search attribute to register, NAME=TYPE (repeatable)")
	fs.Var(&o.dynamic, "dynamic-config-value", "dynamic config value, KEY=VALUE with VALUE in JSON (repeatable)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.uiPort == 0 {
		o.uiPort = o.port + 1000
	}
	return o, nil
}

// startDev runs the development server until SIGINT or SIGTERM.
func startDev(args []string) error {
	o, err := parseDevFlags(args)
	if err != nil {
		return err
	}
	dyn, err := dynamicValues(o.dynamic)
	if err != nil {
		return err
	}
	attrs, err := searchAttributes(o.searchAttrs)
	if err != nil {
		return err
	}
	cfg, err := devConfig(o, attrs)
	if err != nil {
		return err
	}
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Stdout: true, Level: o.logLevel, Format: o.logFormat}))
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(staticHosts(cfg)),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return authorization.NewNoopClaimMapper() }),
		temporal.WithDynamicConfigClient(dyn),
	)
	if err != nil {
		return fmt.Errorf("creating the server: %w", err)
	}
	var ui *uiserver.Server
	if !o.headless {
		ui = uiServer(o)
		go func() {
			if err := ui.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "temporal-server: the Web UI stopped:", err)
			}
		}()
	}
	if err := srv.Start(); err != nil {
		return fmt.Errorf("starting the server: %w", err)
	}
	fmt.Fprintf(os.Stderr, "temporal-server: frontend %s:%d", o.ip, o.port)
	if ui != nil {
		fmt.Fprintf(os.Stderr, ", Web UI http://%s:%d", o.ip, o.uiPort)
	}
	if o.metricsPort != 0 {
		fmt.Fprintf(os.Stderr, ", metrics http://%s:%d/metrics", o.ip, o.metricsPort)
	}
	fmt.Fprintln(os.Stderr)
	waitForSignal()
	if ui != nil {
		ui.Stop()
	}
	return srv.Stop()
}

func waitForSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	<-ch
}

// devDefaults are the values `temporal server start-dev` sets besides the server's own defaults.
var devDefaults = map[string]any{
	"history.cacheHostLevelMaxSize":                  8096,
	"frontend.namespaceRPS.visibility":               100,
	"frontend.enableServerVersionCheck":              false,
	"system.forceSearchAttributesCacheRefreshOnRead": true,
}

// dynamicValues parses KEY=VALUE pairs over devDefaults. VALUE is JSON (true, 10000, "text");
// anything that does not parse as JSON is taken as a string.
func dynamicValues(pairs []string) (dynamicconfig.StaticClient, error) {
	out := dynamicconfig.StaticClient{}
	for k, v := range devDefaults {
		out[dynamicconfig.MakeKey(k)] = v
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("dynamic config value %q is not KEY=VALUE", p)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			val = v
		}
		if f, ok := val.(float64); ok && f == float64(int64(f)) {
			val = int(f)
		}
		out[dynamicconfig.MakeKey(k)] = val
	}
	return out, nil
}

// searchAttributes parses NAME=TYPE pairs, TYPE being an indexed value type (Keyword, Int, Bool,
// Text, Double, Datetime, KeywordList).
func searchAttributes(pairs []string) (map[string]enumspb.IndexedValueType, error) {
	out := map[string]enumspb.IndexedValueType{}
	for _, p := range pairs {
		name, typ, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("search attribute %q is not NAME=TYPE", p)
		}
		t, err := enumspb.IndexedValueTypeFromString(typ)
		if err != nil || t == enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED {
			return nil, fmt.Errorf("search attribute %q: unknown type %q (use Keyword, Text, Int, Double, Bool, Datetime or KeywordList)", name, typ)
		}
		out[name] = t
	}
	return out, nil
}

const clusterName = "active"

func devConfig(o devOptions, attrs map[string]enumspb.IndexedValueType) (*config.Config, error) {
	var err error
	if o.httpPort == 0 {
		if o.httpPort, err = freePort(o.ip); err != nil {
			return nil, err
		}
	}
	var c config.Config
	c.Global.Membership.MaxJoinDuration = 30 * time.Second
	c.Global.Membership.BroadcastAddress = o.ip
	if o.metricsPort != 0 {
		c.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
			ListenAddress: net.JoinHostPort(o.ip, strconv.Itoa(o.metricsPort)),
			HandlerPath:   "/metrics",
		}}
	}
	sqlCfg, err := sqliteConfig(o, attrs)
	if err != nil {
		return nil, err
	}
	c.Persistence.DefaultStore = "sqlite-default"
	c.Persistence.VisibilityStore = "sqlite-default"
	c.Persistence.NumHistoryShards = 1
	c.Persistence.DataStores = map[string]config.DataStore{"sqlite-default": {SQL: sqlCfg}}
	frontend := net.JoinHostPort(o.ip, strconv.Itoa(o.port))
	c.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
			Enabled:                true,
			InitialFailoverVersion: 1,
			RPCAddress:             frontend,
			HTTPAddress:            net.JoinHostPort(o.ip, strconv.Itoa(o.httpPort)),
			ClusterID:              fmt.Sprintf("keel-dev-%d", rand.Int64()),
		}},
	}
	c.DCRedirectionPolicy.Policy = "noop"
	c.Services = map[string]config.Service{}
	for _, name := range []string{"frontend", "history", "matching", "worker"} {
		svc := config.Service{}
		svc.RPC.BindOnIP = o.ip
		if name == "frontend" {
			svc.RPC.GRPCPort, svc.RPC.HTTPPort = o.port, o.httpPort
		} else if svc.RPC.GRPCPort, err = freePort(o.ip); err != nil {
			return nil, err
		}
		c.Services[name] = svc
	}
	c.Archival.History.State = "disabled"
	c.Archival.Visibility.State = "disabled"
	c.NamespaceDefaults.Archival.History.State = "disabled"
	c.NamespaceDefaults.Archival.Visibility.State = "disabled"
	c.PublicClient.HostPort = frontend
	return &c, nil
}

// sqliteConfig is the SQLite store, in memory or in a file (given its schema the first time), with
// the namespaces and search attributes created in it.
func sqliteConfig(o devOptions, attrs map[string]enumspb.IndexedValueType) (*config.SQL, error) {
	c := config.SQL{PluginName: sqliteplugin.PluginName}
	if o.dbFile == "" {
		c.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		c.DatabaseName = strconv.FormatInt(rand.Int64N(1<<40), 10)
	} else {
		c.ConnectAttributes = map[string]string{"mode": "rwc"}
		c.DatabaseName = o.dbFile
		if _, err := os.Stat(o.dbFile); os.IsNotExist(err) {
			if _, err := os.Stat(filepath.Dir(o.dbFile)); err != nil {
				return nil, fmt.Errorf("checking the database file's folder: %w", err)
			}
			if err := sqliteschema.SetupSchema(&c); err != nil {
				return nil, fmt.Errorf("setting up the SQLite schema in %s: %w", o.dbFile, err)
			}
		}
	}
	names := append([]string{"default"}, o.namespaces...)
	seen := map[string]bool{}
	var nss []*sqliteschema.NamespaceConfig
	for _, ns := range names {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		nc, err := sqliteschema.NewNamespaceConfig(clusterName, ns, false, attrs)
		if err != nil {
			return nil, fmt.Errorf("configuring namespace %s: %w", ns, err)
		}
		nss = append(nss, nc)
	}
	if err := sqliteschema.CreateNamespaces(&c, nss...); err != nil {
		return nil, fmt.Errorf("creating the namespaces: %w", err)
	}
	return &c, nil
}

func staticHosts(c *config.Config) map[primitives.ServiceName]static.Hosts {
	host := func(name string) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Services[name].RPC.GRPCPort)))
	}
	return map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService: host("frontend"),
		primitives.HistoryService:  host("history"),
		primitives.MatchingService: host("matching"),
		primitives.WorkerService:   host("worker"),
	}
}

func uiServer(o devOptions) *uiserver.Server {
	return uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                o.ip,
		Port:                o.uiPort,
		TemporalGRPCAddress: net.JoinHostPort(o.ip, strconv.Itoa(o.port)),
		EnableUI:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true,
	}))
}

func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
