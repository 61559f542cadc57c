package devserver

// Kill ends the server process at once (SIGKILL), the way a crash would: no graceful shutdown,
// so a test of an outage sees what a dead server leaves behind. A server on a DBFile keeps what it
// had persisted, and Start with the same Address and DBFile brings it back.
func (s *Server) Kill() {
	if s.client != nil {
		s.client.Close()
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}
