package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// The AppArmor profiles: one for the worker binary on the host, one for the worker's container.
const (
	hostProfileFile      = "apparmor/keel-worker"
	containerProfileFile = "apparmor/keel-worker-container"
	kubernetesWorker     = "kubernetes/worker.yaml"
)

// aaProfile is what an AppArmor profile file declares: its ABI, name, attachment and rules.
type aaProfile struct {
	abi, name, attachment string
	rules                 []string
}

var (
	aaABI    = regexp.MustCompile(`^abi <abi/([0-9.]+)>,$`)
	aaHeader = regexp.MustCompile(`^profile ([a-z][a-z0-9-]*)(?: (/\S+))?(?: flags=\([a-z_,]+\))? \{$`)
)

// readAppArmor reads a profile file of the form the shipped ones take: comments, an abi line,
// includes, and one profile whose every rule ends with a comma.
func readAppArmor(t *testing.T, path string) aaProfile {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var p aaProfile
	depth := 0
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		where := path + ":" + strconv.Itoa(i+1)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "include "):
			assert.Regexp(t, `^include (if exists )?<[a-z/.-]+>$`, line, where)
		case depth == 0 && aaABI.MatchString(line):
			p.abi = aaABI.FindStringSubmatch(line)[1]
		case depth == 0 && aaHeader.MatchString(line):
			m := aaHeader.FindStringSubmatch(line)
			p.name, p.attachment = m[1], m[2]
			depth++
		case depth == 1 && line == "}":
			depth--
		case depth == 1:
			rule, _, _ := strings.Cut(line, "#")
			rule = strings.TrimSpace(rule)
			if assert.True(t, strings.HasSuffix(rule, ","), "%s: a rule must end with a comma: %q", where, line) {
				p.rules = append(p.rules, strings.TrimSuffix(rule, ","))
			}
		default:
			t.Errorf("%s: unexpected line %q", where, line)
		}
	}
	assert.Zero(t, depth, "%s: the profile's braces do not close", path)
	return p
}

// compileAppArmor has the installed AppArmor parser compile the profile without loading it. A
// parser without the 4.0 ABI (AppArmor 3, Debian 12's) knows neither that ABI nor the userns rule,
// which readAppArmor's callers check themselves; it compiles the rest, against its own ABI.
func compileAppArmor(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	abi := "4.0"
	if _, err := os.Stat("/etc/apparmor.d/abi/4.0"); err != nil {
		abi = "3.0"
		data = bytes.ReplaceAll(data, []byte("abi <abi/4.0>,"), []byte("abi <abi/3.0>,"))
		data = regexp.MustCompile(`(?m)^\s*userns,\n`).ReplaceAll(data, nil)
	}
	src := filepath.Join(t.TempDir(), filepath.Base(path))
	require.NoError(t, os.WriteFile(src, data, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apparmor_parser", "--skip-kernel-load", "--skip-cache",
		"--features-file", "/etc/apparmor.d/abi/"+abi, "--ofile", os.DevNull, src)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "apparmor_parser refuses %s:\n%s", path, out)
}

func hasRule(p aaProfile, rule string) bool {
	for _, r := range p.rules {
		if r == rule {
			return true
		}
	}
	return false
}

// TestAppArmorProfiles checks both profiles are well formed (the installed AppArmor parser
// compiles them), are written for AppArmor 4, allow user namespaces, and that the container's
// profile allows the sandbox's mounts in place of docker-default's "deny mount".
func TestAppArmorProfiles(t *testing.T) {
	testenv.Needs(t, "apparmor_parser, installed by the package's TestMain")
	tests := []struct {
		file, name, attachment string
		rules                  []string // rules the profile must have
		denied                 []string // rules it must not have
	}{
		{file: hostProfileFile, name: "keel-worker", attachment: "/usr/local/bin/worker", rules: []string{"userns"}},
		{file: containerProfileFile, name: "keel-worker-container", rules: []string{
			"userns", "pivot_root", "umount",
			"mount fstype=proc options=(rw, nosuid, nodev, noexec) proc -> /tmp/proc/",
			"mount options=(remount, bind, ro, nosuid, nodev) -> /",
			"deny @{PROC}/kcore rwklx", "deny @{PROC}/sysrq-trigger rwklx",
		}, denied: []string{"deny mount", "mount"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := readAppArmor(t, tt.file)
			assert.Equal(t, "4.0", p.abi)
			assert.Equal(t, tt.name, p.name)
			assert.Equal(t, tt.attachment, p.attachment)
			for _, r := range tt.rules {
				assert.True(t, hasRule(p, r), "%s lacks the rule %q", tt.file, r)
			}
			for _, r := range tt.denied {
				assert.False(t, hasRule(p, r), "%s has the rule %q", tt.file, r)
			}
			compileAppArmor(t, tt.file)
		})
	}
}

// TestProfilesMatchTheImage checks the image is what the profiles and the tests assume: the host
// profile attaches to the path the image installs the worker at, and the image runs as the
// unprivileged user the sandbox's test containers and the Kubernetes example run as.
func TestProfilesMatchTheImage(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	dockerfile := string(data)
	p := readAppArmor(t, hostProfileFile)
	assert.Contains(t, dockerfile, "COPY --from=build /out/ "+filepath.Dir(p.attachment)+"/")
	assert.Contains(t, dockerfile, "-o /out/"+filepath.Base(p.attachment)+" ./worker")
	assert.Regexp(t, `useradd [^\n]*--uid `+strconv.Itoa(containerUser)+` keel\b`, dockerfile)
	assert.Regexp(t, `(?m)^USER keel$`, dockerfile)
}

