// SPDX-License-Identifier: Apache-2.0

// Command virt-handler is the stand-in of KubeVirt's virt-handler on the
// real-cluster test: a DaemonSet Pod on every node that links
// handler-runtime. It keeps the Plugin store, and for the VMIs on its node
// it plays virt-handler's part of the VM's life:
//
//   - start: dispatch PreVMStart, hand the launcher its plugins
//     (launcherplugins) through the launcher's command socket and have it
//     boot, dispatch PostVMStart, set the VMI Running;
//   - migration target: dispatch PreMigrationTarget, have the target
//     launcher prepare, publish the target's address in the VMI's
//     migration state; once the migration completed, PostMigrationTarget;
//   - migration source: dispatch PreMigrationSource, have the source
//     launcher migrate to the target's address, complete the migration
//     state and move the VMI to the target node;
//   - stop (the VMI is being deleted): dispatch OnVMStop, have the launcher
//     stop its domain, wait for its Pod to complete, dispatch PostVMStop,
//     release the VMI's finalizer.
//
// virt-controller's part (the launcher Pods, the migration state's source
// and target) is the test's. Node hooks reach the node's plugin servers
// under /var/run/kubevirt, a host directory this Pod mounts; a launcher's
// command socket is found under the kubelet's Pod directory, also mounted.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	"github.com/kubevirt-plugins/framework/tests/cluster/standin/cmdsock"
)

const (
	// Finalizer keeps a VMI until the handler on its node has stopped it.
	Finalizer = "standin.kubevirt-plugins.io/virt-handler"
	// MigrationConfigAnnotation records, on the VMI, the migration flags
	// and parameters the source launcher used after PreMigrationSource.
	MigrationConfigAnnotation = "standin.kubevirt-plugins.io/migration-config"
)

type handler struct {
	log      logr.Logger
	node     string
	podsDir  string
	c        client.Client
	hooks    *dispatch.Dispatcher
	selector *launcherplugins.Selector

	mu   sync.Mutex
	busy map[types.UID]bool
	// postMigrated: VMIs whose PostMigrationTarget ran on this node.
	postMigrated map[types.UID]bool
}

func main() {
	podsDir := flag.String("pods-dir", "/var/lib/kubelet/pods", "the kubelet's Pod directory, as mounted")
	interval := flag.Duration("interval", 500*time.Millisecond, "how often the VMIs are looked at")
	flag.Parse()
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1}).WithName("virt-handler")
	if err := run(log, *podsDir, *interval); err != nil {
		log.Error(err, "virt-handler stand-in failed")
		os.Exit(1)
	}
}

func run(log logr.Logger, podsDir string, interval time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	node := os.Getenv("NODE_NAME")
	if node == "" {
		return errors.New("NODE_NAME is not set (the downward API's spec.nodeName)")
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := kubevirtv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	plugins, err := store.New(store.Options{Config: cfg, Logger: log.WithName("store")})
	if err != nil {
		return err
	}
	go func() { _ = plugins.Run(ctx) }()
	if !plugins.WaitForSync(ctx) {
		return errors.New("the Plugin store did not sync")
	}
	hooks, err := dispatch.New(dispatch.Options{Plugins: plugins, Logger: log.WithName("dispatch")})
	if err != nil {
		return err
	}
	defer hooks.Close()
	selector, err := launcherplugins.New(launcherplugins.Options{Plugins: plugins})
	if err != nil {
		return err
	}
	h := &handler{log: log, node: node, podsDir: podsDir, c: c, hooks: hooks, selector: selector,
		busy: map[types.UID]bool{}, postMigrated: map[types.UID]bool{}}
	log.Info("Plugin store synced; watching the VMIs of this node", "node", node)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		var vmis kubevirtv1.VirtualMachineInstanceList
		if err := c.List(ctx, &vmis); err != nil {
			log.Error(err, "listing VMIs")
			continue
		}
		for i := range vmis.Items {
			h.consider(ctx, &vmis.Items[i])
		}
	}
}

// consider starts, in its own goroutine, the step vmi needs from this
// node, unless one already runs for it. vmi comes from a list taken before
// the step of another goroutine may have ended: once it holds the VMI, the
// goroutine reads the VMI again and decides on what it reads, so that a
// step that has just ended (its status written, then the VMI released) is
// not run a second time from the older copy.
func (h *handler) consider(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) {
	if step, _ := h.next(vmi); step == nil {
		return
	}
	h.mu.Lock()
	if h.busy[vmi.UID] {
		h.mu.Unlock()
		return
	}
	h.busy[vmi.UID] = true
	h.mu.Unlock()
	go func() {
		defer func() {
			h.mu.Lock()
			delete(h.busy, vmi.UID)
			h.mu.Unlock()
		}()
		fresh := &kubevirtv1.VirtualMachineInstance{}
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(vmi), fresh); err != nil {
			if !apierrors.IsNotFound(err) {
				h.log.Error(err, "reading the VMI again", "vmi", vmi.Namespace+"/"+vmi.Name)
			}
			return
		}
		if fresh.UID != vmi.UID {
			return
		}
		vmi = fresh
		step, name := h.next(vmi)
		if step == nil {
			return
		}
		if err := step(ctx, vmi); err != nil {
			h.log.Error(err, "step failed; retried at the next look", "step", name, "vmi", vmi.Namespace+"/"+vmi.Name)
		}
	}()
}

