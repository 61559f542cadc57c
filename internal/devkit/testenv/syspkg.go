package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// EnsureCommand makes sure the program cmd is on PATH, installing the Debian package pkg that
// holds it when it is missing, so that the README's test command passes on a fresh machine with
// nothing installed by hand. It runs in a package's TestMain setup (see Main), under BuildBound and
// before any test's clock starts. apt-get waits for another package's install through dpkg's own
// lock. Without apt-get, or as a user who is neither root nor allowed sudo without a password, it
// fails saying what to install.
func EnsureCommand(ctx context.Context, cmd, pkg string) error {
	if _, err := exec.LookPath(cmd); err == nil {
		return nil
	}
	if err := install(ctx, cmd, pkg); err != nil {
		return err
	}
	if _, err := exec.LookPath(cmd); err != nil {
		return fmt.Errorf("installed %s, yet %s is still not on PATH: %w", pkg, cmd, err)
	}
	return nil
}

// EnsureFile is EnsureCommand for a package that installs a file rather than a program (a shell
// library such as bash-completion's).
func EnsureFile(ctx context.Context, path, pkg string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := install(ctx, path, pkg); err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("installed %s, yet %s is still missing: %w", pkg, path, err)
	}
	return nil
}

// install installs the Debian package pkg, which holds what.
func install(ctx context.Context, what, pkg string) error {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("the tests need %s (Debian package %s), which is not installed, and there is no apt-get to install it; install it and run again", what, pkg)
	}
	var prefix []string
	if os.Geteuid() != 0 {
		prefix = []string{"sudo", "-n"}
	}
	fmt.Fprintf(os.Stderr, "testenv: installing %s (Debian package %s) for the tests\n", what, pkg)
	lock := []string{"-o", "DPkg::Lock::Timeout=600"}
	steps := [][]string{
		append(append(append([]string{}, prefix...), "apt-get", "update", "-qq"), lock...),
		append(append(append([]string{}, prefix...), "apt-get", "install", "-y", "-qq", "--no-install-recommends", pkg), lock...),
	}
	for _, args := range steps {
		c := exec.CommandContext(ctx, args[0], args[1:]...)
		c.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("installing %s for the tests with %q: %w\n%s", pkg, strings.Join(args, " "), err, tail(out, 2000))
		}
	}
	return nil
}

// tail is the end of a command's output, enough to say why it failed.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
