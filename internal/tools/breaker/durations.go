package breaker

import (
	"encoding/json"
	"time"

	"github.com/keelrun/keel/internal/jsondur"
)

// MarshalJSON writes Window and Cooldown as text, so a session's input reads "2m0s", not
// 120000000000.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	return json.Marshal(struct {
		plain
		Window   jsondur.Duration `json:"window,omitempty"`
		Cooldown jsondur.Duration `json:"cooldown,omitempty"`
	}{plain(c), jsondur.Duration(c.Window), jsondur.Duration(c.Cooldown)})
}

// UnmarshalJSON reads Window and Cooldown as text or nanoseconds.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	aux := struct {
		*plain
		Window   jsondur.Duration `json:"window,omitempty"`
		Cooldown jsondur.Duration `json:"cooldown,omitempty"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	c.Window, c.Cooldown = time.Duration(aux.Window), time.Duration(aux.Cooldown)
	return nil
}
