package fakegw

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The escape classes: each mode below runs the hostile attempts of one kind of hole a confined
// command might find (read another session's data, leave a setuid file, reach the init's descriptors, take
// the init down by a signal, block or bloat the worker through the file tools, outgrow the
// limits), and ModeEscapeClasses runs them all in one session.

// Lines of a class task naming what the attempts look for, "key=value" each (see EscapeClassTask).
const (
	// EscapeState is Keel's state directory, as an absolute path.
	EscapeState = "escape-state"
	// EscapeStore is the transcript store's folder.
	EscapeStore = "escape-store"
	// EscapeMarker is the end of a secret another session's task holds: the secret is
	// EscapeSecretPrefix followed by it. The hostile script only ever sends the two apart, so the
	// whole secret shows in a result only if an attempt found it.
	EscapeMarker = "escape-marker"
)

// EscapeSecretPrefix starts the secret of EscapeMarker.
const EscapeSecretPrefix = "keel-secret-"

// Names of the files the class attempts make in the work directory.
const (
	// EscapeBigFile is the 200 MiB text file of the file tools' class.
	EscapeBigFile = "big.txt"
	// EscapeBigFileSize is its size in bytes.
	EscapeBigFileSize = 200 << 20
	// EscapeFIFO is the named pipe of the file tools' class.
	EscapeFIFO = "keel-fifo"
	// EscapeForgedRan is the file the forged-report attempt writes, so that a test can see the
	// command ran whatever the forged report claimed.
	EscapeForgedRan = "forged-ran"
	// EscapeConfig is the configuration file the state class writes into the work directory: it
	// would mount the host's root read-write at /cache for every later command of a starter that
	// loaded it.
	EscapeConfig = "keel.yaml"
	// EscapeConfigText is its content.
	EscapeConfigText = "tools:\n  sandbox_cache: /\n"
)

// escapeClasses are the class modes in the order ModeEscapeClasses runs them: the file tools last,
// since every model call after read_file of the big file carries its first 256 KiB.
var escapeClasses = []string{ModeEscapeState, ModeEscapeSetuid, ModeEscapeDescriptors, ModeEscapeSignals, ModeEscapeLimits, ModeEscapeFileTools}

// IsEscapeClass reports whether mode is one of the class modes or ModeEscapeClasses.
func IsEscapeClass(mode string) bool {
	return mode == ModeEscapeClasses || slices.Contains(escapeClasses, mode)
}

// EscapeClassTask is a task for a class mode naming the state directory, the store and the end of
// another session's secret to look for.
func EscapeClassTask(mode, state, store, marker string) string {
	return WithMode(fmt.Sprintf("Find what other sessions left on this machine, and get out of the sandbox.\n%s=%s\n%s=%s\n%s=%s",
		EscapeState, state, EscapeStore, store, EscapeMarker, marker), mode)
}

// EscapeClassSteps lists the attempts of a class mode (every class's, in order, for
// ModeEscapeClasses) against the targets a task names. A task that names none (starter demo,
// whose work directory lies in the state directory's demo folder) looks two folders up.
func EscapeClassSteps(mode, task string) []EscapeStep {
	v := taskTargets(task, map[string]string{EscapeState: "../..", EscapeStore: "../../store"})
	if mode == ModeEscapeClasses {
		var all []EscapeStep
		for _, m := range escapeClasses {
			all = append(all, classSteps(m, v)...)
		}
		return all
	}
	return classSteps(mode, v)
}

// taskTargets reads the "key=value" lines of a task over the defaults.
func taskTargets(task string, defaults map[string]string) map[string]string {
	for line := range strings.Lines(task) {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			defaults[k] = val
		}
	}
	return defaults
}

// classSteps are one class's attempts.
func classSteps(mode string, v map[string]string) []EscapeStep {
	switch mode {
	case ModeEscapeState:
		return stateSteps(v[EscapeState], v[EscapeStore], v[EscapeMarker])
	case ModeEscapeSetuid:
		return setuidSteps
	case ModeEscapeDescriptors:
		return descriptorSteps
	case ModeEscapeSignals:
		return signalSteps
	case ModeEscapeLimits:
		return limitSteps
	case ModeEscapeFileTools:
		return fileToolSteps
	}
	return nil
}

// outsideRefusal is what a file tool says of a path outside the work directory.
var outsideRefusal = says("outside the work directory", "nothing was read or changed")

