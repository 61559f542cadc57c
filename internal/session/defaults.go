package session

import (
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
)

// SystemPrompt is the system prompt of every session started from the configuration.
const SystemPrompt = "You are a careful software engineer working in a sandboxed work directory. Use the tools to inspect, change and test code. When a tool call fails, read the feedback and do what it says. Answer briefly when the task is done."

// Defaults is what a session starts from when only the configuration speaks: the system prompt,
// the model and its retries, the tool policy, the limits, the escalation policy and the heartbeat
// timeout. The starter and the bots that start sessions (the GitHub bot's jobs) start from it, so
// their sessions agree; the caller adds the task, the work directory and any endpoint.
func Defaults(cfg config.Config) contract.SessionInput {
	in := contract.SessionInput{
		SystemPrompt: SystemPrompt,
		Settings: contract.Settings{
			ModelSettings:    contract.ModelSettings{Model: cfg.Gateway.Model, Retry: cfg.Gateway.Retry},
			ToolSettings:     contract.ToolSettings{Policy: cfg.Tools},
			HeartbeatTimeout: jsondur.Duration(cfg.Temporal.HeartbeatTimeout),
		},
		Limits:      cfg.Limits,
		Escalation:  cfg.Escalation.EscalationPolicy,
		TurnsPerRun: cfg.Temporal.TurnsPerRun,
	}
	if cfg.Gateway.Fake {
		// Asked for the scripted model: only then may a dev stack's scripted worker serve it.
		in.Endpoint = &contract.Endpoint{Scripted: true}
	}
	return in
}
