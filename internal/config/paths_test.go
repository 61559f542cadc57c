package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// isolate gives a test a home folder and a working directory of its own, with no configuration file
// named by the environment and no XDG folders set, so nothing of the user's reaches it. It returns
// the home folder.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"KEEL_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Chdir(t.TempDir())
	return home
}

func write(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDefaultStateDir: with no dev.state_dir, the state folder is the user's, never a folder of the
// working directory; an explicit one still wins, made absolute.
func TestDefaultStateDir(t *testing.T) {
	cases := []struct {
		name  string
		env   map[string]string
		want  func(home, wd string) string
		store func(home, wd string) string
	}{
		{name: "the user's state folder", want: func(home, _ string) string { return filepath.Join(home, ".local", "state", "keel") }},
		{name: "XDG_STATE_HOME", env: map[string]string{"XDG_STATE_HOME": "/srv/state"}, want: func(string, string) string { return "/srv/state/keel" }},
		{name: "a relative XDG_STATE_HOME is ignored", env: map[string]string{"XDG_STATE_HOME": "state"},
			want: func(home, _ string) string { return filepath.Join(home, ".local", "state", "keel") }},
		{name: "an explicit one, made absolute", env: map[string]string{"KEEL_DEV_STATE_DIR": ".keel"},
			want: func(_, wd string) string { return filepath.Join(wd, ".keel") }},
		{name: "an explicit store path, made absolute", env: map[string]string{"KEEL_STORE_PATH": "st"},
			want:  func(home, _ string) string { return filepath.Join(home, ".local", "state", "keel") },
			store: func(_, wd string) string { return filepath.Join(wd, "st") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := isolate(t)
			wd, _ := os.Getwd()
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := Load("", nil, map[string]any{GatewayFake: true})
			if err != nil {
				t.Fatal(err)
			}
			if want := c.want(home, wd); cfg.Dev.StateDir != want {
				t.Fatalf("state directory %s, want %s", cfg.Dev.StateDir, want)
			}
			wantStore := filepath.Join(cfg.Dev.StateDir, "store")
			if c.store != nil {
				wantStore = c.store(home, wd)
			}
			if cfg.Store.Path != wantStore {
				t.Fatalf("store %s, want %s", cfg.Store.Path, wantStore)
			}
			if c.env["KEEL_DEV_STATE_DIR"] == "" && within(resolved(cfg.Dev.StateDir), resolved(wd)) {
				t.Fatalf("the default state directory %s is inside the working directory %s", cfg.Dev.StateDir, wd)
			}
		})
	}
}

// TestConfigFileLookup: --config, then $KEEL_CONFIG, then the user's keel.yaml, then the working
// directory's; Config.File names the one read.
func TestConfigFileLookup(t *testing.T) {
	cases := []struct {
		name                   string
		flag, env, user, local bool
		want                   string // which file was read: flag, env, user, local or none
	}{
		{name: "none", want: "none"},
		{name: "the working directory's", local: true, want: "local"},
		{name: "the user's before the working directory's", user: true, local: true, want: "user"},
		{name: "KEEL_CONFIG before the user's", env: true, user: true, local: true, want: "env"},
		{name: "--config first", flag: true, env: true, user: true, local: true, want: "flag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := isolate(t)
			wd, _ := os.Getwd()
			other := t.TempDir()
			files := map[string]string{
				"flag":  filepath.Join(other, "flag.yaml"),
				"env":   filepath.Join(other, "env.yaml"),
				"user":  filepath.Join(home, ".config", "keel", FileName),
				"local": filepath.Join(wd, FileName),
			}
			for name, on := range map[string]bool{"flag": c.flag, "env": c.env, "user": c.user, "local": c.local} {
				if on {
					write(t, files[name], "temporal:\n  task_queue: "+name+"\n")
				}
			}
			flag := ""
			if c.flag {
				flag = files["flag"]
			}
			if c.env {
				t.Setenv("KEEL_CONFIG", files["env"])
			}
			cfg, err := Load(flag, nil, map[string]any{GatewayFake: true})
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "none" {
				if cfg.File != "" || cfg.Temporal.TaskQueue != "keel" {
					t.Fatalf("read %q (task queue %s), want no file", cfg.File, cfg.Temporal.TaskQueue)
				}
				return
			}
			if cfg.Temporal.TaskQueue != c.want || cfg.File != files[c.want] {
				t.Fatalf("read %s (task queue %s), want %s", cfg.File, cfg.Temporal.TaskQueue, files[c.want])
			}
		})
	}
}