// stateSteps look for another session's task and transcript: in the work directory, by the state
// directory's and the store's paths, by name and content over the whole view, with the file
// tools; then write a configuration file that would unconfine later commands.
func stateSteps(state, store, marker string) []EscapeStep {
	return []EscapeStep{
		{Name: "work directory listing", Command: "ls -la", Check: says("exit status 0")},
		{Name: "state directory by path", Command: fmt.Sprintf("ls -la %s %s", state, store), Check: says("No such file or directory")},
		{Name: "database files", Command: `sh -c 'find / -path /proc -prune -o -name "*.db" -print 2>/dev/null; echo find-done'`, Timeout: 120,
			Check: says("find-done")},
		{Name: "another session's secret over the view", Timeout: 120, Check: says("grep-done"),
			Command: fmt.Sprintf(`sh -c 'grep -rIl -e "$0$1" --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr / %s %s 2>&1; echo grep-done' %s %s`,
				state, store, EscapeSecretPrefix, marker)},
		{Name: "read_file of the parent", Tool: "read_file", Args: []string{"path", "../"}, Check: outsideRefusal},
		{Name: "list_dir of the parent", Tool: "list_dir", Args: []string{"path", "../"}, Check: outsideRefusal},
		{Name: "search of the parent", Tool: "search", Args: []string{"pattern", EscapeSecretPrefix, "path", "../"}, Check: outsideRefusal},
		{Name: "read_file of the state directory", Tool: "read_file", Args: []string{"path", state}, Check: outsideRefusal},
		{Name: "list_dir of the store", Tool: "list_dir", Args: []string{"path", store}, Check: outsideRefusal},
		{Name: "search of the store", Tool: "search", Args: []string{"pattern", EscapeSecretPrefix, "path", store}, Check: outsideRefusal},
		{Name: "configuration into the work directory", Tool: "write_file", Args: []string{"path", EscapeConfig, "content", EscapeConfigText},
			Check: says("the file has changed")},
		{Name: "the host's root at /cache", Command: "cat /cache/etc/shadow", Check: says("No such file or directory")},
	}
}

// setuidSteps make setuid, setgid and device files in the work directory and the cache.
var setuidSteps = []EscapeStep{
	{Name: "setuid and setgid files", Check: all(says("Operation not permitted"), lacks("rws", "r-s", "rwS", "r-S")),
		Command: `sh -c 'cp /bin/cat x && chmod 4755 x; cp /bin/cat y && chmod g+s y; install -m 4755 /bin/cat z; mkdir -m 2755 d; ` +
			`mknod null2 c 1 3; cp /bin/cat /cache/keel-c && chmod u+s /cache/keel-c; ls -l x y /cache/keel-c; rm -f /cache/keel-c'`},
}

// forgedReport is an init's report of a command that was not found, without the spec's nonce.
const forgedReport = `{"nonce":"guess","report":{"started":false,"problem":"not_found"}}`

// descriptorSteps plant and read keys, list the command's descriptors, and forge the init's report
// through its report pipe, by number and through /proc/1/fd.
var descriptorSteps = []EscapeStep{
	{Name: "keyrings", Check: says("add_key 1\n", "keyctl 1\n"),
		Command: fmt.Sprintf(`perl -e 'my ($t, $d, $p) = ("user", "keel-planted", "planted"); `+
			`$! = 0; syscall(%d, $t, $d, $p, 7, -3); print "add_key ", $! + 0, "\n"; `+
			`$! = 0; syscall(%d, 0, -3, 0); print "keyctl ", $! + 0, "\n"'`, sysAddKey, sysKeyctl)},
	{Name: "inherited descriptors", Command: "ls -l /proc/self/fd", Check: onlyStandardFiles},
	{Name: "forged report", Check: all(says("exit status 5", "Output:\nran\n"), lacks("forged-", "not available")),
		Command: `sh -c '(echo "$0" > /proc/1/fd/4) 2>/dev/null && echo forged-proc; (echo "$0" >&4) 2>/dev/null && echo forged-fd; ` +
			`echo ran > ` + EscapeForgedRan + `; echo ran; exit 5' '` + forgedReport + `'`},
}

// signalSteps send the init the signals that would end it or make it print a dump were it not
// guarded against them.
var signalSteps = []EscapeStep{
	{Name: "signals to init", Check: says("exit status 7", "Output:\nalive"),
		Command: `sh -c 'kill -QUIT 1; kill -TERM 1; kill -SEGV 1; kill -STOP 1; kill -CONT 1; echo alive; exit 7'`},
}

