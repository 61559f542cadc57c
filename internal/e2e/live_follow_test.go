package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/session"
)

// A turn long enough to attach to and cut in the middle of: 200 pieces, 30 ms apart.
const (
	longPieces = 200
	longPause  = 30 * time.Millisecond
)

// newLongRig is a worker on a gateway whose slow reply takes about six seconds.
func newLongRig(t testing.TB, extraEnv ...string) *liveRig {
	t.Helper()
	return newLiveRigWith(t, fakegw.Options{SlowStreamDuration: longPieces * longPause, SlowStreamInterval: longPause}, extraEnv...)
}

// startSession starts one session of task through the Temporal client; watched gives it a
// watcher's lease in its input.
func (r *liveRig) startSession(task string, watched bool) client.WorkflowRun {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := contract.SessionInput{Task: task, Limits: contract.Limits{MaxTurns: 1},
		Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: r.workdir()},
			HeartbeatTimeout: jsondur.Duration(testHeartbeatTimeout)}}
	if watched {
		in.Watchers = []contract.Watch{{Watcher: "test", Lease: jsondur.Duration(contract.WatchLease)}}
	}
	run, err := env.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: envValue(r.environ, "KEEL_TEMPORAL_TASK_QUEUE")},
		contract.SessionWorkflow, in)
	if err != nil {
		r.t.Fatal(err)
	}
	return run
}

// cuttableProxy relays TCP connections to a server until it is cut: then it drops every
// connection and every new one, until it is mended.
type cuttableProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func newCuttableProxy(t testing.TB, to string) *cuttableProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttableProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close(); p.setCut(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go relay(c, s)
			go relay(s, c)
		}
	}()
	return p
}

func relay(from, to net.Conn) {
	_, _ = io.Copy(to, from)
	_ = to.Close()
}

func (p *cuttableProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}

// TestWatchMidTurnAndReconnect: a `watch` started in the middle of a turn prints every piece of
// the reply it attached during once and in order, and a `watch` whose connection to the server is
// cut for two seconds in the middle of the reply (every connection dropped, new ones refused) and
// then restored prints every piece of it once and in order.
func TestWatchMidTurnAndReconnect(t *testing.T) {
	r := newLongRig(t)

	t.Run("watch mid-turn", func(t *testing.T) {
		run := r.startSession(fakegw.WithMode("fix the failing test", fakegw.ModeSlowStream), false)
		// The model call streams: attach while it does.
		if !waitFor(30*time.Second, func() bool { return pendingActivity(t, run.GetID()) }) {
			t.Fatal("the model call never heartbeated")
		}
		l := startLiveEnv(t, r.environ, "watch", "-o", "jsonl", run.GetID())
		out := l.finish()
		onceInOrder(t, out.Events, longPieces)
		if out.Summary.WorkflowID != run.GetID() {
			t.Fatalf("watch printed no summary of %s:\n%s", run.GetID(), out.Stdout)
		}
	})

	t.Run("cut and reconnected", func(t *testing.T) {
		proxy := newCuttableProxy(t, env.Address())
		// Watched from its start (as a session `starter run` started is), so the reply streams
		// live and the cut falls in the middle of it.
		run := r.startSession(fakegw.WithMode("fix the failing test", fakegw.ModeSlowStream), true)
		l := startLiveEnv(t, append(slices.Clone(r.environ), "KEEL_TEMPORAL_ADDRESS="+proxy.ln.Addr().String()), "watch", "-o", "jsonl", run.GetID())
		l.waitEvent(time.Minute, "the reply's 20th piece", func(e contract.Event) bool { return e.Event == contract.EventDelta && e.Seq >= 20 })
		proxy.setCut(true)
		time.Sleep(2 * time.Second) // the outage itself, not a wait for something
		proxy.setCut(false)
		out := l.finish()
		onceInOrder(t, out.Events, longPieces)
		if out.Summary.WorkflowID != run.GetID() {
			t.Fatalf("the reconnected watch printed no summary of %s:\n%s", run.GetID(), out.Stdout)
		}
	})
}

// pendingActivity says whether session wid's turn in flight runs an activity that has
// heartbeated, read as a watcher reads it (free: a description).
func pendingActivity(t testing.TB, wid string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := env.Client().DescribeWorkflow(ctx, contract.TurnWorkflowID(wid, 1), "")
	if err != nil {
		return false
	}
	for _, pa := range d.RawResponse.GetPendingActivities() {
		if pa.GetActivityType().GetName() == contract.CallModelActivity && pa.GetLastHeartbeatTime() != nil {
			return true
		}
	}
	return false
}