// kubeDeployment is the part of a Deployment the example uses; decoding with known fields only
// makes a misspelt field fail the test instead of being ignored, as the API server would.
type kubeDeployment struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Metadata   kubeMetadata `yaml:"metadata"`
	Spec       struct {
		Replicas int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata kubeMetadata `yaml:"metadata"`
			Spec     kubePodSpec  `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type kubeMetadata struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type kubeProfile struct {
	Type             string `yaml:"type"`
	LocalhostProfile string `yaml:"localhostProfile"`
}

type kubePodSpec struct {
	HostUsers       *bool `yaml:"hostUsers"`
	SecurityContext struct {
		RunAsNonRoot    bool        `yaml:"runAsNonRoot"`
		RunAsUser       int         `yaml:"runAsUser"`
		RunAsGroup      int         `yaml:"runAsGroup"`
		FSGroup         int         `yaml:"fsGroup"`
		SeccompProfile  kubeProfile `yaml:"seccompProfile"`
		AppArmorProfile kubeProfile `yaml:"appArmorProfile"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name            string   `yaml:"name"`
		Image           string   `yaml:"image"`
		Command         []string `yaml:"command"`
		SecurityContext struct {
			Privileged               *bool `yaml:"privileged"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
			ProcMount              string `yaml:"procMount"`
			ReadOnlyRootFilesystem bool   `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
		Env []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom struct {
				SecretKeyRef struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
	Volumes []struct {
		Name     string         `yaml:"name"`
		EmptyDir map[string]any `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

// TestKubernetesWorker checks the Kubernetes example is a well-formed Deployment whose security
// context names the shipped profiles and gives the sandbox what it needs without privilege.
func TestKubernetesWorker(t *testing.T) {
	data, err := os.ReadFile(kubernetesWorker)
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var d kubeDeployment
	require.NoError(t, dec.Decode(&d), "%s is not a Deployment of the expected shape", kubernetesWorker)
	assert.Equal(t, "apps/v1", d.APIVersion)
	assert.Equal(t, "Deployment", d.Kind)
	assert.Equal(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels, "the selector must match the pods' labels")

	pod := d.Spec.Template.Spec
	sc := pod.SecurityContext
	assert.Equal(t, kubeProfile{Type: "Localhost", LocalhostProfile: filepath.Base(seccompProfile)}, sc.SeccompProfile,
		"the seccomp profile is the shipped one, installed under the kubelet's seccomp root")
	assert.Equal(t, kubeProfile{Type: "Localhost", LocalhostProfile: readAppArmor(t, containerProfileFile).name}, sc.AppArmorProfile)
	assert.True(t, sc.RunAsNonRoot, "the sandbox in a container needs a worker that is not root")
	assert.Equal(t, containerUser, sc.RunAsUser)
	if assert.NotNil(t, pod.HostUsers) {
		assert.False(t, *pod.HostUsers, "procMount: Unmasked needs a pod user namespace")
	}
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, []string{"worker"}, c.Command)
	if assert.NotNil(t, c.SecurityContext.Privileged) {
		assert.False(t, *c.SecurityContext.Privileged)
	}
	if assert.NotNil(t, c.SecurityContext.AllowPrivilegeEscalation) {
		assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	}
	assert.Equal(t, []string{"ALL"}, c.SecurityContext.Capabilities.Drop)
	assert.Equal(t, "Unmasked", c.SecurityContext.ProcMount, "the sandbox mounts a /proc of its own")
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	assert.Contains(t, mounts, "/tmp", "the sandbox builds its root on /tmp, and the root file system is read-only")
	assert.Contains(t, mounts, "/home/keel", "the worker writes its sandbox cache and state under its home")
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = true
	}
	for path, name := range mounts {
		assert.True(t, volumes[name], "%s is mounted from volume %s, which the pod does not have", path, name)
	}
	known := map[string]bool{}
	for _, s := range config.Settings() {
		for _, env := range s.EnvNames() {
			known[env] = true
		}
	}
	for _, e := range c.Env {
		assert.True(t, known[e.Name], "the worker gets %s, which is no configuration key", e.Name)
	}
}

// TestComposeWorkersUseTheProfiles checks both workers' containers run under the shipped seccomp
// profile and the container AppArmor profile, and without Docker's /proc masks, as docker compose
// reads security_opt (a seccomp path relative to the project's folder).
func TestComposeWorkersUseTheProfiles(t *testing.T) {
	p := loadProject(t)
	want, err := filepath.Abs(seccompProfile)
	require.NoError(t, err)
	apparmor := readAppArmor(t, containerProfileFile).name
	for _, name := range []string{"keel-worker-1", "keel-worker-2"} {
		t.Run(name, func(t *testing.T) {
			opts := service(t, p, name).SecurityOpt
			var seccomp []string
			for _, o := range opts {
				if v, ok := strings.CutPrefix(o, "seccomp="); ok {
					seccomp = append(seccomp, p.RelativePath(v))
				}
			}
			assert.Equal(t, []string{want}, seccomp)
			assert.Contains(t, opts, "apparmor="+apparmor)
			assert.Contains(t, opts, "systempaths=unconfined")
			for _, o := range opts {
				assert.NotContains(t, []string{"seccomp=unconfined", "apparmor=unconfined", "seccomp:unconfined", "apparmor:unconfined"}, o)
			}
			assert.False(t, service(t, p, name).Privileged)
			assert.Empty(t, service(t, p, name).CapAdd, "the sandbox needs no capability")
		})
	}
}
