// SPDX-License-Identifier: Apache-2.0

// Command virt-launcher is the stand-in of KubeVirt's virt-launcher on the
// real-cluster test: the compute container of a launcher Pod. It runs
// libvirtd next to itself, as the demo's libvirtd containers do, and
// serves the command socket (tests/cluster/standin/cmdsock) the
// virt-handler stand-in calls:
//
//   - boot: build the launcher pipeline from the plugins virt-handler hands
//     over, make the NoCloud ISO, generate the domain, run GuestDefinition
//     and PreBoot (pipeline.Boot, which waits for the sidecars' sockets),
//     define and start the domain (domainrun);
//   - prepare-target: on a migration target, run GuestDefinition with the
//     MigrationTarget invocation context;
//   - migrate: run PreMigrationSource and migrate the domain to the target
//     launcher's libvirtd, then exit;
//   - stop: destroy the domain, then exit.
//
// The process exits 0 when its domain has left (stopped or migrated away),
// so the Pod completes once the kubelet stops its native sidecars.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/kdomanski/iso9660"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protojson"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/sample-sidecars/cloudinit-network/cloudinitnetwork"
	"github.com/kubevirt-plugins/framework/tests/cluster/standin/cmdsock"
	"github.com/kubevirt-plugins/framework/tests/framework/guest"
)

// qemuUID is the user virt-launcher's files belong to, and the sidecars'.
const qemuUID = 107

type launcher struct {
	log  logr.Logger
	conn *libvirt.Connect

	// timeline is the process's part of the boot (cmdsock.Timeline).
	timeline cmdsock.LauncherTimeline

	mu       sync.Mutex
	pipeline *pipeline.Pipeline
	domain   string // the domain's name once it runs here
	done     chan struct{}
	doneOnce sync.Once
}

func main() {
	socketDir := flag.String("socket-dir", cmdsock.MountPath, "directory of the command socket")
	printNetworkConfig := flag.String("print-network-config", "", "print the network-config of this NoCloud ISO and exit")
	flag.Parse()
	if *printNetworkConfig != "" {
		iso, err := cloudinitnetwork.ReadISO(*printNetworkConfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(string(iso.Files[cloudinitnetwork.FileNetworkConfig]))
		return
	}
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1}).WithName("virt-launcher")
	if err := run(log, *socketDir); err != nil {
		log.Error(err, "virt-launcher stand-in failed")
		os.Exit(1)
	}
}

