package main

import (
	"flag"
	"fmt"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // the cluster's store
	"go.temporal.io/server/temporal"
)

// startFromConfig runs every service from a configuration file (the format of the server
// repository's config/ folder) until SIGINT or SIGTERM. Dynamic config comes from the file the
// configuration's dynamicConfigClient names.
func startFromConfig(args []string) error {
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	file := fs.String("config-file", "", "the server's configuration file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("start needs --config-file")
	}
	cfg, err := config.Load(config.WithConfigFile(*file))
	if err != nil {
		return fmt.Errorf("loading the configuration %s: %w", *file, err)
	}
	logger := log.NewZapLogger(log.BuildZapLogger(cfg.Log))
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return fmt.Errorf("creating the authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return fmt.Errorf("creating the claim mapper: %w", err)
	}
	srv, err := temporal.NewServer(
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithConfig(cfg),
		temporal.WithLogger(logger),
		temporal.InterruptOn(temporal.InterruptCh()),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
	)
	if err != nil {
		return fmt.Errorf("creating the server: %w", err)
	}
	// With InterruptOn, Start returns once a signal has stopped every service.
	if err := srv.Start(); err != nil {
		return fmt.Errorf("running the server: %w", err)
	}
	return nil
}
