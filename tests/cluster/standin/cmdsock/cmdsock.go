// SPDX-License-Identifier: Apache-2.0

// Package cmdsock is the virt-launcher stand-in's command socket: JSON over
// HTTP on a Unix socket in the launcher Pod's "sockets" emptyDir, which the
// virt-handler stand-in reaches from the node, as KubeVirt's virt-handler
// reaches virt-launcher's command server.
package cmdsock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

const (
	// VolumeName is the launcher Pod's emptyDir holding the socket, and
	// MountPath where compute mounts it.
	VolumeName = "sockets"
	MountPath  = "/var/run/kubevirt/sockets"
	// SocketName is the socket's file name in that directory.
	SocketName = "launcher.sock"
)

// OnNode is the socket of the launcher Pod podUID as the node sees it
// under the kubelet's Pod directory podsDir.
func OnNode(podsDir, podUID string) string {
	return filepath.Join(podsDir, podUID, "volumes", "kubernetes.io~empty-dir", VolumeName, SocketName)
}

// GuestConsole is where the launcher's guest writes its serial console in
// the compute container: the test guest's report (tests/framework/guest).
const GuestConsole = "/var/log/kvp-guest/console.log"

// Paths of the commands.
const (
	PathBoot          = "/boot"
	PathPrepareTarget = "/prepare-target"
	PathMigrate       = "/migrate"
	PathStop          = "/stop"
	PathDomain        = "/domain"
)

// Request is the body of every command. Plugins is what virt-handler hands
// the launcher: launcherplugins' encoded PluginList.
type Request struct {
	VMI     *kubevirtv1.VirtualMachineInstance `json:"vmi"`
	Plugins json.RawMessage                    `json:"plugins,omitempty"`
	// TargetAddress is the migration target's address (PathMigrate).
	TargetAddress string `json:"targetAddress,omitempty"`
}

// Answer is the body of every answer.
type Answer struct {
	// Error is set when the command failed.
	Error string `json:"error,omitempty"`
	// DomainXML is the live domain (PathBoot, PathDomain).
	DomainXML string `json:"domainXML,omitempty"`
	// State is the domain's state as libvirt reports it.
	State string `json:"state,omitempty"`
	// Flags and Params are what PreMigrationSource made of the migration
	// configuration (PathMigrate), as text.
	Flags  string `json:"flags,omitempty"`
	Params string `json:"params,omitempty"`
	// Timeline is the launcher's part of the boot (PathBoot).
	Timeline *LauncherTimeline `json:"timeline,omitempty"`
}

// Call sends req to the launcher at socket and decodes its answer; a
// command the launcher refused is an error.
func Call(ctx context.Context, socket, path string, req *Request) (*Answer, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, socket)
		},
		DisableKeepAlives: true,
	}, Timeout: 5 * time.Minute}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://launcher"+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("launcher command %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("launcher command %s: reading the answer: %w", path, err)
	}
	var a Answer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("launcher command %s: answer %q: %w", path, data, err)
	}
	if a.Error != "" {
		return &a, fmt.Errorf("launcher command %s: %s", path, a.Error)
	}
	return &a, nil
}

// dial connects to socket through its directory opened with O_PATH: the
// path under the kubelet's Pod directory is longer than a sockaddr_un can
// hold (108 bytes), /proc/self/fd/N/<name> is not.
func dial(ctx context.Context, socket string) (net.Conn, error) {
	dir, err := os.OpenFile(filepath.Dir(socket), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	var d net.Dialer
	return d.DialContext(ctx, "unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(socket)))
}
