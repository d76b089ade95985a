// SPDX-License-Identifier: Apache-2.0

package libvirtd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/network"
	"libvirt.org/go/libvirt"

	"github.com/kubevirt-plugins/framework/tests/framework/docker"
)

const (
	// DefaultImage is the image hack/build-libvirtd-image.sh tags last.
	DefaultImage = "kvp-libvirtd:latest"
	// ImageEnv overrides DefaultImage.
	ImageEnv = "KVP_LIBVIRTD_IMAGE"
	// DefaultReadyTimeout bounds the wait for libvirtd to answer.
	DefaultReadyTimeout = 2 * time.Minute
)

// Options configures Start.
type Options struct {
	// Image is the libvirtd image. Default: $KVP_LIBVIRTD_IMAGE, else
	// DefaultImage. It must exist locally: Start never pulls.
	Image string
	// Network is a network made by NewNetwork to attach the container to.
	// Default nil: Docker's default bridge, where containers have no names.
	Network *Network
	// Alias is the container's host name, and its name on Network. Default:
	// "libvirtd-" plus a random suffix.
	Alias string
	// Binds are Docker bind mounts, "host dir:container dir[:ro]", for socket
	// directories and ISO directories. Default none.
	Binds []string
	// ReadyTimeout bounds the wait for the daemon to answer. Default
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Logger receives testcontainers' progress lines. Default: its default
	// logger (standard error); StartT uses the test's log instead.
	Logger tclog.Logger
}

// Network is a user-defined Docker network.
type Network struct {
	// Name is the Docker network name.
	Name string
	nw   *testcontainers.DockerNetwork
}

// Node is a running libvirtd container.
type Node struct {
	// Hostname is the container's host name and its alias on the network
	// it was attached to; peers on that network resolve it.
	Hostname string
	// IP is the container's address, reachable from the host.
	IP string
	// Container is the underlying testcontainers container.
	Container *testcontainers.DockerContainer
}

// NewNetwork creates a user-defined bridge network. Remove it when done.
func NewNetwork(ctx context.Context) (*Network, error) {
	docker.NoReaper()
	nw, err := network.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("create docker network: %w", err)
	}
	return &Network{Name: nw.Name, nw: nw}, nil
}

// Remove deletes the network.
func (n *Network) Remove(ctx context.Context) error {
	if err := n.nw.Remove(ctx); err != nil {
		return fmt.Errorf("remove docker network %s: %w", n.Name, err)
	}
	return nil
}

// NewNetworkT is NewNetwork, failing tb on error and removing the network in
// tb's cleanup. Register it before the nodes attached to it, so that they are
// terminated first.
func NewNetworkT(tb testing.TB) *Network {
	tb.Helper()
	n, err := NewNetwork(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := n.Remove(context.Background()); err != nil {
			tb.Errorf("cleanup: %v", err)
		}
	})
	return n
}

// Start runs a libvirtd container and waits until the daemon answers on its
// TCP socket. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Node, error) {
	docker.NoReaper()
	image := opts.Image
	if image == "" {
		image = os.Getenv(ImageEnv)
	}
	if image == "" {
		image = DefaultImage
	}
	if err := requireLocalImage(ctx, image); err != nil {
		return nil, err
	}
	alias := opts.Alias
	if alias == "" {
		alias = "libvirtd-" + randomSuffix()
	}
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	var custom []testcontainers.ContainerCustomizer
	if opts.Logger != nil {
		custom = append(custom, testcontainers.WithLogger(opts.Logger))
	}
	custom = append(custom,
		testcontainers.WithConfigModifier(func(c *container.Config) {
			c.Hostname = alias
		}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			// Without an init the daemonized QEMU processes that libvirtd
			// starts and kills become zombies, and libvirtd waits for each
			// of them to go away for about 40 s.
			init := true
			hc.Init = &init
			hc.Binds = append(hc.Binds, opts.Binds...)
		}),
		testcontainers.WithExposedPorts("16509/tcp"),
	)
	if opts.Network != nil {
		custom = append(custom, network.WithNetwork([]string{alias}, opts.Network.nw))
	}
	ctr, err := testcontainers.Run(ctx, image, custom...)
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(context.Background())
		}
		return nil, fmt.Errorf("start libvirtd container from %s: %w", image, err)
	}
	node := &Node{Hostname: alias, Container: ctr}
	if err := node.init(ctx, timeout); err != nil {
		_ = ctr.Terminate(context.Background())
		return nil, err
	}
	return node, nil
}

