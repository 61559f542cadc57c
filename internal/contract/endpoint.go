package contract

import (
	"fmt"
	"regexp"
	"strings"
)

// Endpoint is the model endpoint a session asks for (`starter run --provider --base-url --model
// --api-key-ref`): it belongs to the session, so it travels in SessionInput (through
// continue-as-new and into a fork) and in every ModelRequest, and whichever worker runs a model
// call serves it, or fails the call saying why. Empty fields are the worker's own settings
// (gateway.provider, gateway.base_url, gateway.model).
//
// API keys never travel: Key names one the worker's operator declared (gateway.keys), and a worker
// sends a declared key only to the base URL it was declared for, its own gateway.api_key (the key
// named DefaultKey) only to its own gateway.base_url. A session can therefore point a worker at any
// host, but never make it send a key there that was not meant for that host.
type Endpoint struct {
	Provider string `json:"provider,omitempty"`
	BaseURL  string `json:"base_url,omitempty"`
	Model    string `json:"model,omitempty"`
	// Key names the API key to send: a name declared in the worker's gateway.keys, or DefaultKey.
	// Empty sends the key the worker has for that base URL, if any.
	Key string `json:"key,omitempty"`
	// Scripted says the session asked for the scripted fake model (gateway.fake where it was
	// started: demo, run --dev, or a starter told so). A dev stack's scripted worker serves only
	// such sessions, so a session meant for a real model is never answered by the script.
	Scripted bool `json:"scripted,omitempty"`
}

// DefaultKey names a worker's own gateway.api_key.
const DefaultKey = "default"

// keyName is what a key's name may look like: short, lowercase (configuration keys are read
// case-insensitively), nothing a real API key resembles.
var keyName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)

// CheckKeyName says what is wrong with a key's name, or nil. A value that looks like a key itself
// is refused before it could reach a session's history.
func CheckKeyName(name string) error {
	switch {
	case strings.HasPrefix(name, "sk-") || len(name) > 40:
		return fmt.Errorf("%q looks like an API key itself: name a key the workers declare in gateway.keys instead; keys never go into a session's history", clipKey(name))
	case !keyName.MatchString(name):
		return fmt.Errorf("%q is not a key name (lowercase letters, digits, '.', '_' and '-', at most 40)", clipKey(name))
	}
	return nil
}

// clipKey shows the start of a value that may be a secret, never all of it.
func clipKey(s string) string {
	if len(s) > 6 {
		return s[:6] + "..."
	}
	return s
}
