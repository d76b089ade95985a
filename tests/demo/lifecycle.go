// SPDX-License-Identifier: Apache-2.0

package demo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/pmezard/go-difflib/difflib"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/sample-sidecars/cloudinit-network/cloudinitnetwork"
	"github.com/kubevirt-plugins/framework/sample-sidecars/node-hook-recorder/recorder"
)

// handler is the part of virt-handler on one node that the runtimes
// provide: the Plugin store, node hook dispatch and the launcher plugins.
type handler struct {
	node       string
	store      *store.Store
	dispatcher *dispatch.Dispatcher
	selector   *launcherplugins.Selector
}

// launcher is the part of virt-launcher that the runtimes provide.
type launcher struct {
	pipeline *pipeline.Pipeline
	domain   *libvirtxml.Domain
	dom      *libvirt.Domain
	// isoPath is the cloud-init ISO as the compute container sees it;
	// isoHostPath the same file on this host.
	isoPath, isoHostPath string
}

// nodeHookRoot is the host directory virt-handler accepts node hook
// sockets under (dispatch.DefaultSocketRoot), relative to a node's root.
const nodeHookRoot = dispatch.DefaultSocketRoot

func (s *scenario) startNodeHookServer(ctx context.Context) error {
	us, err := readManifests(s.samplePath("node-hook-recorder", "daemonset.yaml"))
	if err != nil {
		return err
	}
	var ds appsv1.DaemonSet
	if len(us) != 1 {
		return fmt.Errorf("daemonset.yaml: want one DaemonSet, found %d objects", len(us))
	}
	if err := toTyped(us[0], &ds); err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-demo", Namespace: ds.Namespace}, Spec: ds.Spec.Template.Spec}
	host := &podHost{pod: pod, dir: filepath.Join(s.tmp, "recorder-pod")}
	var ctrName string
	for _, c := range pod.Spec.Containers {
		ctrName = c.Name
	}
	ctr, err := s.runPodContainer(ctx, host, ctrName, s.hostRoot)
	if err != nil {
		return err
	}
	s.show(containerSummary(&pod.Spec.Containers[0], ctr.GetContainerID()))
	s.show("one recorder stands for the DaemonSet's Pods on both nodes: both \"hosts\" are " + strings.TrimPrefix(s.hostRoot, s.tmp+"/"))
	var p pluginv1alpha1.Plugin
	if err := s.server.Client.Get(ctx, client.ObjectKey{Name: "node-hook-recorder"}, &p); err != nil {
		return err
	}
	sock := p.Spec.NodeHooks[0].Socket
	err = waitFor(ctx, "socket "+sock, func() (bool, error) {
		fi, err := os.Stat(sock)
		return err == nil && fi.Mode()&os.ModeSocket != 0, err
	})
	s.check("node-hook-recorder serves the socket its Plugin names", err == nil, "%s", strings.TrimPrefix(sock, s.tmp+"/"))
	return nil
}

func (s *scenario) eventsFile() string {
	return filepath.Join(s.hostRoot, "var/lib/node-hook-recorder/events.jsonl")
}

// newHandler starts the Plugin store of one node's virt-handler; it runs
// until cleanup.
func (s *scenario) newHandler(ctx context.Context, node string) (*handler, error) {
	log := s.log.WithName("virt-handler").WithValues("node", node)
	st, err := store.New(store.Options{Config: s.server.Config, Logger: log})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = st.Run(runCtx) }()
	s.cleanup.add(func() error { cancel(); <-done; return nil })
	if !st.WaitForSync(ctx) {
		return nil, fmt.Errorf("virt-handler on %s: Plugin store did not sync: %w", node, ctx.Err())
	}
	d, err := dispatch.New(dispatch.Options{
		Plugins: st, Logger: log,
		SocketRoots: []string{filepath.Join(s.hostRoot, nodeHookRoot) + "/"},
	})
	if err != nil {
		return nil, err
	}
	s.cleanup.add(d.Close)
	sel, err := launcherplugins.New(launcherplugins.Options{Plugins: st})
	if err != nil {
		return nil, err
	}
	return &handler{node: node, store: st, dispatcher: d, selector: sel}, nil
}

// freshVMI reads the VMI from the API server.
func (s *scenario) freshVMI(ctx context.Context) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := s.server.Client.Get(ctx, client.ObjectKeyFromObject(s.vmi), vmi); err != nil {
		return nil, err
	}
	return vmi, nil
}