// StartT is Start, failing tb on error and terminating the container in tb's
// cleanup.
func StartT(tb testing.TB, opts Options) *Node {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = tclog.TestLogger(tb)
	}
	node, err := Start(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := node.Terminate(context.Background()); err != nil {
			tb.Errorf("cleanup: %v", err)
		}
	})
	return node
}

func (n *Node) init(ctx context.Context, timeout time.Duration) error {
	inspect, err := n.Container.Inspect(ctx)
	if err != nil {
		return fmt.Errorf("inspect libvirtd container %s: %w", n.Hostname, err)
	}
	for _, ep := range inspect.NetworkSettings.Networks {
		if ep.IPAddress.IsValid() {
			n.IP = ep.IPAddress.String()
			break
		}
	}
	if n.IP == "" {
		return fmt.Errorf("libvirtd container %s has no IP address", n.Hostname)
	}
	return n.waitReady(ctx, timeout)
}

// waitReady polls the daemon through the same TCP listener the host uses,
// from inside the container, until it reports the hypervisor version (which
// needs the QEMU driver's capability probe to have finished).
func (n *Node) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		_, err := n.Exec(ctx, "virsh", "-c", "qemu+tcp://localhost/system", "version")
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("libvirtd in container %s not ready within %s: %w", n.Hostname, timeout, errors.Join(ctx.Err(), lastErr))
		case <-tick.C:
		}
	}
}

// URI is the libvirt URI the host uses to reach this daemon.
func (n *Node) URI() string {
	return "qemu+tcp://" + n.IP + "/system"
}

// PeerURI is the libvirt URI other containers on the same network use.
func (n *Node) PeerURI() string {
	return "qemu+tcp://" + n.Hostname + "/system"
}

// Exec runs cmd in the container and returns its combined output. A non-zero
// exit status is an error that carries the output.
func (n *Node) Exec(ctx context.Context, cmd ...string) (string, error) {
	code, r, err := n.Container.Exec(ctx, cmd, tcexec.Multiplexed())
	if err != nil {
		return "", fmt.Errorf("exec %q in %s: %w", strings.Join(cmd, " "), n.Hostname, err)
	}
	var out bytes.Buffer
	if _, err := io.Copy(&out, r); err != nil {
		return "", fmt.Errorf("read output of %q in %s: %w", strings.Join(cmd, " "), n.Hostname, err)
	}
	if code != 0 {
		return out.String(), fmt.Errorf("exec %q in %s: exit status %d: %s", strings.Join(cmd, " "), n.Hostname, code, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// Virsh runs virsh against the local system daemon in the container.
func (n *Node) Virsh(ctx context.Context, args ...string) (string, error) {
	return n.Exec(ctx, append([]string{"virsh", "-c", "qemu:///system"}, args...)...)
}

// Connect opens a libvirt connection from the host to this daemon. The
// caller closes it.
func (n *Node) Connect() (*libvirt.Connect, error) {
	conn, err := libvirt.NewConnect(n.URI())
	if err != nil {
		return nil, fmt.Errorf("connect to %s (%s): %w", n.URI(), n.Hostname, err)
	}
	return conn, nil
}

// ConnectT is Connect, failing tb on error and closing the connection in
// tb's cleanup.
func (n *Node) ConnectT(tb testing.TB) *libvirt.Connect {
	tb.Helper()
	conn, err := n.Connect()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if _, err := conn.Close(); err != nil {
			tb.Errorf("cleanup: close libvirt connection to %s: %v", n.Hostname, err)
		}
	})
	return conn
}

// Logs returns what the container wrote so far, for failure messages.
func (n *Node) Logs(ctx context.Context) string {
	r, err := n.Container.Logs(ctx)
	if err != nil {
		return fmt.Sprintf("(logs unavailable: %v)", err)
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

// Terminate stops and removes the container.
func (n *Node) Terminate(ctx context.Context) error {
	if err := n.Container.Terminate(ctx); err != nil {
		return fmt.Errorf("terminate libvirtd container %s: %w", n.Hostname, err)
	}
	return nil
}
