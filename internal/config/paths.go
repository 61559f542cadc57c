package config

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FileName is the configuration file's name, in the user's configuration folder and in the
// working directory.
const FileName = "keel.yaml"

// FileHelp describes the --config flag of every command that reads the configuration.
const FileHelp = "configuration file (default $KEEL_CONFIG, else ~/.config/keel/" + FileName + ", else " + FileName +
	" in the working directory)"

// DefaultStateDir is where Keel keeps its state when dev.state_dir is not set: the dev server's
// database, the file store and the native cluster's files. It is the user's state folder
// ($XDG_STATE_HOME/keel, else ~/.local/state/keel) rather than a folder of the working directory,
// so that a session working there can neither read other sessions' tasks and transcripts nor
// change the files a later start reads. deploy/cluster-lib.sh computes the same folder.
func DefaultStateDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "keel"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("neither $XDG_STATE_HOME nor $HOME is set")
	}
	return filepath.Join(home, ".local", "state", "keel"), nil
}

// UserConfigFile is the user's own configuration file (os.UserConfigDir()/keel/keel.yaml), read
// when neither --config nor $KEEL_CONFIG names one; "" when the system has no such folder. A
// team keeps its configuration there, out of every work directory.
func UserConfigFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "keel", FileName)
}

// defaultCacheDir is tools.sandbox_cache when it is not set: a folder of its own in the user's
// cache folder; "" when the system has none.
func defaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "keel", "sandbox")
}

