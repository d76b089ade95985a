// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// sidecar is a LauncherHookService whose answers the test chooses; it
// records every request it receives.
type sidecar struct {
	hooksv1alpha1.UnimplementedLauncherHookServiceServer

	guestDefinition    func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error)
	preBoot            func(context.Context, *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error)
	preMigrationSource func(context.Context, *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error)

	mu        sync.Mutex
	gdReqs    []*hooksv1alpha1.GuestDefinitionRequest
	pbReqs    []*hooksv1alpha1.PreBootRequest
	pmsReqs   []*hooksv1alpha1.PreMigrationSourceRequest
	deadlines []time.Time
}

func (s *sidecar) record(ctx context.Context, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	if d, ok := ctx.Deadline(); ok {
		s.deadlines = append(s.deadlines, d)
	}
}

func (s *sidecar) GuestDefinition(ctx context.Context, req *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
	s.record(ctx, func() { s.gdReqs = append(s.gdReqs, req) })
	if s.guestDefinition == nil {
		return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: req.DomainXml}, nil
	}
	return s.guestDefinition(ctx, req)
}

func (s *sidecar) PreBoot(ctx context.Context, req *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
	s.record(ctx, func() { s.pbReqs = append(s.pbReqs, req) })
	if s.preBoot == nil {
		return &hooksv1alpha1.PreBootResponse{}, nil
	}
	return s.preBoot(ctx, req)
}

func (s *sidecar) PreMigrationSource(ctx context.Context, req *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
	s.record(ctx, func() { s.pmsReqs = append(s.pmsReqs, req) })
	if s.preMigrationSource == nil {
		return &hooksv1alpha1.PreMigrationSourceResponse{}, nil
	}
	return s.preMigrationSource(ctx, req)
}

func (s *sidecar) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.gdReqs) + len(s.pbReqs) + len(s.pmsReqs)
}

// socketRoot returns a fresh directory standing in for
// /var/run/kubevirt-plugin. It lives directly under the temp dir so that
// socket paths stay far below the 108-byte limit of sun_path.
func socketRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kvp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// serve starts s on <root>/<plugin>/<file> and returns the socketPath a
// Plugin declares for it.
func serve(t testing.TB, root, plugin, file string, s hooksv1alpha1.LauncherHookServiceServer) string {
	t.Helper()
	path := filepath.Join(root, plugin, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	hooksv1alpha1.RegisterLauncherHookServiceServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return declared(plugin, file)
}

func declared(plugin, file string) string {
	return pluginv1alpha1.SocketsRoot + "/" + plugin + "/" + file
}

func sidecarHook(socketPath string, points ...pluginv1alpha1.LauncherHookPoint) pluginv1alpha1.LauncherHook {
	return pluginv1alpha1.LauncherHook{Sidecar: &pluginv1alpha1.SidecarHook{SocketPath: socketPath, PermittedHooks: points}}
}

func celHook(expr string) pluginv1alpha1.LauncherHook {
	return pluginv1alpha1.LauncherHook{CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: expr}}
}

func plugin(name string, hooks ...pluginv1alpha1.LauncherHook) pluginv1alpha1.Plugin {
	return pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       pluginv1alpha1.PluginSpec{LauncherHooks: hooks},
	}
}

func ignore(h pluginv1alpha1.LauncherHook) pluginv1alpha1.LauncherHook {
	h.FailureStrategy = pluginv1alpha1.Ignore
	return h
}

func withTimeout(h pluginv1alpha1.LauncherHook, d time.Duration) pluginv1alpha1.LauncherHook {
	h.Timeout = &metav1.Duration{Duration: d}
	return h
}

func withCondition(h pluginv1alpha1.LauncherHook, cond string) pluginv1alpha1.LauncherHook {
	h.Condition = cond
	return h
}

func newPipeline(t testing.TB, root string, plugins []pluginv1alpha1.Plugin, opts ...func(*pipeline.Options)) *pipeline.Pipeline {
	t.Helper()
	o := pipeline.Options{SocketRoot: root, SocketWaitBudget: 2 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	p, err := pipeline.New(plugins, o)
	if err != nil {
		t.Fatalf("pipeline.New: %v", err)
	}
	return p
}

func testVMI(t testing.TB) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	data, err := os.ReadFile("../testdata/vmi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := yaml.UnmarshalStrict(data, vmi); err != nil {
		t.Fatal(err)
	}
	return vmi
}

func testDomain(t testing.TB) *libvirtxml.Domain {
	t.Helper()
	data, err := os.ReadFile("../testdata/domain.xml")
	if err != nil {
		t.Fatal(err)
	}
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(string(data)); err != nil {
		t.Fatal(err)
	}
	return d
}

// editDomain is a GuestDefinition answer that decodes the request's domain,
// lets edit change it and encodes it again.
func editDomain(edit func(*libvirtxml.Domain)) func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
	return func(_ context.Context, req *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
		d := &libvirtxml.Domain{}
		if err := d.Unmarshal(string(req.DomainXml)); err != nil {
			return nil, err
		}
		edit(d)
		out, err := d.Marshal()
		if err != nil {
			return nil, err
		}
		return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: []byte(out)}, nil
	}
}

// appendDescription is a sidecar edit that records its turn in the domain.
func appendDescription(tag string) func(*libvirtxml.Domain) {
	return func(d *libvirtxml.Domain) { d.Description = joinTag(d.Description, tag) }
}

func joinTag(s, tag string) string {
	if s == "" {
		return tag
	}
	return s + "," + tag
}

// celAppend is a CEL hook expression that records its turn like
// appendDescription does.
func celAppend(tag string) string {
	return `Domain{Description: domainSpec.Description == "" ? "` + tag + `" : domainSpec.Description + ",` + tag + `"}`
}

func mustContain(t testing.TB, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got none", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

// errorLog is a logr.LogSink keeping the errors of the lines logged with
// Error, as a host's logger would receive them.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) Init(logr.RuntimeInfo)          {}
func (l *errorLog) Enabled(int) bool               { return true }
func (l *errorLog) Info(int, string, ...any)       {}
func (l *errorLog) WithValues(...any) logr.LogSink { return l }
func (l *errorLog) WithName(string) logr.LogSink   { return l }
func (l *errorLog) Error(err error, _ string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) logged() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}
