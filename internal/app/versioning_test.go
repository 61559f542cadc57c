package app

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/keelrun/keel/internal/config"
)

// TestVersioning: a worker is versioned only with a deployment, needs a build ID with it, and
// refuses names the server or a visibility query could not take, naming the key.
func TestVersioning(t *testing.T) {
	cases := []struct {
		name, deployment, build string
		want                    worker.DeploymentOptions
		err                     string
	}{
		{name: "off", want: worker.DeploymentOptions{}},
		{name: "on", deployment: "keel", build: "v1.2-abc_9", want: worker.DeploymentOptions{UseVersioning: true,
			Version: worker.WorkerDeploymentVersion{DeploymentName: "keel", BuildID: "v1.2-abc_9"}}},
		{name: "no build", deployment: "keel", err: "temporal.build_id is empty"},
		{name: "build without deployment", build: "abc", err: "temporal.deployment is empty"},
		{name: "dot in deployment", deployment: "keel.prod", build: "abc", err: `temporal.deployment "keel.prod" holds "."`},
		{name: "quote in build", deployment: "keel", build: "a'b", err: `temporal.build_id "a'b" holds "'"`},
		{name: "reserved prefix", deployment: "__keel", build: "abc", err: "starts with __"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg config.Config
			cfg.Temporal.Deployment, cfg.Temporal.BuildID = c.deployment, c.build
			got, err := Versioning(cfg)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
