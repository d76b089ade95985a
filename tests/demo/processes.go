// SPDX-License-Identifier: Apache-2.0

package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
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

// lineWriter calls line with every complete line written to it.
type lineWriter struct {
	line func(string)
	buf  []byte
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.buf = append(l.buf, b...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			return len(b), nil
		}
		l.line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}

// containerLogs is what the container wrote so far, or "" when Docker
// does not say.
func containerLogs(ctx context.Context, c *testcontainers.DockerContainer) string {
	r, err := c.Logs(ctx)
	if err != nil {
		return ""
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

// waitReady polls url until it answers 200, or alive reports that the
// component name is gone, or ctx ends.
func (s *scenario) waitReady(ctx context.Context, name, url string, alive func() error) error {
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
		if err := alive(); err != nil {
			return fmt.Errorf("%s stopped before it was ready: %w", name, err)
		}
		select {
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
				return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}