// dispatch calls the node hooks of point on node i and checks the call.
func (s *scenario) dispatch(ctx context.Context, i int, point pluginv1alpha1.NodeHookPoint) bool {
	vmi, err := s.freshVMI(ctx)
	if err == nil {
		err = s.handlers[i].dispatcher.Dispatch(ctx, point, vmi, dispatch.NodeContext{NodeName: nodeNames[i]})
	}
	return s.check(fmt.Sprintf("virt-handler on %s dispatched %s", nodeNames[i], point), err == nil, "%s", errText(err))
}

func (s *scenario) handlerPrepare(ctx context.Context) error {
	for i, node := range nodeNames {
		h, err := s.newHandler(ctx, node)
		if err != nil {
			return err
		}
		s.handlers[i] = h
	}
	s.show("Plugin stores of virt-handler on node1 and node2 synced")
	if !s.dispatch(ctx, 0, pluginv1alpha1.PreVMStart) {
		return errCheckFailed
	}
	vmi, err := s.freshVMI(ctx)
	if err != nil {
		return err
	}
	lp, err := s.handlers[0].selector.LauncherPlugins(vmi)
	if err != nil {
		return err
	}
	plugins, err := launcherplugins.Decode(lp.Data)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range plugins {
		names = append(names, p.Name)
	}
	s.show(fmt.Sprintf("handed to the launcher: %d bytes, generation %.12s…, plugins %s", len(lp.Data), lp.Generation, strings.Join(names, ", ")))
	want := append([]string{celPluginName}, samplePlugins...)
	sort.Strings(want)
	s.check("the launcher gets every plugin with launcher hooks, by name, and not the node-hook-only one",
		slices.Equal(names, want), "got %v, want %v", names, want)
	sockets, err := s.host.volumeDir(pluginv1alpha1.SocketsVolumeName, s.hostRoot)
	if err != nil {
		return err
	}
	p, err := pipeline.New(plugins, pipeline.Options{Logger: s.log.WithName("virt-launcher"), SocketRoot: sockets})
	if err != nil {
		return err
	}
	disks, err := s.host.volumeDir("ephemeral-disks", s.hostRoot)
	if err != nil {
		return err
	}
	rel := filepath.Join("cloud-init-data", namespace, vmName, "noCloud.iso")
	s.launcher = &launcher{
		pipeline:    p,
		isoPath:     filepath.Join(pluginv1alpha1.EphemeralDiskDir, rel),
		isoHostPath: filepath.Join(disks, rel),
	}
	s.show("virt-launcher's pipeline built from them; sidecar sockets under " + pluginv1alpha1.SocketsRoot + " = " + strings.TrimPrefix(sockets, s.tmp+"/"))
	return nil
}

func unifiedDiff(before, after, fromName, toName string) string {
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(before), B: difflib.SplitLines(after),
		FromFile: fromName, ToFile: toName, Context: 1,
	})
	return diff
}