type stepFunc func(context.Context, *kubevirtv1.VirtualMachineInstance) error

func (h *handler) next(vmi *kubevirtv1.VirtualMachineInstance) (stepFunc, string) {
	st := vmi.Status
	ms := st.MigrationState
	switch {
	case vmi.DeletionTimestamp != nil:
		if st.NodeName == h.node && slices.Contains(vmi.Finalizers, Finalizer) {
			return h.stop, "stop"
		}
	case st.NodeName == h.node && st.Phase == kubevirtv1.Scheduled:
		return h.start, "start"
	case ms != nil && !ms.Completed && !ms.Failed && ms.TargetNode == h.node && ms.TargetNodeAddress == "":
		return h.prepareTarget, "prepare migration target"
	case ms != nil && !ms.Completed && !ms.Failed && ms.SourceNode == h.node && st.NodeName == h.node && ms.TargetNodeAddress != "":
		return h.migrate, "migrate"
	case ms != nil && ms.Completed && ms.TargetNode == h.node && st.NodeName == h.node && !h.isPostMigrated(vmi.UID):
		return h.postMigrationTarget, "post migration target"
	}
	return nil, ""
}

func (h *handler) isPostMigrated(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.postMigrated[uid]
}

// DispatchedMessage begins the log line of every node hook dispatch, which
// gives its hook point and how long it took ("took", a Go duration).
const DispatchedMessage = "node hooks dispatched"

func (h *handler) dispatch(ctx context.Context, point pluginv1alpha1.NodeHookPoint, vmi *kubevirtv1.VirtualMachineInstance) error {
	start := time.Now()
	err := h.hooks.Dispatch(ctx, point, vmi, dispatch.NodeContext{NodeName: h.node})
	h.log.Info(DispatchedMessage, "hookPoint", point, "vmi", vmi.Namespace+"/"+vmi.Name, "took", time.Since(start).String(), "error", errText(err))
	return err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// launcherPod finds the launcher Pod of vmi on this node: the one whose
// UID is an active Pod on this node (or, for a migration target, the
// target Pod), and the command socket it serves once it runs.
func (h *handler) launcherPod(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, name string) (*corev1.Pod, string, error) {
	var pods corev1.PodList
	if err := h.c.List(ctx, &pods, client.InNamespace(vmi.Namespace), client.MatchingLabels{"kubevirt.io/created-by": string(vmi.UID)}); err != nil {
		return nil, "", err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != h.node {
			continue
		}
		if name != "" && p.Name != name {
			continue
		}
		if name == "" && vmi.Status.ActivePods[p.UID] != h.node {
			continue
		}
		sock := cmdsock.OnNode(h.podsDir, string(p.UID))
		if p.Status.Phase != corev1.PodRunning {
			return p, "", fmt.Errorf("launcher Pod %s is %s, not Running yet", p.Name, p.Status.Phase)
		}
		if _, err := os.Stat(sock); err != nil {
			return p, "", fmt.Errorf("launcher Pod %s does not serve its command socket yet: %w", p.Name, err)
		}
		return p, sock, nil
	}
	return nil, "", fmt.Errorf("no launcher Pod of VMI %s/%s on node %s", vmi.Namespace, vmi.Name, h.node)
}

func (h *handler) plugins(vmi *kubevirtv1.VirtualMachineInstance) (json.RawMessage, error) {
	lp, err := h.selector.LauncherPlugins(vmi)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(lp.Data), nil
}

func (h *handler) patchStatus(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, edit func(*kubevirtv1.VirtualMachineInstance)) error {
	fresh := &kubevirtv1.VirtualMachineInstance{}
	if err := h.c.Get(ctx, client.ObjectKeyFromObject(vmi), fresh); err != nil {
		return err
	}
	before := fresh.DeepCopy()
	edit(fresh)
	return h.c.Status().Patch(ctx, fresh, client.MergeFrom(before))
}

func (h *handler) start(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	_, sock, err := h.launcherPod(ctx, vmi, "")
	if err != nil {
		return err
	}
	// Each step is timed; the timeline goes on the VMI (cmdsock.Timeline).
	rec := cmdsock.NewRecorder()
	if err := rec.Do(cmdsock.StepPreVMStart, func() error { return h.dispatch(ctx, pluginv1alpha1.PreVMStart, vmi) }); err != nil {
		return err
	}
	var plugins json.RawMessage
	if err := rec.Do(cmdsock.StepSelectPlugins, func() (err error) { plugins, err = h.plugins(vmi); return err }); err != nil {
		return err
	}
	var answer *cmdsock.Answer
	err = rec.Do(cmdsock.StepBootCommand, func() (err error) {
		answer, err = cmdsock.Call(ctx, sock, cmdsock.PathBoot, &cmdsock.Request{VMI: vmi, Plugins: plugins})
		return err
	})
	if err != nil {
		return err
	}
	if err := rec.Do(cmdsock.StepPostVMStart, func() error { return h.dispatch(ctx, pluginv1alpha1.PostVMStart, vmi) }); err != nil {
		return err
	}
	return rec.Do(cmdsock.StepSetRunning, func() error {
		if err := h.annotateTimeline(ctx, vmi, &cmdsock.Timeline{Launcher: answer.Timeline, Handler: rec.Steps}); err != nil {
			return err
		}
		return h.patchStatus(ctx, vmi, func(v *kubevirtv1.VirtualMachineInstance) { v.Status.Phase = kubevirtv1.Running })
	})
}

// annotateTimeline writes the boot's timeline on the VMI; the handler's
// last step (set-running) is still open and left out.
func (h *handler) annotateTimeline(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, tl *cmdsock.Timeline) error {
	data, err := json.Marshal(tl)
	if err != nil {
		return err
	}
	return h.annotate(ctx, vmi, cmdsock.TimelineAnnotation, string(data))
}

// annotate sets one annotation on the VMI as it is now.
func (h *handler) annotate(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, key, value string) error {
	fresh := &kubevirtv1.VirtualMachineInstance{}
	if err := h.c.Get(ctx, client.ObjectKeyFromObject(vmi), fresh); err != nil {
		return err
	}
	patch := client.MergeFrom(fresh.DeepCopy())
	if fresh.Annotations == nil {
		fresh.Annotations = map[string]string{}
	}
	fresh.Annotations[key] = value
	return h.c.Patch(ctx, fresh, patch)
}

func (h *handler) prepareTarget(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	pod, sock, err := h.launcherPod(ctx, vmi, vmi.Status.MigrationState.TargetPod)
	if err != nil {
		return err
	}
	if err := h.dispatch(ctx, pluginv1alpha1.PreMigrationTarget, vmi); err != nil {
		return err
	}
	plugins, err := h.plugins(vmi)
	if err != nil {
		return err
	}
	if _, err := cmdsock.Call(ctx, sock, cmdsock.PathPrepareTarget, &cmdsock.Request{VMI: vmi, Plugins: plugins}); err != nil {
		return err
	}
	return h.patchStatus(ctx, vmi, func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.MigrationState.TargetNodeAddress = pod.Status.PodIP
	})
}

