// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginreconciler "github.com/kubevirt-plugins/framework/plugin-controller/reconcilers/plugin"
	pluginwebhook "github.com/kubevirt-plugins/framework/plugin-controller/webhooks/plugin"
	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// The API server, the manager running the reconciler and the webhook, and
// the counter of the manager's API calls, shared by the package's tests.
var (
	server   *apiserver.Server
	admin    client.Client
	apiCalls = &callCounter{}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// CONTROLLER_TEST_LOG=1 shows the manager's logs.
	var logger logr.Logger
	if os.Getenv("CONTROLLER_TEST_LOG") != "" {
		logger = zap.New(zap.UseDevMode(true))
	}
	webhookManifest, err := repo.Path("deploy", "controller", "webhook", "validatingwebhookconfiguration.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	server, err = apiserver.Start(apiserver.Options{
		// For label-syncer, whose metrics endpoint is checked here too.
		WithKubeVirtCRDs:      true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{webhookManifest}},
		Logger:                logger,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = server.Stop() }()
	admin = server.Client

	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // TestMain has no *testing.T; cancelled when the package's tests end
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	if err := startManager(ctx, &wg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer controllerBinary.Remove()
	defer syncerBinary.Remove()
	return m.Run()
}

// startManager runs the controller's reconciler and webhook the way
// cmd/plugin-controller wires them, serving the webhook where envtest
// pointed the ValidatingWebhookConfiguration, and counting every API call.
func startManager(ctx context.Context, wg *sync.WaitGroup) error {
	wio := &server.Env.WebhookInstallOptions
	cfg := rest.CopyConfig(server.Config)
	cfg.QPS = -1 // as ctrl.GetConfig sets it for the binary
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, c: apiCalls} })
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 server.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
	})
	if err != nil {
		return err
	}
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(server.Config)
	if err != nil {
		return err
	}
	mapGate = &discoveryGate{real: dc, kind: "MutatingAdmissionPolicy"}
	mapGate.close()
	if err := (&pluginreconciler.Reconciler{
		CEL: env, Discovery: mapGate, RediscoveryInterval: rediscoveryInterval,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := (&pluginwebhook.Validator{CEL: env}).SetupWebhookWithManager(mgr); err != nil {
		return err
	}
	running, stopped := context.WithCancelCause(ctx)
	wg.Go(func() {
		err := mgr.Start(ctx)
		if err == nil {
			err = errors.New("no error")
		}
		stopped(fmt.Errorf("manager stopped: %w", err))
	})
	// The webhook must answer before the tests create Plugins.
	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	return poll.UntilContext(running, 30*time.Second, func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return fmt.Errorf("webhook server at %s not serving: %w", addr, err)
		}
		return conn.Close()
	})
}

// rediscoveryInterval is the shared manager's: short, so that a test sees
// a kind picked up within its polling timeout.
const rediscoveryInterval = 200 * time.Millisecond

// mapGate hides MutatingAdmissionPolicy from the shared manager's discovery
// until a test opens it: on an API server that serves the kind, that is the
// cluster before and after an upgrade to a version that serves it.
var mapGate *discoveryGate

// discoveryGate passes the API server's discovery answers through, less
// the hidden kind while it is closed, and counts the questions.
type discoveryGate struct {
	real   pluginreconciler.ResourceDiscovery
	kind   string
	mu     sync.Mutex
	hidden string
	asked  int
}

func (g *discoveryGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hidden = ""
}

// close hides the kind again.
func (g *discoveryGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hidden = g.kind
}

// timesAsked is how many discoveries have begun.
func (g *discoveryGate) timesAsked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asked
}

func (g *discoveryGate) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	g.mu.Lock()
	g.asked++
	g.mu.Unlock()
	list, err := g.real.ServerResourcesForGroupVersion(gv)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := list.DeepCopy()
	out.APIResources = slices.DeleteFunc(out.APIResources, func(r metav1.APIResource) bool { return r.Kind == g.hidden })
	return out, nil
}

// servesKind asks the API server itself whether it serves kind in
// admissionregistration.k8s.io/v1.
func servesKind(t *testing.T, kind string) bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == kind })
}

// callCounter counts API requests by "METHOD resource[/subresource]".
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *callCounter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[key]++
}

// reset returns the counts so far and starts again from zero.
func (c *callCounter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

type countingTransport struct {
	next http.RoundTripper
	c    *callCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.c.add(req.Method + " " + resourceOf(req))
	return t.next.RoundTrip(req)
}

// resourceOf reduces a request path to its resource (and subresource), with
// names dropped, plus "?watch" for watches: /apis/g/v/plugins/x/status ->
// plugins/status.
func resourceOf(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) > 0 && parts[0] == "api":
		parts = parts[min(2, len(parts)):]
	case len(parts) > 0 && parts[0] == "apis":
		parts = parts[min(3, len(parts)):]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	res := strings.Join(parts, "/")
	if len(parts) >= 2 {
		res = parts[0]
		if len(parts) >= 3 {
			res += "/" + parts[2]
		}
	}
	if req.URL.Query().Get("watch") == "true" {
		res += "?watch"
	}
	return res
}

// applyManifest creates every object of a YAML file of the repository.
func applyManifest(t testing.TB, rel ...string) []*unstructured.Unstructured {
	t.Helper()
	path, err := repo.Path(rel...)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decoding %s: %v", filepath.Base(path), err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := admin.Create(t.Context(), u); err != nil {
			t.Fatalf("creating %s %s from %s: %v", u.GetKind(), u.GetName(), filepath.Join(rel...), err)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		t.Fatalf("%s holds no objects", filepath.Join(rel...))
	}
	return objs
}
