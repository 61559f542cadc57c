package cli

import "golang.org/x/sys/unix"

// outputGone says whether the reader of the starter's standard output or standard error went away:
// the write end of a pipe whose reader closed polls as an error. A SIGPIPE can also come from a
// network connection the server closed (the process asks for every SIGPIPE), which the client
// retries on its own and which must not end the follower. A poll that fails says nothing: the
// next write to a broken pipe raises SIGPIPE again.
func outputGone() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return false
	}
	for _, fd := range fds {
		if fd.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}
