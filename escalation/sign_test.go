package escalation

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
)

// hmacHex is the tests' own HMAC-SHA256, so signatures are not checked against the code under test.
func hmacHex(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func TestSignatureFormats(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"webhook", SignWebhook("k", "1700000000", []byte(`{"id":"x"}`)), "sha256=" + hmacHex("k", `1700000000.{"id":"x"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.got) })
	}
}