// TestTwentyWatchers: twenty `starter watch` processes on one session, each holding its own
// lease, each print every piece of the reply once and in order, and a message a person sends the
// session while they all follow it (the say update) is accepted.
func TestTwentyWatchers(t *testing.T) {
	r := newLongRig(t)
	run := r.startSession(fakegw.WithMode("fix the failing test", fakegw.ModeSlowStream), false)
	const watchers = 20
	ls := make([]*liveRun, watchers)
	for i := range ls {
		ls[i] = startLiveEnv(t, r.environ, "watch", "-o", "jsonl", run.GetID())
	}
	if !waitFor(30*time.Second, func() bool { return pendingActivity(t, run.GetID()) }) {
		t.Fatal("the model call never heartbeated")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc := session.Client{Temporal: env.Client()}
	res, err := sc.Say(ctx, run.GetID(), contract.Say{Text: "also keep the tests green", By: "ana", Via: "cli"})
	if err != nil {
		t.Fatalf("the say update was refused with %d watchers: %v", watchers, err)
	}
	t.Logf("say: %+v", res)
	for i, l := range ls {
		out := l.finish()
		t.Run(fmt.Sprintf("watcher %d", i), func(t *testing.T) {
			onceInOrder(t, out.Events, longPieces)
			if out.Summary.WorkflowID != run.GetID() {
				t.Fatalf("watcher %d printed no summary:\n%s", i, out.Stderr)
			}
		})
	}
}

// The forwarder of the frontend-only starter: the test binary itself, run inside the starter's
// network namespace, listening on forwardListenEnv and relaying each connection to the unix
// socket forwardSocketEnv, which the test serves from outside.
const (
	forwardListenEnv = "KEEL_TEST_FORWARD_LISTEN"
	forwardSocketEnv = "KEEL_TEST_FORWARD_SOCKET"
)

func forward(listen, socket string) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "forwarder:", err)
		os.Exit(1)
	}
	fmt.Println("listening")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		s, err := net.Dial("unix", socket)
		if err != nil {
			_ = c.Close()
			continue
		}
		go relay(c, s)
		go relay(s, c)
	}
}

// frontendOnly sets up a network namespace whose only way out is the frontend port, forwarded:
// loopback up, the forwarder inside on 127.0.0.1:7233, and the unix socket it relays to served by
// the test, which dials the server. It returns the namespace's name.
func frontendOnly(t testing.TB) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ns := "keel-e2e-" + hex.EncodeToString(b)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", ns).Run() })
	ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")

	socket := filepath.Join(t.TempDir(), "frontend.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", env.Address())
			if err != nil {
				_ = c.Close()
				continue
			}
			go relay(c, s)
			go relay(s, c)
		}
	}()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fwd := exec.Command("ip", "netns", "exec", ns, self)
	fwd.Env = append(os.Environ(), forwardListenEnv+"=127.0.0.1:7233", forwardSocketEnv+"="+socket)
	stdout, err := fwd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := fwd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fwd.Process.Kill(); _ = fwd.Wait() })
	line := make([]byte, len("listening"))
	if _, err := io.ReadFull(stdout, line); err != nil {
		t.Fatalf("the forwarder did not start: %v", err)
	}
	// The namespace has no other way out: the server's own address is unreachable from it.
	if out, err := exec.Command("ip", "netns", "exec", ns, "ip", "route").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("the namespace has routes (%v): %s", err, out)
	}
	return ns
}

// TestFrontendOnlyWatcher: a starter that can reach nothing but the Temporal frontend (a network
// namespace of its own whose only way out is the forwarded frontend port) prints every piece of
// a streamed reply, and a running command's output, while they happen, then the summary.
func TestFrontendOnlyWatcher(t *testing.T) {
	ns := frontendOnly(t)
	r := newLongRig(t)
	environ := append(append([]string(nil), r.environ...), "KEEL_TEMPORAL_ADDRESS=127.0.0.1:7233")
	inNamespace := func(cmd *exec.Cmd) {
		cmd.Args = append([]string{"ip", "netns", "exec", ns}, cmd.Args...)
		cmd.Path = "/usr/sbin/ip"
		if p, err := exec.LookPath("ip"); err == nil {
			cmd.Path = p
		}
	}
	for _, c := range []struct {
		mode string
		live func(contract.Event) bool
		what string
	}{
		{fakegw.ModeSlowStream, func(e contract.Event) bool { return e.Event == contract.EventDelta }, "a piece of the reply"},
		{fakegw.ModeChattyCommand, func(e contract.Event) bool { return e.Event == contract.EventOutput }, "the command's output"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			l := startLiveCmd(t, environ, inNamespace, "run", "-o", "jsonl", "--workdir", r.workdir(), fakegw.WithMode("fix the failing test", c.mode))
			wid := l.workflowID()
			l.waitEvent(60*time.Second, c.what, c.live)
			// It arrived while the session ran, not with its end.
			if d, err := env.Client().DescribeWorkflow(context.Background(), wid, ""); err != nil || d.RawResponse.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				t.Fatalf("%s arrived only after the session ended (%v)", c.what, err)
			}
			out := l.finish()
			if c.mode == fakegw.ModeSlowStream {
				onceInOrder(t, out.Events, longPieces)
			}
			if out.Summary.WorkflowID != wid {
				t.Fatalf("no summary:\n%s\n%s", out.Stdout, l.stderr.String())
			}
		})
	}
}
