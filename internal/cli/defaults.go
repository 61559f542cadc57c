package cli

import (
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// SessionDefaults is what a session starts from when only the configuration speaks: the system
// prompt, the model and its retries, the tool policy, the limits, the escalation policy and the
// heartbeat timeout. A bot that starts sessions (the GitHub bot's jobs) starts them from it, so
// its sessions and the starter's agree.
func SessionDefaults(cfg config.Config) contract.SessionInput {
	return sessionInput(cfg, sessionSpec{})
}
