// SPDX-License-Identifier: Apache-2.0

package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	corev1 "k8s.io/api/core/v1"
)

// tcLogger sends testcontainers' progress lines to the scenario log.
type tcLogger struct{ w io.Writer }

func (l tcLogger) Printf(format string, v ...any) {
	fmt.Fprintf(l.w, "testcontainers | "+format+"\n", v...)
}

// podHost is where the kubelet stand-in keeps one Pod's volumes on the
// host: <dir>/<volume name>/, bind-mounted into the containers.
type podHost struct {
	pod *corev1.Pod
	dir string
	// sidecars are the plugin sidecars' containers, by container name.
	sidecars map[string]*testcontainers.DockerContainer
}

// volumeDir returns the host directory of the Pod volume name, creating it
// and, for a downward API volume, writing its files from the Pod object.
// hostPath volumes live under hostRoot, which stands in for the node's
// file system.
func (p *podHost) volumeDir(name, hostRoot string) (string, error) {
	var vol *corev1.Volume
	for i := range p.pod.Spec.Volumes {
		if p.pod.Spec.Volumes[i].Name == name {
			vol = &p.pod.Spec.Volumes[i]
		}
	}
	if vol == nil {
		return "", fmt.Errorf("pod %s has no volume %q", p.pod.Name, name)
	}
	switch {
	case vol.HostPath != nil:
		dir := filepath.Join(hostRoot, vol.HostPath.Path)
		return dir, os.MkdirAll(dir, 0o755)
	case vol.EmptyDir != nil:
		dir := filepath.Join(p.dir, name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		// The kubelet makes emptyDirs world-writable, so that containers
		// running as any user can use them.
		return dir, os.Chmod(dir, 0o777)
	case vol.DownwardAPI != nil:
		dir := filepath.Join(p.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		for _, item := range vol.DownwardAPI.Items {
			if item.FieldRef == nil {
				return "", fmt.Errorf("volume %s item %s: only fieldRef items are supported", name, item.Path)
			}
			v, err := fieldValue(p.pod, item.FieldRef.FieldPath)
			if err != nil {
				return "", fmt.Errorf("volume %s item %s: %w", name, item.Path, err)
			}
			if err := os.WriteFile(filepath.Join(dir, item.Path), []byte(v), 0o644); err != nil {
				return "", err
			}
		}
		return dir, nil
	}
	return "", fmt.Errorf("pod %s volume %q: only emptyDir, hostPath and downwardAPI volumes are supported", p.pod.Name, name)
}

var mapField = regexp.MustCompile(`^metadata\.(annotations|labels)\['([^']+)'\]$`)

// fieldValue resolves a downward API field path on pod.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	m := mapField.FindStringSubmatch(path)
	if m == nil {
		return "", fmt.Errorf("unsupported field path %q", path)
	}
	if m[1] == "annotations" {
		return pod.Annotations[m[2]], nil
	}
	return pod.Labels[m[2]], nil
}

// runPodContainer runs the container name of the Pod as a Docker
// container, the way the kubelet would: image, args, volume mounts (with
// subPath), user and read-only root file system from the spec. The
// container is removed in cleanup.
func (s *scenario) runPodContainer(ctx context.Context, p *podHost, name, hostRoot string) (*testcontainers.DockerContainer, error) {
	c := podContainer(p.pod, name)
	if c == nil {
		return nil, fmt.Errorf("pod %s has no container %q", p.pod.Name, name)
	}
	var binds []string
	for _, m := range c.VolumeMounts {
		dir, err := p.volumeDir(m.Name, hostRoot)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", name, err)
		}
		if m.SubPath != "" {
			dir = filepath.Join(dir, m.SubPath)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, err
			}
			_ = os.Chmod(dir, 0o777)
		}
		bind := dir + ":" + m.MountPath
		if m.ReadOnly {
			bind += ":ro"
		}
		binds = append(binds, bind)
	}
	user := ""
	readOnlyRoot := false
	if psc := p.pod.Spec.SecurityContext; psc != nil && psc.RunAsUser != nil {
		user = strconv.FormatInt(*psc.RunAsUser, 10)
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			user = strconv.FormatInt(*sc.RunAsUser, 10)
		}
		readOnlyRoot = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	}
	ctr, err := testcontainers.Run(ctx, c.Image,
		testcontainers.WithLogger(tcLogger{s.opts.Log}),
		testcontainers.WithCmd(c.Args...),
		testcontainers.WithConfigModifier(func(cfg *container.Config) {
			cfg.User = user
			cfg.Labels = map[string]string{"io.kubevirt-plugins.demo": "true"}
		}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.Binds = append(hc.Binds, binds...)
			hc.ReadonlyRootfs = readOnlyRoot
			if p.pod.Spec.HostNetwork {
				hc.NetworkMode = "host"
			}
		}),
	)
	if ctr != nil {
		s.cleanup.add(func() error {
			if logs, err := ctr.Logs(context.Background()); err == nil {
				w := &prefixWriter{w: s.opts.Log, prefix: name}
				_, _ = io.Copy(w, logs)
				logs.Close()
			}
			if err := ctr.Terminate(context.Background()); err != nil {
				return fmt.Errorf("remove container %s: %w", name, err)
			}
			return nil
		})
	}
	if err := err; err != nil {
		return nil, fmt.Errorf("run container %s from %s: %w", name, c.Image, err)
	}
	return ctr, nil
}

// shortID is the first 12 characters of a container ID.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// podContainer returns the Pod's container of that name, a regular or an
// init container (injected sidecars are native sidecars: init containers
// with restartPolicy Always).
func podContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// nativeSidecar returns the Pod's init container of that name when it is
// a native sidecar (restartPolicy Always), else nil.
func nativeSidecar(pod *corev1.Pod, name string) *corev1.Container {
	for i, c := range pod.Spec.InitContainers {
		if c.Name == name && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// containerSummary describes a running container in one line.
func containerSummary(c *corev1.Container, id string) string {
	return fmt.Sprintf("%-20s %-36s %s  args: %s", c.Name, c.Image, shortID(id), strings.Join(c.Args, " "))
}