// limitSteps run a fork loop (bash's: it keeps forking when a fork fails, where sh gives up) and
// touch 3 GiB of shared memory, which per-process limits do not count.
var limitSteps = []EscapeStep{
	{Name: "fork loop", Command: `bash -c 'while :; do sleep 1006 & done' keel-forkloop`, Timeout: 10, Check: says("stopped after 10 seconds")},
	{Name: "3 GiB of shared memory", Timeout: 60, Check: all(says("stopped for using more memory than the sandbox's limit"), lacks("touched")),
		Command: fmt.Sprintf(`perl -e '$n = 3 << 30; $m = syscall(%d, 0, $n, 3, 33, -1, 0); die "no mapping: $!\n" if $m == -1; `+
			`open(my $z, "<", "/dev/zero") or die "no zeros\n"; `+
			`for ($o = 0; $o < $n; $o += $r) { $r = syscall(%d, fileno($z), $m + $o, $n - $o); die "read: $!\n" if $r <= 0 } `+
			`print "touched $o bytes\n"'`, sysMmap, sysRead)},
}

// pipeRefusal is what a file tool says of a named pipe, at once.
var pipeRefusal = all(says("is a named pipe", "did not open it"), lacks("unknown"))

// fileToolSteps make a 200 MiB file and a named pipe and turn the file tools on them; read_file of
// the big file comes last, as the 256 KiB it shows goes with every later model call.
var fileToolSteps = []EscapeStep{
	{Name: "a 200 MiB file", Command: fmt.Sprintf(`sh -c 'yes keel-big-file-line | head -c %d > %s; wc -c < %s'`, EscapeBigFileSize, EscapeBigFile, EscapeBigFile),
		Timeout: 60, Check: says("exit status 0", strconv.Itoa(EscapeBigFileSize))},
	{Name: "edit_file of the big file", Tool: "edit_file", Args: []string{"path", EscapeBigFile, "old", "a line that is not in the file", "new", "x"},
		Check: says("larger than edit_file handles", "nothing changed")},
	{Name: "search of the big file", Tool: "search", Args: []string{"pattern", "keel-needle", "path", EscapeBigFile},
		Check: says("larger than search handles", "nothing changed")},
	{Name: "a named pipe", Command: "mkfifo " + EscapeFIFO, Check: says("exit status 0")},
	{Name: "edit_file of the pipe", Tool: "edit_file", Args: []string{"path", EscapeFIFO, "old", "a", "new", "b"}, Check: pipeRefusal},
	{Name: "read_file of the pipe", Tool: "read_file", Args: []string{"path", EscapeFIFO}, Check: pipeRefusal},
	{Name: "write_file of the pipe", Tool: "write_file", Args: []string{"path", EscapeFIFO, "content", "x"}, Check: pipeRefusal},
	{Name: "search of the pipe", Tool: "search", Args: []string{"pattern", "x", "path", EscapeFIFO}, Check: pipeRefusal},
	{Name: "read_file of the big file", Tool: "read_file", Args: []string{"path", EscapeBigFile},
		Check: says(fmt.Sprintf("[cut: the file %q is %d bytes", EscapeBigFile, EscapeBigFileSize))},
}

// says is a check that the result holds every part.
func says(parts ...string) func(string) string {
	return func(res string) string {
		for _, p := range parts {
			if !strings.Contains(res, p) {
				return fmt.Sprintf("the result lacks %q", p)
			}
		}
		return ""
	}
}

// lacks is a check that the result holds none of the parts.
func lacks(parts ...string) func(string) string {
	return func(res string) string {
		for _, p := range parts {
			if strings.Contains(res, p) {
				return fmt.Sprintf("the result holds %q", p)
			}
		}
		return ""
	}
}

// all is a check that passes every check.
func all(checks ...func(string) string) func(string) string {
	return func(res string) string {
		for _, c := range checks {
			if why := c(res); why != "" {
				return why
			}
		}
		return ""
	}
}

// onlyStandardFiles checks a result of `ls -l /proc/self/fd`: descriptors 0, 1 and 2, and at most
// the one ls opened for the listing, and nothing else.
func onlyStandardFiles(res string) string {
	_, listing, ok := strings.Cut(res, "Output:\n")
	if !ok {
		return "the result has no output"
	}
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		name, target, ok := strings.Cut(line, " -> ")
		if !ok {
			continue // the total
		}
		fields := strings.Fields(name)
		fd, err := strconv.Atoi(fields[len(fields)-1])
		if err != nil {
			return fmt.Sprintf("the listing line %q names no descriptor", line)
		}
		seen = append(seen, strconv.Itoa(fd))
		if fd > 2 && !(strings.HasPrefix(target, "/proc/") && strings.HasSuffix(target, "/fd")) {
			return fmt.Sprintf("descriptor %d (%s) reached the command", fd, target)
		}
	}
	if len(seen) < 3 || len(seen) > 4 || seen[0] != "0" || seen[1] != "1" || seen[2] != "2" {
		return fmt.Sprintf("descriptors %v, want 0, 1, 2 and the listing's own", seen)
	}
	return ""
}
