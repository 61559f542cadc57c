// Package deps pins the modules Keel builds on while the packages that use them are written.
package deps

import (
	_ "github.com/anthropics/anthropic-sdk-go/v2"
	_ "github.com/compose-spec/compose-go/v2/loader"
	_ "github.com/google/jsonschema-go/jsonschema"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/slack-go/slack"
	_ "github.com/slack-go/slack/slacktest"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "github.com/stretchr/testify/mock"
	_ "github.com/stretchr/testify/require"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/sdk/testsuite"
	_ "go.temporal.io/sdk/worker"
	_ "golang.org/x/term"
)