func run(log logr.Logger, socketDir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	started := processStart()
	daemon, conn, err := startLibvirtd(ctx, log)
	if err != nil {
		return err
	}
	libvirtdUp := time.Now()
	defer func() {
		_, _ = conn.Close()
		_ = daemon.Process.Signal(syscall.SIGTERM)
		_ = daemon.Wait()
	}()
	l := &launcher{log: log, conn: conn, done: make(chan struct{})}
	l.timeline.Started, l.timeline.LibvirtdUp = started, libvirtdUp
	if err := os.MkdirAll(socketDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(socketDir, cmdsock.SocketName)
	_ = os.Remove(path)
	// Taken before the socket exists, so that no handler can find the
	// socket before this time.
	l.timeline.Serving = time.Now()
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(cmdsock.PathBoot, l.command(l.boot))
	mux.HandleFunc(cmdsock.PathPrepareTarget, l.command(l.prepareTarget))
	mux.HandleFunc(cmdsock.PathMigrate, l.command(l.migrate))
	mux.HandleFunc(cmdsock.PathStop, l.command(l.stop))
	mux.HandleFunc(cmdsock.PathDomain, l.command(l.describe))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("serving the command socket", "socket", path, "sinceStart", l.timeline.Serving.Sub(started),
		"libvirtdStart", libvirtdUp.Sub(started))
	select {
	case <-ctx.Done():
		log.Info("terminated")
	case <-l.done:
		log.Info("the domain left this launcher; exiting")
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	_ = os.Remove(path)
	if l.pipeline != nil {
		_ = l.pipeline.Close()
	}
	return nil
}

// startLibvirtd starts virtlogd and libvirtd (listening on TCP for
// migrations) and waits until the QEMU driver answers.
func startLibvirtd(ctx context.Context, log logr.Logger) (*exec.Cmd, *libvirt.Connect, error) {
	for _, d := range []string{"/var/log/libvirt", "/var/run/libvirt", "/var/lib/libvirt/qemu"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
	}
	if out, err := exec.CommandContext(ctx, "virtlogd", "-d").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("virtlogd: %w: %s", err, out)
	}
	daemon := exec.Command("libvirtd", "--listen")
	daemon.Stdout, daemon.Stderr = os.Stderr, os.Stderr
	if err := daemon.Start(); err != nil {
		return nil, nil, fmt.Errorf("libvirtd: %w", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		conn, err := libvirt.NewConnect("qemu:///system")
		if err == nil {
			if v, verr := conn.GetVersion(); verr == nil && v > 0 {
				log.Info("libvirtd is up", "qemuVersion", v)
				return daemon, conn, nil
			}
			_, _ = conn.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = daemon.Process.Kill()
			return nil, nil, fmt.Errorf("libvirtd did not answer within 2m: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// command wraps one command: decode the request, run it, encode the answer.
func (l *launcher) command(f func(context.Context, *cmdsock.Request) (*cmdsock.Answer, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req cmdsock.Request
		a := &cmdsock.Answer{}
		err := json.NewDecoder(r.Body).Decode(&req)
		if err == nil && req.VMI == nil {
			err = errors.New("request names no VMI")
		}
		if err == nil {
			l.mu.Lock()
			a, err = f(r.Context(), &req)
			l.mu.Unlock()
		}
		if a == nil {
			a = &cmdsock.Answer{}
		}
		if err != nil {
			l.log.Error(err, "command failed", "command", r.URL.Path)
			a.Error = err.Error()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a)
	}
}

// newPipeline builds the launcher pipeline from what virt-handler handed.
func (l *launcher) newPipeline(req *cmdsock.Request) error {
	if l.pipeline != nil {
		return nil
	}
	plugins, err := launcherplugins.Decode(req.Plugins)
	if err != nil {
		return fmt.Errorf("decoding the plugins virt-handler handed over: %w", err)
	}
	names := make([]string, 0, len(plugins))
	for _, p := range plugins {
		names = append(names, p.Name)
	}
	l.log.Info("plugins handed over by virt-handler", "plugins", names)
	p, err := pipeline.New(plugins, pipeline.Options{Logger: l.log.WithName("pipeline")})
	if err != nil {
		return err
	}
	l.pipeline = p
	return nil
}

func domainName(vmi *kubevirtv1.VirtualMachineInstance) string {
	return vmi.Namespace + "_" + vmi.Name
}

func (l *launcher) boot(ctx context.Context, req *cmdsock.Request) (*cmdsock.Answer, error) {
	if l.domain != "" {
		return l.describe(ctx, req)
	}
	rec := cmdsock.NewRecorder()
	if err := rec.Do(cmdsock.StepHandover, func() error { return l.newPipeline(req) }); err != nil {
		return nil, err
	}
	var iso string
	err := rec.Do(cmdsock.StepISO, func() error {
		var err error
		if iso, err = makeNoCloudISO(req.VMI); err != nil {
			return err
		}
		return prepareConsole()
	})
	if err != nil {
		return nil, err
	}
	// pipeline.Boot's two hook points, called one by one for their reports.
	var domain *libvirtxml.Domain
	var hooks []cmdsock.Hook
	err = rec.Do(cmdsock.StepGuestDefinition, func() error {
		out, r, err := l.pipeline.GuestDefinitionWithReport(ctx, req.VMI, generateDomain(req.VMI, iso), pipeline.Boot)
		hooks = appendHooks(hooks, r)
		domain = out
		return err
	})
	if err != nil {
		return nil, err
	}
	err = rec.Do(cmdsock.StepPreBoot, func() error {
		r, err := l.pipeline.PreBootWithReport(ctx, req.VMI, pipeline.Artifacts{CloudInitISO: iso})
		hooks = appendHooks(hooks, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = rec.Do(cmdsock.StepDefineAndStart, func() error {
		dom, err := domainrun.DefineAndStart(ctx, l.conn, domain)
		if err == nil {
			_ = dom.Free()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	l.domain = domainName(req.VMI)
	l.log.Info("domain defined and started", "domain", l.domain)
	a, err := l.describe(ctx, req)
	if err != nil {
		return nil, err
	}
	tl := l.timeline
	tl.Steps, tl.Hooks = rec.Steps, hooks
	a.Timeline = &tl
	return a, nil
}

// appendHooks adds the timings of the hooks of r, which may be nil.
func appendHooks(hooks []cmdsock.Hook, r *pipeline.Report) []cmdsock.Hook {
	if r == nil {
		return hooks
	}
	for _, h := range r.Hooks {
		hooks = append(hooks, cmdsock.Hook{HookPoint: string(r.HookPoint), Plugin: h.Plugin, Kind: string(h.Kind),
			Outcome: string(h.Outcome), Duration: h.Duration, SocketWait: h.SocketWait})
	}
	return hooks
}

// processStart is when this process started, from /proc/self/stat
// (start time in clock ticks after boot) and the machine's boot time;
// now when they cannot be read.
func processStart() time.Time {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return time.Now()
	}
	// The fields after the command name, which is in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat)[i+1:])
	// starttime is field 22 of the line, the 20th after the name.
	if i < 0 || len(fields) < 20 {
		return time.Now()
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return time.Now()
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Now()
	}
	sinceBoot := time.Duration(ts.Nano())
	const clockTicks = 100 // USER_HZ on Linux
	return time.Now().Add(-sinceBoot + time.Duration(ticks)*time.Second/clockTicks)
}

func (l *launcher) prepareTarget(ctx context.Context, req *cmdsock.Request) (*cmdsock.Answer, error) {
	if err := l.newPipeline(req); err != nil {
		return nil, err
	}
	// The domain arriving names the NoCloud ISO; KubeVirt makes it again on
	// the target (PreBoot does not run there).
	iso, err := makeNoCloudISO(req.VMI)
	if err != nil {
		return nil, err
	}
	// The domain arriving writes its console where the source's did.
	if err := prepareConsole(); err != nil {
		return nil, err
	}
	if err := l.pipeline.MigrationTarget(ctx, req.VMI, generateDomain(req.VMI, iso)); err != nil {
		return nil, err
	}
	// The domain arrives with the migration; this launcher owns it then.
	l.domain = domainName(req.VMI)
	return &cmdsock.Answer{}, nil
}

func (l *launcher) migrate(ctx context.Context, req *cmdsock.Request) (*cmdsock.Answer, error) {
	if l.pipeline == nil || l.domain == "" {
		return nil, errors.New("no domain runs here")
	}
	if req.TargetAddress == "" {
		return nil, errors.New("migrate: no target address")
	}
	dom, err := l.conn.LookupDomainByName(l.domain)
	if err != nil {
		return nil, err
	}
	defer dom.Free()
	uri := "tcp://" + req.TargetAddress
	flags := uint64(libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER | libvirt.MIGRATE_PERSIST_DEST)
	params := &hooksv1alpha1.MigrationParams{MigrateUri: &hooksv1alpha1.StringParam{Value: &uri}}
	res, err := l.pipeline.PreMigrationSource(ctx, req.VMI, flags, params)
	if err != nil {
		return nil, err
	}
	dest := "qemu+tcp://" + req.TargetAddress + "/system"
	l.log.Info("migrating", "domain", l.domain, "destination", dest, "flags", fmt.Sprintf("%#x", res.Flags))
	if err := domainrun.Migrate(ctx, dom, dest, res.Flags, res.Params); err != nil {
		return nil, err
	}
	p, _ := protojson.Marshal(res.Params)
	l.leave()
	return &cmdsock.Answer{Flags: fmt.Sprintf("%#x", res.Flags), Params: string(p)}, nil
}

func (l *launcher) stop(ctx context.Context, req *cmdsock.Request) (*cmdsock.Answer, error) {
	if l.domain != "" {
		dom, err := l.conn.LookupDomainByName(l.domain)
		if err == nil {
			err = dom.Destroy()
			_ = dom.Free()
		}
		// A domain already gone or not running is stopped.
		var lverr libvirt.Error
		gone := errors.As(err, &lverr) && (lverr.Code == libvirt.ERR_NO_DOMAIN || lverr.Code == libvirt.ERR_OPERATION_INVALID)
		if err != nil && !gone {
			return nil, err
		}
		l.log.Info("domain stopped", "domain", l.domain)
	}
	l.leave()
	return &cmdsock.Answer{State: "stopped"}, nil
}

func (l *launcher) describe(_ context.Context, _ *cmdsock.Request) (*cmdsock.Answer, error) {
	if l.domain == "" {
		return &cmdsock.Answer{State: "none"}, nil
	}
	dom, err := l.conn.LookupDomainByName(l.domain)
	if err != nil {
		return nil, err
	}
	defer dom.Free()
	x, err := dom.GetXMLDesc(0)
	if err != nil {
		return nil, err
	}
	state, _, err := dom.GetState()
	if err != nil {
		return nil, err
	}
	s := fmt.Sprintf("state %d", state)
	if state == libvirt.DOMAIN_RUNNING {
		s = "running"
	}
	return &cmdsock.Answer{DomainXML: x, State: s}, nil
}

// leave ends the process once the answer is on its way.
func (l *launcher) leave() {
	l.doneOnce.Do(func() {
		go func() {
			time.Sleep(500 * time.Millisecond)
			close(l.done)
		}()
	})
}

func isoPath(vmi *kubevirtv1.VirtualMachineInstance) string {
	return filepath.Join(pluginv1alpha1.EphemeralDiskDir, "cloud-init-data", vmi.Namespace, vmi.Name, "noCloud.iso")
}

// makeNoCloudISO writes the VMI's NoCloud ISO as virt-launcher does, owned
// by the qemu user so that PreBoot sidecars (UID 107) may replace it.
func makeNoCloudISO(vmi *kubevirtv1.VirtualMachineInstance) (string, error) {
	iso := isoPath(vmi)
	w, err := iso9660.NewWriter()
	if err != nil {
		return "", err
	}
	defer func() { _ = w.Cleanup() }()
	files := map[string]string{
		"user-data":      "#cloud-config\nhostname: " + vmi.Name + "\n",
		"meta-data":      "instance-id: " + string(vmi.UID) + "\nlocal-hostname: " + vmi.Name + "\n",
		"network-config": "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n",
	}
	for name, content := range files {
		if err := w.AddFile(strings.NewReader(content), name); err != nil {
			return "", err
		}
	}
	dir := filepath.Dir(iso)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.OpenFile(iso, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	if err := w.WriteTo(f, "cidata"); err != nil {
		_ = f.Close()
		return "", fmt.Errorf("writing %s: %w", iso, err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	for _, p := range []string{iso, dir} {
		if err := os.Chown(p, qemuUID, qemuUID); err != nil {
			return "", err
		}
	}
	return iso, nil
}

// Where the image holds the test guest (hack/build-guest.sh), and where
// its serial console is written in the compute container; the real-cluster
// scenario reads the guest's report there.
const guestDir = "/usr/share/kvp-guest"

var consoleDir = filepath.Dir(cmdsock.GuestConsole)

// prepareConsole makes the console's directory, writable by QEMU.
func prepareConsole() error {
	if err := os.MkdirAll(consoleDir, 0o755); err != nil {
		return err
	}
	return os.Chown(consoleDir, qemuUID, qemuUID)
}

// generateDomain is the stand-in of virt-launcher's domain generation: a
// TCG guest (no /dev/kvm on the nodes) named and identified as KubeVirt
// names it, with KubeVirt's SMBIOS system entries and the NoCloud ISO as a
// CD-ROM, booting the test guest (a kernel and a busybox initramfs, which
// reports what it sees on its serial console) when the image holds it, and
// no operating system otherwise.
func generateDomain(vmi *kubevirtv1.VirtualMachineInstance, iso string) *libvirtxml.Domain {
	d := baseDomain(vmi, iso)
	if _, err := os.Stat(filepath.Join(guestDir, guest.Kernel)); err == nil {
		guest.Boot(d, guestDir, cmdsock.GuestConsole)
	}
	return d
}

func baseDomain(vmi *kubevirtv1.VirtualMachineInstance, iso string) *libvirtxml.Domain {
	uuid := ""
	if vmi.Spec.Domain.Firmware != nil {
		uuid = string(vmi.Spec.Domain.Firmware.UUID)
	}
	return &libvirtxml.Domain{
		Type:   "qemu",
		Name:   domainName(vmi),
		UUID:   uuid,
		Memory: &libvirtxml.DomainMemory{Value: 64, Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Value: 1},
		SysInfo: []libvirtxml.DomainSysInfo{{SMBIOS: &libvirtxml.DomainSysInfoSMBIOS{
			System: &libvirtxml.DomainSysInfoSystem{Entry: []libvirtxml.DomainSysInfoEntry{
				{Name: "uuid", Value: uuid},
				{Name: "manufacturer", Value: "KubeVirt"},
				{Name: "family", Value: "KubeVirt"},
				{Name: "product", Value: "None"},
			}},
		}}},
		OS: &libvirtxml.DomainOS{
			Type:   &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "pc", Type: "hvm"},
			SMBios: &libvirtxml.DomainSMBios{Mode: "sysinfo"},
		},
		Devices: &libvirtxml.DomainDeviceList{
			Disks: []libvirtxml.DomainDisk{{
				Device:   "cdrom",
				Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
				Source:   &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: iso}},
				Target:   &libvirtxml.DomainDiskTarget{Dev: "hda", Bus: "ide"},
				ReadOnly: &libvirtxml.DomainDiskReadOnly{},
				Alias:    &libvirtxml.DomainAlias{Name: "ua-cloudinitdisk"},
			}},
			Serials: []libvirtxml.DomainSerial{{Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}}}},
		},
	}
}
