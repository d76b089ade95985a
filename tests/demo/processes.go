package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// prefixWriter prefixes every line written to w with a name, so that the
// log of several processes stays readable.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s | %s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// buildBinary builds a static binary of pkg inside module (a directory of
// the repository) into dir.
func (s *scenario) buildBinary(ctx context.Context, module, pkg, dir string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	// The flags of hack/images.sh, so that both share the build cache.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Dir = filepath.Join(s.opts.Root, module)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %w\n%s", pkg, module, err, out)
	}
	return bin, nil
}

// startProcess runs bin with args in the background, its output going to
// the log, and stops it (SIGTERM, then SIGKILL after 20s) in cleanup.
func (s *scenario) startProcess(name, bin string, args ...string) error {
	cmd := exec.Command(bin, args...)
	w := &prefixWriter{w: s.opts.Log, prefix: name}
	cmd.Stdout, cmd.Stderr = w, w
	// Its own process group: a Ctrl-C in the terminal reaches the demo,
	// which then stops the process itself, in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.cleanup.add(func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return nil
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("%s did not stop within 20s of SIGTERM; killed", name)
		}
	})
	s.processExited[name] = exited
	return nil
}

// freePort returns a TCP port on 127.0.0.1 nobody listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls url until it answers 200, or the process named name
// exits, or ctx ends.
func (s *scenario) waitReady(ctx context.Context, name, url string) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-s.processExited[name]:
			return fmt.Errorf("%s exited before it was ready: %v (its output is in the log)", name, err)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w", name, url, ctx.Err())
		case <-tick.C:
		}
	}
}

// waitFor polls cond every 200ms until it reports true or ctx ends; the
// last error cond returned is part of the timeout error.
func waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}
