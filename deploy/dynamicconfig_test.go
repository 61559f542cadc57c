package deploy

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/devkit/devserver"
)

// TestClusterDynamicConfigHasDevValues checks that every dynamic config value Keel's dev server
// runs with is also set, to the same value, for the cluster (run-cluster.sh and
// docker-compose.yml), so both servers behave alike.
func TestClusterDynamicConfigHasDevValues(t *testing.T) {
	b, err := os.ReadFile("dynamicconfig.yaml")
	require.NoError(t, err)
	got := clusterValues(string(b))
	for key, want := range devserver.DynamicConfig {
		want = strings.Trim(want, `"`) // JSON on the command line, plain YAML in the file
		v, ok := got[strings.ToLower(key)]
		if assert.True(t, ok, "deploy/dynamicconfig.yaml does not set %s (the dev server sets it to %s)", key, want) {
			assert.Equal(t, want, v, "deploy/dynamicconfig.yaml sets %s to %s, the dev server to %s", key, v, want)
		}
	}
}

// clusterValues reads the first value of each key of a dynamic config file: a key line, then a
// "- value: X" line.
func clusterValues(doc string) map[string]string {
	out := map[string]string{}
	key := ""
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(trimmed, ":"):
			key = strings.ToLower(strings.TrimSuffix(trimmed, ":"))
		case strings.HasPrefix(trimmed, "- value:") && key != "":
			if _, seen := out[key]; !seen {
				out[key] = strings.TrimSpace(strings.TrimPrefix(trimmed, "- value:"))
			}
		}
	}
	return out
}
