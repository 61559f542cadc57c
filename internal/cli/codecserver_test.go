package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCodecServerNeedsKeys: without codec.keys the command stops at once, naming the key.
func TestCodecServerNeedsKeys(t *testing.T) {
	t.Setenv("KEEL_CODEC_KEYS", "")
	cases := []struct {
		name, keys, want string
	}{
		{"no key", "", "config: codec.keys: is empty"},
		{"key variable unset", "k1=env:KEEL_TEST_NO_SUCH_KEY", "KEEL_TEST_NO_SUCH_KEY is not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("KEEL_CODEC_KEYS", c.keys)
			var out, errOut bytes.Buffer
			code := Main(context.Background(), []string{"codec-server", "--codec-listen", "127.0.0.1:0", "--state-dir", t.TempDir()}, &out, &errOut)
			if code != ExitUsage || !strings.Contains(errOut.String(), c.want) || strings.Count(errOut.String(), "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want %d and one line with %q", code, errOut.String(), ExitUsage, c.want)
			}
		})
	}
}