// TestCheckWorkdir: a work directory that holds Keel's state, its store or the configuration file
// in use, or that lies in the sandbox cache, is refused with one line saying why and what to do.
func TestCheckWorkdir(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		file    string // a configuration file to write and load, relative to the working directory
		workdir string // relative to the working directory; "" is the working directory itself
		err     string // the refusal contains this; "" accepts
	}{
		{name: "the default state folder is outside", file: "../conf/keel.yaml"},
		{name: "an explicit state folder inside", env: map[string]string{"KEEL_DEV_STATE_DIR": ".keel"},
			err: "contains Keel's state directory ./.keel (dev.state_dir), where sessions' tasks and transcripts are kept; work in a directory that does not contain it, or set dev.state_dir"},
		{name: "a state folder further down", env: map[string]string{"KEEL_DEV_STATE_DIR": "a/b/state"}, err: "(dev.state_dir)"},
		{name: "a state folder beside it", env: map[string]string{"KEEL_DEV_STATE_DIR": "state"}, workdir: "src"},
		{name: "the store inside", env: map[string]string{"KEEL_STORE_PATH": "src/store"}, workdir: "src",
			err: "contains the transcript store ./src/store (store.path)"},
		{name: "a postgres store has no folder", env: map[string]string{"KEEL_STORE_PATH": "src/store", "KEEL_STORE_BACKEND": "postgres", "KEEL_STORE_DSN": "postgres://x"}, workdir: "src"},
		{name: "the configuration file inside", file: "keel.yaml",
			err: "the configuration file ./keel.yaml is inside the work directory, where the model can rewrite it; move it to ~/.config/keel/keel.yaml or pass --config"},
		{name: "the configuration file beside it", file: "keel.yaml", workdir: "src"},
		{name: "in the sandbox cache", env: map[string]string{"KEEL_TOOLS_SANDBOX_CACHE": "cache"}, workdir: "cache/src",
			err: "tools.sandbox_cache ./cache is the work directory"},
		{name: "the sandbox cache itself", env: map[string]string{"KEEL_TOOLS_SANDBOX_CACHE": "cache"}, workdir: "cache", err: ToolsSandboxCache},
		{name: "a cache inside is its own folder", env: map[string]string{"KEEL_TOOLS_SANDBOX_CACHE": "src/.cache"}, workdir: "src"},
		{name: "no cache without the sandbox", env: map[string]string{"KEEL_TOOLS_SANDBOX_CACHE": "cache", "KEEL_TOOLS_SANDBOX": "off"}, workdir: "cache/src"},
		{name: "through a symbolic link", env: map[string]string{"KEEL_DEV_STATE_DIR": "real/.keel"}, workdir: "link", err: "(dev.state_dir)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			wd, _ := os.Getwd()
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			for _, d := range []string{"src", "cache/src", "real"} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("real", "link"); err != nil {
				t.Fatal(err)
			}
			file := ""
			if c.file != "" {
				file = write(t, filepath.Join(wd, c.file), "gateway:\n  fake: true\n")
				if c.file == FileName {
					file = "" // found in the working directory, as the starter finds it
				}
			}
			cfg, err := Load(file, nil, map[string]any{GatewayFake: true})
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.CheckWorkdir(filepath.Join(wd, c.workdir))
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("got %v, want a refusal containing %q", err, c.err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("the refusal is more than one line: %q", err)
			}
		})
	}
}

