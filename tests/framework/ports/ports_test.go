// SPDX-License-Identifier: Apache-2.0

package ports

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// TestRetryStartsAgainOnFreshPortsWhenOneWasTaken: a process given a port
// somebody bound in the meantime is started again, on other ports.
func TestRetryStartsAgainOnFreshPortsWhenOneWasTaken(t *testing.T) {
	var tried [][]int
	err := Retry(3, func(p []int) error {
		tried = append(tried, p)
		if len(tried) == 1 {
			// Somebody else takes the first port before the process binds it.
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p[0])))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p[0])))
		if err != nil {
			return InUse(errors.New("the process exited with status 1"), "listen tcp: "+err.Error())
		}
		return l.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tried) != 2 || tried[0][0] == tried[1][0] {
		t.Fatalf("ports tried: %v, want a second start on another port", tried)
	}
	for _, p := range tried {
		if len(p) != 3 || p[0] == p[1] || p[1] == p[2] || p[0] == p[2] {
			t.Errorf("ports %v, want three distinct ones", p)
		}
	}
}

func TestRetryReturnsOtherErrorsAtOnce(t *testing.T) {
	refused := errors.New("flag provided but not defined")
	starts := 0
	err := Retry(1, func([]int) error { starts++; return refused })
	if !errors.Is(err, refused) || starts != 1 {
		t.Fatalf("%d starts, error %v; want one start and its error", starts, err)
	}
}

func TestRetryGivesUpAfterAttempts(t *testing.T) {
	starts := 0
	err := Retry(1, func([]int) error { starts++; return fmt.Errorf("bind: %w", syscall.EADDRINUSE) })
	if !errors.Is(err, syscall.EADDRINUSE) || starts != Attempts {
		t.Fatalf("%d starts, error %v; want %d and the last error", starts, err, Attempts)
	}
}

func TestInUseRecognisesTheKernelsErrorInAProcessLog(t *testing.T) {
	exited := errors.New("exit status 1")
	log := `{"level":"error","msg":"problem running manager","error":"failed to start metrics server: failed to create listener: listen tcp 127.0.0.1:41195: bind: address already in use"}`
	if err := InUse(exited, log); !errors.Is(err, syscall.EADDRINUSE) || !errors.Is(err, exited) {
		t.Errorf("InUse = %v, want both errors", err)
	}
	if err := InUse(exited, `"error":"no kubeconfig"`); errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("InUse = %v for a log without the kernel's error", err)
	}
	if InUse(nil, log) != nil {
		t.Errorf("InUse made an error of a start that succeeded")
	}
}

// Bound tells the process's own listeners from a port that merely
// answers.
func TestBoundNamesOnlyThePortsTheProcessListensOn(t *testing.T) {
	own, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	ownPort := own.Addr().(*net.TCPAddr).Port
	// A connection, and a port listened on by another process.
	conn, err := net.Dial("tcp", own.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	other := exec.Command("python3", "-c", "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print(s.getsockname()[1], flush=True); sys.stdin.read()")
	stdin, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err != nil {
		t.Skipf("no python3 to listen from another process: %v", err)
	}
	defer func() { _ = stdin.Close(); _ = other.Wait() }()
	var otherPort int
	if _, err := fmt.Fscan(out, &otherPort); err != nil {
		t.Fatal(err)
	}

	if err := Bound(os.Getpid(), ownPort); err != nil {
		t.Errorf("own listener: %v", err)
	}
	if err := Bound(other.Process.Pid, otherPort); err != nil {
		t.Errorf("the other process's listener: %v", err)
	}
	for _, p := range []int{otherPort, conn.LocalAddr().(*net.TCPAddr).Port} {
		if Bound(os.Getpid(), ownPort, p) == nil {
			t.Errorf("port %d counts as bound by this process (the other process's listener, then the connection)", p)
		}
	}
	if Bound(other.Process.Pid, ownPort) == nil {
		t.Errorf("this process's port %d counts as bound by the other", ownPort)
	}
}