// absPath is p made absolute against the working directory at load time, so that a relative
// setting keeps meaning the same folder whatever a process does later.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// resolved is p made absolute with its symbolic links followed as far as it exists, so that two
// spellings of one folder (a link, a relative path, a folder not created yet below a link)
// compare as one.
func resolved(p string) string {
	abs := absPath(p)
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// within reports whether path is dir or lies below it; both must be resolved.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// shown is p as a person would type it: ./name below the working directory, ~/name below the
// home folder, else as it is.
func shown(p string) string {
	if wd, err := os.Getwd(); err == nil && p != wd && within(p, wd) {
		if rel, err := filepath.Rel(wd, p); err == nil {
			return "." + string(filepath.Separator) + rel
		}
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) && p != home && within(p, home) {
		if rel, err := filepath.Rel(home, p); err == nil {
			return "~" + string(filepath.Separator) + rel
		}
	}
	return p
}

// guarded is one of Keel's own files or folders that no session may reach, with the key that
// places it and what it holds.
type guarded struct {
	path, key, what string
}

// guardedPaths are the configuration's own files and folders: the state folder (which also holds
// the native cluster's files by default), the file store and the configuration file in use.
func (c Config) guardedPaths() []guarded {
	g := []guarded{{c.Dev.StateDir, DevStateDir, "Keel's state directory"}}
	if c.Store.Backend == "file" {
		g = append(g, guarded{c.Store.Path, StorePath, "the transcript store"})
	}
	if c.File != "" {
		g = append(g, guarded{c.File, "--config", "the configuration file"})
	}
	g = append(g, guarded{c.Workspaces.Root, WorkspacesRoot, "the workers' git caches and sessions' workspaces"})
	return g
}

// CheckWorkdir refuses a work directory from which a session could read other sessions' data or
// change how later commands are confined: one that contains Keel's state directory, the file
// store or the configuration file in use, or that is tools.sandbox_cache or lies below it (the
// cache would then show the work directory and everything beside it at /cache). The starter
// calls it before it starts anything, the worker before it runs a session's tools. The error is
// one line saying why and what to do.
func (c Config) CheckWorkdir(dir string) error {
	wd := resolved(dir)
	for _, g := range c.guardedPaths() {
		if g.path == "" || !within(resolved(g.path), wd) {
			continue
		}
		if g.key == "--config" {
			return fmt.Errorf("the configuration file %s is inside the work directory, where the model can rewrite it; "+
				"move it to %s or pass --config", shown(g.path), shown(UserConfigFile()))
		}
		return fmt.Errorf("the work directory %s contains %s %s (%s), where sessions' tasks and transcripts are kept; "+
			"work in a directory that does not contain it, or set %s to a folder outside the work directory",
			shown(dir), g.what, shown(g.path), g.key, g.key)
	}
	for _, s := range c.MCP {
		if err := s.checkOutside(dir, wd); err != nil {
			return err
		}
	}
	if c.Sandbox != nil && c.Sandbox.CacheDir != "" && within(wd, resolved(c.Sandbox.CacheDir)) {
		return fmt.Errorf("tools.sandbox_cache %s is the work directory %s or a folder above it, so commands would see it and "+
			"everything beside it at /cache; set tools.sandbox_cache to a folder of its own outside the work directory",
			shown(c.Sandbox.CacheDir), shown(dir))
	}
	return nil
}

// checkOutside refuses a work directory (dir, resolved wd) that holds what the worker runs for a
// stdio MCP server: its working directory, its program as the worker finds it, or a file an
// argument names by path. The model could change them there, and the worker would run the
// result on the host, outside any sandbox.
func (s MCPServer) checkOutside(dir, wd string) error {
	if len(s.Command) == 0 {
		return nil
	}
	refuse := func(what, p string) error {
		return fmt.Errorf("%s: the MCP server %q's %s %s is inside the work directory %s, where the model can change it and the worker would run it; "+
			"set its %s in %s to a path outside the work directory, or work in another directory",
			MCPServers, s.Name, what, shown(p), shown(dir), what, MCPServers)
	}
	if s.Dir != "" && within(resolved(s.Dir), wd) {
		return refuse("dir", s.Dir)
	}
	if p, err := exec.LookPath(s.Command[0]); err == nil && within(resolved(p), wd) {
		return refuse("command", p)
	}
	for _, arg := range s.Command[1:] {
		if !strings.ContainsRune(arg, filepath.Separator) {
			continue
		}
		p := arg
		if !filepath.IsAbs(p) && s.Dir != "" {
			p = filepath.Join(s.Dir, p)
		}
		if _, err := os.Stat(p); err == nil && within(resolved(p), wd) {
			return refuse("command", p)
		}
	}
	return nil
}

// systemTrees are folders neither the sandbox cache nor anything below them may be: the system's
// programs, libraries, settings and kernel interfaces.
var systemTrees = []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sys", "/dev", "/boot"}

// systemFolders are folders the sandbox cache may be below but not be: each holds far more than
// one cache (other users' homes, the system's variable data, every process's temporary files).
var systemFolders = []string{"/", "/home", "/root", "/var", "/tmp", "/run", "/opt", "/srv", "/mnt", "/media"}

// checkCache refuses a tools.sandbox_cache that is not a folder of its own: the sandbox mounts it
// read-write at /cache in every command, so a system folder, the home folder, or a folder that
// holds Keel's state, store or configuration would hand them to the model.
func (c Config) checkCache() error {
	if c.Sandbox == nil || c.Sandbox.CacheDir == "" {
		return nil
	}
	raw := c.Sandbox.CacheDir
	cache := resolved(raw)
	why := ""
	for _, s := range systemTrees {
		if within(cache, s) {
			why = "is a system folder"
		}
	}
	for _, s := range systemFolders {
		if cache == s {
			why = "is a system folder"
		}
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) && cache == resolved(home) {
		why = "is the home folder"
	}
	if why == "" {
		for _, g := range c.guardedPaths() {
			if g.path != "" && within(resolved(g.path), cache) {
				why = fmt.Sprintf("holds %s %s (%s)", g.what, shown(g.path), g.key)
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	return &Error{Key: ToolsSandboxCache, Msg: fmt.Sprintf("%s %s, and the sandbox mounts it read-write at /cache in every command; "+
		"set it to a folder of its own, such as %s (the default)", shown(raw), why, shown(defaultCacheDir()))}
}
