package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/keelrun/keel/internal/devkit/devserver"
)

// TestClusterTimerSettings: the native cluster (and compose, which mounts the same file) runs the
// timer queue with the dev server's settings, so a retry wait under a second lands when Keel says
// it will on every server Keel ships (docs/failure-handling.md).
func TestClusterTimerSettings(t *testing.T) {
	raw, err := os.ReadFile("dynamicconfig.yaml")
	require.NoError(t, err)
	var file map[string][]struct {
		Value any `yaml:"value"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &file), "deploy/dynamicconfig.yaml does not parse")
	n := 0
	for key, devValue := range devserver.DynamicConfig {
		if !strings.HasPrefix(key, "history.timer") {
			continue
		}
		n++
		var want any
		require.NoError(t, json.Unmarshal([]byte(devValue), &want), "dev server value of %s", key)
		got, ok := file[key]
		if !assert.True(t, ok, "deploy/dynamicconfig.yaml does not set %s", key) || !assert.Len(t, got, 1, key) {
			continue
		}
		assert.Equal(t, fmt.Sprint(want), fmt.Sprint(got[0].Value), "%s differs from the dev server's", key)
	}
	assert.Positive(t, n, "the dev server sets no timer-queue settings")
}

// TestComposeDynamicConfig: the compose server reads deploy/dynamicconfig.yaml, not the image's own.
func TestComposeDynamicConfig(t *testing.T) {
	s := service(t, loadProject(t), "temporal")
	path := deref(s.Environment["DYNAMIC_CONFIG_FILE_PATH"])
	require.NotEmpty(t, path, "the temporal service does not set DYNAMIC_CONFIG_FILE_PATH")
	want, err := filepath.Abs("dynamicconfig.yaml")
	require.NoError(t, err)
	for _, v := range s.Volumes {
		if v.Target == path {
			assert.Equal(t, want, v.Source)
			return
		}
	}
	t.Fatalf("no volume of the temporal service is mounted at %s", path)
}