// smbiosEntry returns the value of a system entry of the domain's SMBIOS
// sysinfo, and whether it is there.
func smbiosEntry(d *libvirtxml.Domain, name string) (string, bool) {
	for _, si := range d.SysInfo {
		if si.SMBIOS == nil || si.SMBIOS.System == nil {
			continue
		}
		for _, e := range si.SMBIOS.System.Entry {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

// checkDomain checks what the CEL hook and the sidecar put into d; where
// says whose view of the domain it is.
func (s *scenario) checkDomain(d *libvirtxml.Domain, where string) {
	wantTitle := "demo VM " + namespace + "/" + vmName
	s.check(where+": CEL hook set the title", d.Title == wantTitle, "title %q", d.Title)
	vcpus, topo := uint(0), ""
	if d.VCPU != nil {
		vcpus = d.VCPU.Value
	}
	if d.CPU != nil && d.CPU.Topology != nil {
		topo = fmt.Sprintf("%d socket(s) x %d core(s) x %d thread(s)", d.CPU.Topology.Sockets, d.CPU.Topology.Cores, d.CPU.Topology.Threads)
	}
	s.check(where+": CEL hook set 2 vCPUs as 1 socket x 2 cores", vcpus == 2 && topo == "1 socket(s) x 2 core(s) x 1 thread(s)", "%d vCPUs, %s", vcpus, topo)
	m, _ := smbiosEntry(d, "manufacturer")
	p, _ := smbiosEntry(d, "product")
	u, _ := smbiosEntry(d, "uuid")
	s.check(where+": smbios-watchdog set SMBIOS from the labels and kept KubeVirt's uuid entry",
		m == "Example" && p == "Edge-1" && u == firmwareUUID, "manufacturer %q, product %q, uuid %q", m, p, u)
	action := ""
	if d.Devices != nil {
		for _, w := range d.Devices.Watchdogs {
			if w.Model == "i6300esb" {
				action = w.Action
			}
		}
	}
	s.check(where+": smbios-watchdog added an i6300esb watchdog with action reset", action == "reset", "action %q", action)
}

func (s *scenario) guestDefinition(ctx context.Context) error {
	vmi, err := s.freshVMI(ctx)
	if err != nil {
		return err
	}
	base := baseDomain(s.launcher.isoPath)
	before, err := base.Marshal()
	if err != nil {
		return err
	}
	out, err := s.launcher.pipeline.GuestDefinition(ctx, vmi, base, pipeline.Boot)
	if err != nil {
		return err
	}
	after, err := out.Marshal()
	if err != nil {
		return err
	}
	s.show("domain XML diff made by the hooks (cel-tuning, then smbios-watchdog):")
	s.show(unifiedDiff(before, after, "generated by virt-launcher", "after GuestDefinition"))
	s.checkDomain(out, "GuestDefinition result")
	again, err := s.launcher.pipeline.GuestDefinition(ctx, vmi, out, pipeline.Boot)
	if err == nil {
		var x string
		x, err = again.Marshal()
		s.check("GuestDefinition is idempotent: run again on its result it changes nothing", err == nil && x == after, "%s", errText(err))
	} else {
		s.check("GuestDefinition is idempotent: run again on its result it changes nothing", false, "%v", err)
	}
	s.launcher.domain = out
	return nil
}

// nocloud files in the ISO the demo makes, as KubeVirt would from the
// VMI's cloudInitNoCloud volume.
const (
	userData      = "#cloud-config\nhostname: demo-vm\nssh_pwauth: false\n"
	metaData      = "instance-id: demo-vm\nlocal-hostname: demo-vm\n"
	networkConfig = "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n"
	// qemuUID is the user virt-launcher and the sidecars run as.
	qemuUID = 107
)

func (s *scenario) preBoot(ctx context.Context) error {
	l := s.launcher
	src := filepath.Join(s.tmp, "nocloud")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	for name, content := range map[string]string{"user-data": userData, "meta-data": metaData, "network-config": networkConfig} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	dir := filepath.Dir(l.isoHostPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "genisoimage", "-output", l.isoHostPath, "-volid", "cidata", "-joliet", "-rock", src)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("genisoimage: %w\n%s", err, out)
	}
	// virt-launcher owns the ISO and its directory, as the qemu user.
	for _, p := range []string{l.isoHostPath, dir} {
		if err := os.Chown(p, qemuUID, qemuUID); err != nil {
			return err
		}
	}
	s.show("NoCloud ISO made with genisoimage: " + l.isoPath + " (compute container path)")
	fiBefore, err := os.Stat(l.isoHostPath)
	if err != nil {
		return err
	}
	before, err := cloudinitnetwork.ReadISO(l.isoHostPath)
	if err != nil {
		return err
	}
	vmi, err := s.freshVMI(ctx)
	if err != nil {
		return err
	}
	if err := l.pipeline.PreBoot(ctx, vmi, pipeline.Artifacts{CloudInitISO: l.isoPath, EphemeralDiskDir: pluginv1alpha1.EphemeralDiskDir}); err != nil {
		return err
	}
	after, err := cloudinitnetwork.ReadISO(l.isoHostPath)
	if err != nil {
		return err
	}
	fiAfter, err := os.Stat(l.isoHostPath)
	if err != nil {
		return err
	}
	uid := -1
	if st, ok := fiAfter.Sys().(*syscall.Stat_t); ok {
		uid = int(st.Uid)
	}
	s.check("the sidecar replaced the ISO atomically (a new file), as the qemu user, keeping its mode",
		!os.SameFile(fiBefore, fiAfter) && uid == qemuUID && fiAfter.Mode() == fiBefore.Mode(),
		"owner uid %d, mode %s (was %s)", uid, fiAfter.Mode(), fiBefore.Mode())
	s.show("network-config before PreBoot:")
	s.show(indent(string(before.Files[cloudinitnetwork.FileNetworkConfig])))
	s.show("network-config after PreBoot (from the Pod's " + networkStatusAnnotation + " annotation):")
	s.show(indent(string(after.Files[cloudinitnetwork.FileNetworkConfig])))
	var nc struct {
		Version   int `json:"version"`
		Ethernets map[string]struct {
			Match struct {
				MAC string `json:"macaddress"`
			} `json:"match"`
			Addresses   []string `json:"addresses"`
			DHCP4       bool     `json:"dhcp4"`
			Nameservers struct {
				Addresses []string `json:"addresses"`
			} `json:"nameservers"`
		} `json:"ethernets"`
	}
	err = yaml.Unmarshal(after.Files[cloudinitnetwork.FileNetworkConfig], &nc)
	red, hasRed := nc.Ethernets["red"]
	s.check("the ISO's network-config gained the secondary network red", err == nil && hasRed &&
		red.Match.MAC == redMAC && slices.Contains(red.Addresses, "192.168.10.5/24") && slices.Contains(red.Nameservers.Addresses, "192.168.10.1"),
		"mac %s, addresses %v, nameservers %v", red.Match.MAC, red.Addresses, red.Nameservers.Addresses)
	s.check("the existing eth0 entry is kept", nc.Ethernets["eth0"].DHCP4, "")
	s.check("the ISO is still a NoCloud ISO with user-data and meta-data unchanged",
		after.Label == cloudinitnetwork.NoCloudLabel && string(after.Files[cloudinitnetwork.FileUserData]) == userData &&
			string(after.Files[cloudinitnetwork.FileMetaData]) == metaData,
		"label %q, files %v", after.Label, slices.Sorted(maps.Keys(after.Files)))
	return nil
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

func domainState(conn *libvirt.Connect, name string) (string, error) {
	dom, err := conn.LookupDomainByName(name)
	var lverr libvirt.Error
	if errors.As(err, &lverr) && lverr.Code == libvirt.ERR_NO_DOMAIN {
		return "not defined", nil
	}
	if err != nil {
		return "", err
	}
	defer dom.Free()
	state, reason, err := dom.GetState()
	if err != nil {
		return "", err
	}
	switch state {
	case libvirt.DOMAIN_RUNNING:
		return "running", nil
	case libvirt.DOMAIN_PAUSED:
		return "paused", nil
	case libvirt.DOMAIN_SHUTOFF:
		switch libvirt.DomainShutoffReason(reason) {
		case libvirt.DOMAIN_SHUTOFF_MIGRATED:
			return "shut off (migrated)", nil
		case libvirt.DOMAIN_SHUTOFF_DESTROYED:
			return "shut off (destroyed)", nil
		}
		return "shut off", nil
	}
	return fmt.Sprintf("state %d reason %d", state, reason), nil
}

func (s *scenario) defineAndStart(ctx context.Context) error {
	dom, err := domainrun.DefineAndStart(ctx, s.conns[0], s.launcher.domain)
	if err != nil {
		return fmt.Errorf("%w\nlibvirtd log:\n%s", err, s.nodes[0].Logs(ctx))
	}
	s.cleanup.add(func() error { return dom.Free() })
	s.launcher.dom = dom
	state, err := domainState(s.conns[0], domainName)
	if !s.check("libvirt on node1 reports the domain running", err == nil && state == "running", "%s", withErr(state, err)) {
		return errCheckFailed
	}
	live, err := dom.GetXMLDesc(0)
	if err != nil {
		return err
	}
	var d libvirtxml.Domain
	if err := d.Unmarshal(live); err != nil {
		return err
	}
	for line := range strings.SplitSeq(live, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "<title>") || strings.HasPrefix(t, "<vcpu") || strings.HasPrefix(t, "<topology") ||
			strings.HasPrefix(t, "<entry name='manufacturer'") || strings.HasPrefix(t, "<entry name='product'") ||
			strings.HasPrefix(t, "<watchdog") || strings.HasPrefix(t, "<source file=") {
			s.show("live XML: " + t)
		}
	}
	s.checkDomain(&d, "live domain on node1")
	s.dispatch(ctx, 0, pluginv1alpha1.PostVMStart)
	return nil
}

func (s *scenario) labelSync(ctx context.Context) error {
	c := s.server.Client
	s.show(fmt.Sprintf("label-syncer syncs %s; patching the VM template: %s: silver -> gold", labelSyncConfig, syncedLabel))
	patch := templateLabelPatch(syncedLabel, "gold")
	if err := c.Patch(ctx, s.vm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	var vmi kubevirtv1.VirtualMachineInstance
	errVMI := waitFor(ctx, "the label on the VMI", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s.vmi), &vmi)
		return err == nil && vmi.Labels[syncedLabel] == "gold", err
	})
	s.check("the VMI got "+syncedLabel+"=gold", errVMI == nil, "%s", errText(errVMI))
	var pod corev1.Pod
	errPod := waitFor(ctx, "the label on the Pod", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s.pod), &pod)
		return err == nil && pod.Labels[syncedLabel] == "gold", err
	})
	s.check("the launcher Pod got "+syncedLabel+"=gold", errPod == nil, "%s", errText(errPod))
	s.check("the Pod was patched in place (same UID)", pod.UID == s.pod.UID, "uid before %s, after %s", s.pod.UID, pod.UID)
	s.check("other labels are untouched", vmi.Labels["smbios.example.com/product"] == "Edge-1" &&
		pod.Labels["kubevirt.io/created-by"] == string(s.vmi.UID), "")
	return nil
}