// TestSandboxCache: tools.sandbox_cache must be a folder of its own: a system folder, the home
// folder, or a folder that holds Keel's state, store or configuration is refused at load time,
// naming the key; a dedicated folder works.
func TestSandboxCache(t *testing.T) {
	cases := []struct {
		name  string
		cache func(home, wd string) string
		env   map[string]string
		err   string // the error contains this; "" loads
	}{
		{name: "the default", cache: func(string, string) string { return "" }},
		{name: "a dedicated folder", cache: func(_, wd string) string { return filepath.Join(wd, "cache") }},
		{name: "one below the home folder", cache: func(home, _ string) string { return filepath.Join(home, ".cache", "go") }},
		{name: "/var/cache/keel", cache: func(string, string) string { return "/var/cache/keel" }},
		{name: "the root", cache: func(string, string) string { return "/" }, err: "tools.sandbox_cache: / is a system folder"},
		{name: "/etc", cache: func(string, string) string { return "/etc" }, err: "tools.sandbox_cache: /etc is a system folder"},
		{name: "below /usr", cache: func(string, string) string { return "/usr/local/cache" }, err: "is a system folder"},
		{name: "/var", cache: func(string, string) string { return "/var" }, err: "is a system folder"},
		{name: "/home", cache: func(string, string) string { return "/home" }, err: "is a system folder"},
		{name: "the home folder", cache: func(home, _ string) string { return home }, err: "is the home folder"},
		{name: "the state folder", cache: func(home, _ string) string { return filepath.Join(home, ".local", "state", "keel") },
			err: "holds Keel's state directory ~/.local/state/keel (dev.state_dir)"},
		{name: "above the state folder", cache: func(home, _ string) string { return filepath.Join(home, ".local") }, err: "(dev.state_dir)"},
		{name: "above the store", env: map[string]string{"KEEL_STORE_PATH": "/srv/keel/store"}, cache: func(string, string) string { return "/srv/keel" },
			err: "holds the transcript store /srv/keel/store (store.path)"},
		{name: "above the configuration file", cache: func(home, _ string) string { return filepath.Join(home, ".config") }, err: "holds the configuration file"},
		{name: "a relative path", cache: func(string, string) string { return "." }, env: map[string]string{"KEEL_DEV_STATE_DIR": "state"}, err: "(dev.state_dir)"},
		{name: "not checked without the sandbox", env: map[string]string{"KEEL_TOOLS_SANDBOX": "off"}, cache: func(string, string) string { return "/" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := isolate(t)
			wd, _ := os.Getwd()
			write(t, filepath.Join(home, ".config", "keel", FileName), "gateway:\n  fake: true\n")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			if cache := c.cache(home, wd); cache != "" {
				t.Setenv("KEEL_TOOLS_SANDBOX_CACHE", cache)
			}
			cfg, err := Load("", nil, nil)
			if c.err != "" {
				if err == nil || !IsError(err) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want a config error containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Sandbox != nil && c.cache(home, wd) != "" && cfg.Sandbox.CacheDir != c.cache(home, wd) {
				t.Fatalf("cache %s, want %s", cfg.Sandbox.CacheDir, c.cache(home, wd))
			}
		})
	}
}

// TestCheckWorkdirMCP refuses a work directory that holds what the worker runs for a stdio MCP
// server, naming mcp.servers, and accepts one that does not.
func TestCheckWorkdirMCP(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work, other := filepath.Join(base, "work"), filepath.Join(base, "other")
	for _, d := range []string{filepath.Join(work, "tools"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(work, "srv"), filepath.Join(work, "tools", "server.py"), filepath.Join(other, "srv")} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)
	cases := []struct {
		name   string
		server MCPServer
		err    string
	}{
		{"program inside", MCPServer{Name: "a", Command: []string{filepath.Join(work, "srv")}}, `mcp.servers: the MCP server "a"'s command`},
		{"relative program inside", MCPServer{Name: "b", Command: []string{"./srv"}}, `the MCP server "b"'s command ./srv is inside the work directory`},
		{"script inside", MCPServer{Name: "c", Command: []string{"python3", filepath.Join(work, "tools", "server.py")}}, `"c"'s command`},
		{"script relative to dir", MCPServer{Name: "d", Command: []string{"python3", "tools/server.py"}, Dir: work}, `"d"'s dir`},
		{"dir inside", MCPServer{Name: "e", Command: []string{"python3", "-m", "srv"}, Dir: filepath.Join(work, "tools")}, `"e"'s dir`},
		{"module, no dir", MCPServer{Name: "f", Command: []string{"python3", "-m", "srv"}}, ""},
		{"program elsewhere", MCPServer{Name: "g", Command: []string{filepath.Join(other, "srv")}, Dir: other}, ""},
		{"a url", MCPServer{Name: "h", URL: "http://127.0.0.1:1/mcp"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Config{MCP: []MCPServer{c.server}}.CheckWorkdir(work)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "set its")):
				t.Fatalf("got %v, want a refusal containing %q", err, c.err)
			}
		})
	}
}