func (h *handler) migrate(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	_, sock, err := h.launcherPod(ctx, vmi, "")
	if err != nil {
		return err
	}
	if err := h.dispatch(ctx, pluginv1alpha1.NodePreMigrationSource, vmi); err != nil {
		return err
	}
	ms := vmi.Status.MigrationState
	a, err := cmdsock.Call(ctx, sock, cmdsock.PathMigrate, &cmdsock.Request{VMI: vmi, TargetAddress: ms.TargetNodeAddress})
	if err != nil {
		return h.patchStatus(ctx, vmi, func(v *kubevirtv1.VirtualMachineInstance) { v.Status.MigrationState.Failed = true })
	}
	var target corev1.Pod
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: vmi.Namespace, Name: ms.TargetPod}, &target); err != nil {
		return err
	}
	config, _ := json.Marshal(map[string]string{"flags": a.Flags, "params": a.Params})
	if err := h.annotate(ctx, vmi, MigrationConfigAnnotation, string(config)); err != nil {
		return err
	}
	return h.patchStatus(ctx, vmi, func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.MigrationState.Completed = true
		v.Status.NodeName = ms.TargetNode
		v.Status.ActivePods = map[types.UID]string{target.UID: ms.TargetNode}
	})
}

func (h *handler) postMigrationTarget(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	if err := h.dispatch(ctx, pluginv1alpha1.PostMigrationTarget, vmi); err != nil {
		return err
	}
	h.mu.Lock()
	h.postMigrated[vmi.UID] = true
	h.mu.Unlock()
	return nil
}

func (h *handler) stop(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	if err := h.dispatch(ctx, pluginv1alpha1.OnVMStop, vmi); err != nil {
		return err
	}
	pod, sock, err := h.launcherPod(ctx, vmi, "")
	if err == nil {
		if _, err := cmdsock.Call(ctx, sock, cmdsock.PathStop, &cmdsock.Request{VMI: vmi}); err != nil {
			return err
		}
	}
	if pod != nil {
		// The launcher exits once its domain is gone; its Pod completes.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var p corev1.Pod
			err := h.c.Get(ctx, client.ObjectKeyFromObject(pod), &p)
			if apierrors.IsNotFound(err) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("launcher Pod %s did not complete within 2m after its domain stopped", pod.Name)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	if err := h.dispatch(ctx, pluginv1alpha1.PostVMStop, vmi); err != nil {
		return err
	}
	fresh := &kubevirtv1.VirtualMachineInstance{}
	if err := h.c.Get(ctx, client.ObjectKeyFromObject(vmi), fresh); err != nil {
		return client.IgnoreNotFound(err)
	}
	patch := client.MergeFrom(fresh.DeepCopy())
	fresh.Finalizers = slices.DeleteFunc(fresh.Finalizers, func(f string) bool { return f == Finalizer })
	return h.c.Patch(ctx, fresh, patch)
}
