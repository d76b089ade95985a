// SPDX-License-Identifier: Apache-2.0

// Command cri-times prints, as JSON, the container runtime's own times of
// one Pod on this node: when its sandbox was created, and when each of its
// containers was created and started, in nanoseconds, from the CRI
// (the kind nodes have no crictl). tests/cluster's benchmark copies it onto
// each worker and runs it there.
//
//	cri-times [-runtime-endpoint unix:///run/containerd/containerd.sock] POD-UID
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Times is what cri-times prints.
type Times struct {
	Sandbox    time.Time   `json:"sandbox"`
	Containers []Container `json:"containers"`
}

// Container is one container's times.
type Container struct {
	Name    string    `json:"name"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Started time.Time `json:"started"`
}

func main() {
	endpoint := flag.String("runtime-endpoint", "unix:///run/containerd/containerd.sock", "the CRI endpoint")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: cri-times [-runtime-endpoint URL] POD-UID")
		os.Exit(2)
	}
	t, err := read(*endpoint, flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cri-times:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(t)
}

func read(endpoint, podUID string) (*Times, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rt := runtimev1.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sbs, err := rt.ListPodSandbox(ctx, &runtimev1.ListPodSandboxRequest{Filter: &runtimev1.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": podUID}}})
	if err != nil {
		return nil, err
	}
	if n := len(sbs.Items); n != 1 {
		return nil, fmt.Errorf("the Pod of UID %s has %d sandboxes, want 1", podUID, n)
	}
	sb := sbs.Items[0]
	t := &Times{Sandbox: time.Unix(0, sb.CreatedAt).UTC()}
	cs, err := rt.ListContainers(ctx, &runtimev1.ListContainersRequest{Filter: &runtimev1.ContainerFilter{PodSandboxId: sb.Id}})
	if err != nil {
		return nil, err
	}
	for _, c := range cs.Containers {
		st, err := rt.ContainerStatus(ctx, &runtimev1.ContainerStatusRequest{ContainerId: c.Id})
		if err != nil {
			return nil, err
		}
		t.Containers = append(t.Containers, Container{Name: c.Metadata.GetName(), ID: c.Id,
			Created: time.Unix(0, st.Status.CreatedAt).UTC(), Started: time.Unix(0, st.Status.StartedAt).UTC()})
	}
	return t, nil
}
