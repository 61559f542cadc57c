package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/config"
)

// Each workflow's Worker Versioning behaviour. A turn is short and pinned: it runs to its end on
// the build that started it, whatever is released meanwhile, so a turn never replays on code it
// was not written by. A session is long and moves to the deployment's current build at its next
// workflow task (a turn's end, a signal): its code changes within a build's lifetime stay behind
// workflow.GetVersion, as before. Unversioned workers (no temporal.deployment) send neither.
const (
	sessionBehavior = workflow.VersioningBehaviorAutoUpgrade
	turnBehavior    = workflow.VersioningBehaviorPinned
)

// Versioning is the worker's Worker Versioning identity from temporal.deployment and
// temporal.build_id: off (the zero value) when no deployment is named, an error when a
// deployment is named without a build ID or either holds a character the server reserves.
func Versioning(cfg config.Config) (worker.DeploymentOptions, error) {
	t := cfg.Temporal
	if t.Deployment == "" {
		if t.BuildID != "" {
			return worker.DeploymentOptions{}, fmt.Errorf("%s is %q but %s is empty: a build ID means something only within a deployment; set both or neither",
				config.TemporalBuildID, t.BuildID, config.TemporalDeployment)
		}
		return worker.DeploymentOptions{}, nil
	}
	if t.BuildID == "" {
		return worker.DeploymentOptions{}, fmt.Errorf("%s is %q but %s is empty: a versioned worker needs the ID of its build (e.g. the commit); set %s",
			config.TemporalDeployment, t.Deployment, config.TemporalBuildID, config.EnvName(config.TemporalBuildID))
	}
	if err := checkVersionName(config.TemporalDeployment, t.Deployment, "-_"); err != nil {
		return worker.DeploymentOptions{}, err
	}
	if err := checkVersionName(config.TemporalBuildID, t.BuildID, "-_."); err != nil {
		return worker.DeploymentOptions{}, err
	}
	return worker.DeploymentOptions{
		UseVersioning: true,
		Version:       worker.WorkerDeploymentVersion{DeploymentName: t.Deployment, BuildID: t.BuildID},
	}, nil
}

// checkVersionName refuses a deployment name or build ID the server would refuse (a deployment
// name holds no '.' or ':', neither starts with "__") or a visibility query could not quote:
// letters, digits and the characters of extra only.
func checkVersionName(key, v, extra string) error {
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(extra, r)) {
			return fmt.Errorf("%s %q holds %q: use letters, digits and %s only", key, v, string(r), strings.Join(strings.Split(extra, ""), " "))
		}
	}
	if strings.HasPrefix(v, "__") {
		return fmt.Errorf("%s %q starts with __, which the Temporal server reserves", key, v)
	}
	return nil
}

// adoptWait bounds how long a new worker tries to make itself its deployment's first current
// version: the server knows a version only once its pollers have reached it.
const adoptWait = 30 * time.Second

// AdoptDeployment makes version the current version of its deployment when the deployment has
// none, so that the first versioned worker of a new deployment takes work without a release
// step. A deployment that already has a current version is left alone: moving it is a release
// (`starter release`), never a side effect of a worker starting. It returns whether version is
// now current.
func AdoptDeployment(ctx context.Context, c client.Client, version worker.WorkerDeploymentVersion) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, adoptWait)
	defer cancel()
	h := c.WorkerDeploymentClient().GetHandle(version.DeploymentName)
	var last error
	for {
		d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
		if err == nil {
			cur := d.Info.RoutingConfig.CurrentVersion
			if cur != nil {
				return *cur == version, nil
			}
			if d.Info.RoutingConfig.RampingVersion != nil {
				// Someone is ramping from unversioned workers: a release is under way.
				return false, nil
			}
			_, err = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: version.BuildID, ConflictToken: d.ConflictToken})
			if err == nil {
				return true, nil
			}
		}
		// Until the server has seen this version's pollers it does not know the deployment or
		// the version; a conflict means another worker moved first: look again.
		var notFound *serviceerror.NotFound
		var pre *serviceerror.FailedPrecondition
		if !errors.As(err, &notFound) && !errors.As(err, &pre) && !strings.Contains(err.Error(), "not found") {
			return false, fmt.Errorf("making %s:%s its deployment's current version: %w", version.DeploymentName, version.BuildID, err)
		}
		last = err
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("making %s:%s its deployment's current version: the server did not register it within %s: %w",
				version.DeploymentName, version.BuildID, adoptWait, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// announceVersion says, once the worker polls, whether it takes work now or waits for a release.
func announceVersion(ctx context.Context, c client.Client, v worker.WorkerDeploymentVersion) error {
	current, err := AdoptDeployment(ctx, c, v)
	if err != nil {
		return err
	}
	if current {
		slog.Info("worker version current", "deployment", v.DeploymentName, "build_id", v.BuildID)
		return nil
	}
	slog.Info("worker version not current: it takes work once released (starter release current "+v.BuildID+", or ramp)",
		"deployment", v.DeploymentName, "build_id", v.BuildID)
	return nil
}

// PinnedRunning counts the running workflows pinned to version: the turns that must end on it
// before its workers may stop. Sessions (AutoUpgrade) are not counted: they move to the current
// version at their next workflow task.
func PinnedRunning(ctx context.Context, c client.Client, namespace string, version worker.WorkerDeploymentVersion) (int64, error) {
	q := fmt.Sprintf("TemporalWorkerDeploymentVersion = '%s:%s' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'",
		version.DeploymentName, version.BuildID)
	resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: q})
	if err != nil {
		return 0, fmt.Errorf("counting the workflows pinned to %s:%s: %w", version.DeploymentName, version.BuildID, err)
	}
	return resp.GetCount(), nil
}
