//go:build linux

package tools

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// sysProcAttr puts a command in its own process group, so it can be stopped as a whole, and asks
// the kernel to kill it if the worker dies. The kernel ties that parent-death signal to the thread
// that forked, so the command is started and waited for on one locked OS thread (see startLocked).
// It reaches the direct child only; grandchildren are stopped through the process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupAlive reports whether any live (not zombie) process is in the process group. Zombies are
// ignored because a reaper that never reaps them would otherwise keep the group "alive" forever.
func groupAlive(pgid int) bool {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return syscall.Kill(-pgid, 0) != syscall.ESRCH
	}
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue // the process is gone
		}
		state, pgrp, ok := parseStat(data)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// parseStat reads the state and the process group from /proc/PID/stat. The command name is in
// parentheses and may contain spaces, so fields are counted after the last ')'.
func parseStat(data []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}