var migrateFlagNames = []struct {
	flag libvirt.DomainMigrateFlags
	name string
}{
	{libvirt.MIGRATE_LIVE, "LIVE"}, {libvirt.MIGRATE_PEER2PEER, "PEER2PEER"},
	{libvirt.MIGRATE_PERSIST_DEST, "PERSIST_DEST"}, {libvirt.MIGRATE_UNDEFINE_SOURCE, "UNDEFINE_SOURCE"},
	{libvirt.MIGRATE_COMPRESSED, "COMPRESSED"}, {libvirt.MIGRATE_AUTO_CONVERGE, "AUTO_CONVERGE"},
	{libvirt.MIGRATE_POSTCOPY, "POSTCOPY"}, {libvirt.MIGRATE_PARALLEL, "PARALLEL"},
}

func flagString(f uint64) string {
	var names []string
	for _, n := range migrateFlagNames {
		if f&uint64(n.flag) != 0 {
			names = append(names, n.name)
			f &^= uint64(n.flag)
		}
	}
	if f != 0 {
		names = append(names, fmt.Sprintf("%#x", f))
	}
	return strings.Join(names, "|")
}

func paramString(p *hooksv1alpha1.MigrationParams) string {
	m := hooksv1alpha1.ParamsToMap(p)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func (s *scenario) migrate(ctx context.Context) error {
	// virt-controller creates the target launcher Pod; it runs on node2.
	s.show("the target launcher Pod:")
	target, err := s.createLauncherPod(ctx, "t9m4q")
	if err != nil {
		return err
	}
	host := &podHost{pod: target, dir: filepath.Join(s.tmp, "target-pod")}
	s.target = host
	if err := s.startPodSidecars(ctx, host); err != nil {
		return err
	}
	if !s.dispatch(ctx, 1, pluginv1alpha1.PreMigrationTarget) {
		return errCheckFailed
	}
	if err := s.prepareTarget(ctx, host); err != nil {
		return err
	}
	if !s.dispatch(ctx, 0, pluginv1alpha1.NodePreMigrationSource) {
		return errCheckFailed
	}
	vmi, err := s.freshVMI(ctx)
	if err != nil {
		return err
	}
	uri := "tcp://" + s.nodes[1].Hostname
	flags := uint64(libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER | libvirt.MIGRATE_PERSIST_DEST)
	params := &hooksv1alpha1.MigrationParams{MigrateUri: &hooksv1alpha1.StringParam{Value: &uri}}
	res, err := s.launcher.pipeline.PreMigrationSource(ctx, vmi, flags, params)
	if err != nil {
		return err
	}
	s.show("migration-tuner reads migration.example.com/parallel=" + vmi.Labels["migration.example.com/parallel"])
	s.show("flags  before: " + flagString(flags))
	s.show("flags  after:  " + flagString(res.Flags))
	s.show("params before: " + paramString(params))
	s.show("params after:  " + paramString(res.Params))
	conns := int32(-1)
	if res.Params.GetParallelConnections() != nil && res.Params.GetParallelConnections().Value != nil {
		conns = *res.Params.GetParallelConnections().Value
	}
	s.check("PreMigrationSource set VIR_MIGRATE_PARALLEL and parallel.connections=2, kept the rest",
		res.Flags == flags|uint64(libvirt.MIGRATE_PARALLEL) && conns == 2 && res.Params.GetMigrateUri().GetValue() == uri,
		"flags %s, parallel.connections %d", flagString(res.Flags), conns)
	s.show(fmt.Sprintf("migrating %s to %s over %s ...", domainName, s.nodes[1].PeerURI(), uri))
	if err := domainrun.Migrate(ctx, s.launcher.dom, s.nodes[1].PeerURI(), res.Flags, res.Params); err != nil {
		s.check("libvirt migrated the domain with the tuned flags and parameters", false, "%v", err)
		return errCheckFailed
	}
	src, err1 := domainState(s.conns[0], domainName)
	dst, err2 := domainState(s.conns[1], domainName)
	s.check("libvirt on node2 reports the domain running", err2 == nil && dst == "running", "%s", withErr(dst, err2))
	s.check("libvirt on node1 reports it shut off after the migration", err1 == nil && src == "shut off (migrated)", "%s", withErr(src, err1))
	s.dispatch(ctx, 1, pluginv1alpha1.PostMigrationTarget)
	return s.endSidecars(ctx, s.host, "the source launcher's compute container has exited")
}

// prepareTarget plays the target virt-launcher: it gets its plugins from
// virt-handler on node2 and runs GuestDefinition with the invocation
// context MigrationTarget, so that sidecars can prepare the target Pod;
// the launcher discards the domain they return.
func (s *scenario) prepareTarget(ctx context.Context, host *podHost) error {
	vmi, err := s.freshVMI(ctx)
	if err != nil {
		return err
	}
	lp, err := s.handlers[1].selector.LauncherPlugins(vmi)
	if err != nil {
		return err
	}
	plugins, err := launcherplugins.Decode(lp.Data)
	if err != nil {
		return err
	}
	sockets, err := host.volumeDir(pluginv1alpha1.SocketsVolumeName, s.hostRoot)
	if err != nil {
		return err
	}
	p, err := pipeline.New(plugins, pipeline.Options{Logger: s.log.WithName("virt-launcher-target"), SocketRoot: sockets})
	if err != nil {
		return err
	}
	err = p.MigrationTarget(ctx, vmi, baseDomain(s.launcher.isoPath))
	s.check("the target launcher ran GuestDefinition (context MigrationTarget) through its own sidecars; the result is discarded",
		err == nil, "%s", errText(err))
	return nil
}

func (s *scenario) stop(ctx context.Context) error {
	if !s.dispatch(ctx, 1, pluginv1alpha1.OnVMStop) {
		return errCheckFailed
	}
	dom, err := s.conns[1].LookupDomainByName(domainName)
	if err != nil {
		return err
	}
	defer dom.Free()
	if err := dom.Destroy(); err != nil {
		return fmt.Errorf("destroy %s on node2: %w", domainName, err)
	}
	state, err := domainState(s.conns[1], domainName)
	s.check("libvirt on node2 reports the domain shut off", err == nil && strings.HasPrefix(state, "shut off"), "%s", withErr(state, err))
	s.dispatch(ctx, 1, pluginv1alpha1.PostVMStop)
	return s.endSidecars(ctx, s.target, "the launcher's compute container has exited")
}

// withErr is what plus the error, if any.
func withErr(what string, err error) string {
	if err != nil {
		return what + ": " + err.Error()
	}
	return what
}

func (s *scenario) nodeHookEvents(ctx context.Context) error {
	events, err := recorder.ReadEvents(s.eventsFile())
	if err != nil {
		return err
	}
	var got []string
	uids := true
	s.show(fmt.Sprintf("%-4s %-20s %-6s %s", "SEQ", "HOOK POINT", "NODE", "VMI"))
	for _, e := range events {
		s.show(fmt.Sprintf("%-4d %-20s %-6s %s/%s", e.Seq, e.HookPoint, e.Node, e.Name, e.UID))
		got = append(got, e.HookPoint+"@"+e.Node)
		uids = uids && e.UID == string(s.vmi.UID) && !e.Failed
	}
	want := []string{"PreVMStart@node1", "PostVMStart@node1", "PreMigrationTarget@node2", "PreMigrationSource@node1",
		"PostMigrationTarget@node2", "OnVMStop@node2", "PostVMStop@node2"}
	s.check("the recorder got every lifecycle event, in order, on the right node", slices.Equal(got, want), "got %v", got)
	s.check("every event names the VMI by its UID", uids && len(got) > 0, "")
	return nil
}
