// SPDX-License-Identifier: Apache-2.0

// Package metricsdoc lists every metric the project's components register,
// from the code that registers them, and writes docs/metrics.md.
//
// Each of the project's own collectors is registered the way its component
// registers it (pipeline.New, launchermetrics.New, dispatch.New,
// syncmetrics.New, an SDK server made with sdk.WithRegisterer) on a
// Registerer that keeps what it is given, so that a metric is listed
// whether or not it has been observed.
// controller-runtime registers its collectors on its own registry when its
// packages are initialised; they are read from that registry. The Go
// runtime and process collectors controller-runtime adds (go_*,
// process_*) depend on the Go release and are summed up in a sentence
// rather than listed.
package metricsdoc

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	// Every package of controller-runtime that registers collectors in its
	// init is linked by both controllers (tests/monitoring checks the
	// listing against their binaries' dependencies); these imports bring
	// them all in.
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/certwatcher"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	_ "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/launchermetrics"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	"github.com/kubevirt-plugins/framework/plugin-controller/certmetrics"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// Metric is one metric family.
type Metric struct {
	Name   string
	Type   string // counter, gauge, histogram or summary
	Labels []string
	Help   string

	constLabels string
}

// Source is a set of metrics registered together, and where they are
// served.
type Source struct {
	Title   string // a heading
	About   string // a paragraph: who registers them, where they are served
	Metrics []Metric
}

// Inventory registers every component's metrics and returns them, the
// project's sources first, each sorted by name.
func Inventory() ([]Source, error) {
	sources := []Source{
		{
			Title: "Launcher hooks (launcher-runtime/pipeline)",
			About: "Registered by `pipeline.New` on `Options.Registerer`, in the process that runs the launcher hooks of one VM (virt-launcher), which Prometheus does not scrape: " +
				"virt-handler exposes the same series, from the launchers' reports (next section).",
		},
		{
			Title: "Launcher hooks, as virt-handler exposes them (handler-runtime/launchermetrics)",
			About: "Registered by `launchermetrics.New` on `Options.Registerer` (by `kubevirthost.New` of handler-runtime, on virt-handler's registry): one set per node. " +
				"virt-launcher hands virt-handler the counts of its launcher hooks after each hook point call (`TakeHookCounts` of launcher-runtime's `kubevirthost`), " +
				"and virt-handler adds them here (`Handler.RecordLauncherHookCounts`). The series of a Plugin, but its overlaps, are at 0 from the moment virt-handler knows it, " +
				"for each launcher hook point it declares, and are dropped when it is deleted.",
		},
		{
			Title: "Node hooks (handler-runtime/dispatch)",
			About: "Registered by `dispatch.New` on `Options.Registerer`, in virt-handler: one set per node.",
		},
		{
			Title: "Label syncer (label-syncer/syncmetrics)",
			About: "Registered by `syncmetrics.New`, served by label-syncer on `--metrics-bind-address` with controller-runtime's series.",
		},
		{
			Title: "Plugin controller (plugin-controller/certmetrics)",
			About: "Registered by plugin-controller on controller-runtime's registry when it serves its webhooks, in either certificate mode: " +
				"the serving certificate's expiry, read from `tls.crt` in `--webhook-cert-dir` at each scrape.",
		},
		{
			Title: "Plugin servers built on the SDK (protos/sdk)",
			About: "Registered by `sdk.NewLauncherServer` and `sdk.NewNodeServer` when given `sdk.WithRegisterer`: the gRPC server series of a sidecar or node hook server, served by the plugin itself if it chooses to. The sample plugins do not.",
		},
	}
	tmp, err := os.MkdirTemp("", "metricsdoc")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	register := []func(prometheus.Registerer) error{
		func(reg prometheus.Registerer) error {
			_, err := pipeline.New(nil, pipeline.Options{Registerer: reg})
			return err
		},
		func(reg prometheus.Registerer) error {
			c, err := launchermetrics.New(launchermetrics.Options{Plugins: twoLauncherPlugins{}, Registerer: reg})
			if err != nil {
				return err
			}
			// An overlap's series exists once one is counted.
			return c.Record(nil, []byte(`{"version":1,"overlaps":[{"hookPoint":"GuestDefinition","plugin":"listed-too","overwrittenPlugin":"listed","count":1}]}`))
		},
		func(reg prometheus.Registerer) error {
			d, err := dispatch.New(dispatch.Options{Plugins: noPlugins{}, Registerer: reg})
			if err != nil {
				return err
			}
			return d.Close()
		},
		func(reg prometheus.Registerer) error {
			_, err := syncmetrics.New(reg)
			return err
		},
		func(reg prometheus.Registerer) error {
			// The gauge has a sample, which tells its type, once a
			// certificate is there to read; describe reads it before the
			// file goes.
			path := filepath.Join(tmp, "tls.crt")
			if err := writeSelfSignedCert(path); err != nil {
				return err
			}
			return reg.Register(certmetrics.New(path))
		},
		registerSDK,
	}
	for i, r := range register {
		rec := &recorder{}
		if err := r(rec); err != nil {
			return nil, fmt.Errorf("%s: %w", sources[i].Title, err)
		}
		ms, err := describe(rec.collectors, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sources[i].Title, err)
		}
		sources[i].Metrics = ms
	}

	ctrl, err := registered(ctrlmetrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("controller-runtime: %w", err)
	}
	ms, err := describe(ctrl, func(name string) bool {
		return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
	})
	if err != nil {
		return nil, fmt.Errorf("controller-runtime: %w", err)
	}
	sources = append(sources, Source{
		Title: "controller-runtime (plugin-controller and label-syncer)",
		About: "Registered by controller-runtime on its registry, which both controllers serve on `--metrics-bind-address`; " +
			"the webhook series have values in plugin-controller only, which serves the webhooks. " +
			"The registry also holds the Go runtime (`go_*`) and process (`process_*`) series of client_golang's collectors, not listed here.",
		Metrics: ms,
	})
	return sources, nil
}

// writeSelfSignedCert writes a throwaway self-signed certificate to path.
func writeSelfSignedCert(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "metricsdoc"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

// registerSDK makes a node hook server with a registerer and stops it.
func registerSDK(reg prometheus.Registerer) error {
	dir, err := os.MkdirTemp("", "metricsdoc")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s, err := sdk.NewNodeServer(filepath.Join(dir, "node.sock"), nodeHandler{}, sdk.WithRegisterer(reg))
	if err != nil {
		return err
	}
	// A cancelled context stops the server at once and removes its socket.
	ctx, cancel := cancelledContext()
	defer cancel()
	return s.Serve(ctx)
}

// recorder keeps the collectors registered on it.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recorder) Unregister(c prometheus.Collector) bool {
	n := len(r.collectors)
	r.collectors = slices.DeleteFunc(r.collectors, func(x prometheus.Collector) bool { return x == c })
	return len(r.collectors) < n
}

// registered returns the collectors registered on reg, a
// *prometheus.Registry. client_golang has no API that lists them (Gather
// leaves out a vector until it has a child), so its collectorsByID field
// is read; a client_golang that renames it fails here, loudly.
func registered(reg prometheus.Registerer) ([]prometheus.Collector, error) {
	r, ok := reg.(*prometheus.Registry)
	if !ok {
		return nil, fmt.Errorf("the registry is a %T, not a *prometheus.Registry", reg)
	}
	f := reflect.ValueOf(r).Elem().FieldByName("collectorsByID")
	if !f.IsValid() || f.Kind() != reflect.Map {
		return nil, errors.New("prometheus.Registry has no collectorsByID map: client_golang changed, update registered()")
	}
	f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	var out []prometheus.Collector
	iter := f.MapRange()
	for iter.Next() {
		c, ok := reflect.TypeAssert[prometheus.Collector](iter.Value())
		if !ok {
			return nil, fmt.Errorf("collectorsByID holds a %s", iter.Value().Type())
		}
		out = append(out, c)
	}
	return out, nil
}

var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)

// describe returns the metrics of collectors but those whose name skip
// (if not nil) says to leave out, sorted by name. A vector's type is its
// Go type's; any other collector is collected and its samples say their
// type.
func describe(collectors []prometheus.Collector, skip func(name string) bool) ([]Metric, error) {
	var out []Metric
	for _, c := range collectors {
		types, err := sampleTypes(c)
		if err != nil {
			return nil, err
		}
		descs := make(chan *prometheus.Desc)
		go func() { c.Describe(descs); close(descs) }()
		for d := range descs {
			m, err := parseDesc(d)
			if err != nil {
				return nil, err
			}
			if skip != nil && skip(m.Name) {
				continue
			}
			if m.constLabels != "" {
				return nil, fmt.Errorf("%s has constant labels (%s), which the listing does not show", m.Name, m.constLabels)
			}
			if m.Type = vectorType(c); m.Type == "" {
				m.Type = types[d.String()]
			}
			if m.Type == "" {
				return nil, fmt.Errorf("%s: no type: a %T has no sample to tell it", m.Name, c)
			}
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("%s is registered twice", out[i].Name)
		}
	}
	return out, nil
}

func parseDesc(d *prometheus.Desc) (Metric, error) {
	m := descPattern.FindStringSubmatch(d.String())
	if m == nil {
		return Metric{}, fmt.Errorf("cannot read %s", d)
	}
	name, err := strconv.Unquote(m[1])
	if err != nil {
		return Metric{}, err
	}
	help, err := strconv.Unquote(m[2])
	if err != nil {
		return Metric{}, err
	}
	var labels []string
	for l := range strings.SplitSeq(m[4], ",") {
		if l != "" {
			labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
		}
	}
	return Metric{Name: name, Labels: labels, Help: help, constLabels: m[3]}, nil
}

func vectorType(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	}
	return ""
}

// sampleTypes collects c and returns the type of the samples of each
// Desc (by its String).
func sampleTypes(c prometheus.Collector) (map[string]string, error) {
	types := map[string]string{}
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	var err error
	for m := range ch {
		var pb dto.Metric
		if werr := m.Write(&pb); werr != nil {
			err = errors.Join(err, werr)
			continue
		}
		var t string
		switch {
		case pb.Counter != nil:
			t = "counter"
		case pb.Gauge != nil:
			t = "gauge"
		case pb.Histogram != nil:
			t = "histogram"
		case pb.Summary != nil:
			t = "summary"
		default:
			t = "untyped"
		}
		types[m.Desc().String()] = t
	}
	return types, err
}

// Markdown renders sources as docs/metrics.md.
func Markdown(sources []Source) []byte {
	var b bytes.Buffer
	b.WriteString("# Metrics\n\n")
	b.WriteString("<!-- Generated by tests/monitoring/cmd/metricsdoc (make generate) from the code that registers each metric; do not edit. -->\n\n")
	b.WriteString("Every metric the components register, read from the code that registers it: " +
		"`make generate` writes this file and `make verify` fails when it is stale. " +
		"The project's own series are named `kubevirt_plugins_<component>_...`. " +
		"The alerts and the dashboard built on them are in `deploy/monitoring` (its README says how to install them), " +
		"and each alert has a runbook in `docs/runbooks`.\n")
	for _, s := range sources {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", s.Title, s.About)
		b.WriteString("| metric | type | labels | help |\n|---|---|---|---|\n")
		for _, m := range s.Metrics {
			labels := make([]string, len(m.Labels))
			for i, l := range m.Labels {
				labels[i] = "`" + l + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Name, m.Type, strings.Join(labels, ", "), cell(m.Help))
		}
	}
	return b.Bytes()
}

// cell makes s fit in one table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// Names returns the names of every metric of sources, with the _bucket,
// _sum and _count series of histograms and the _sum and _count series of
// summaries.
func Names(sources []Source) []string {
	var out []string
	for _, s := range sources {
		for _, m := range s.Metrics {
			out = append(out, m.Name)
			switch m.Type {
			case "histogram":
				out = append(out, m.Name+"_bucket", m.Name+"_sum", m.Name+"_count")
			case "summary":
				out = append(out, m.Name+"_sum", m.Name+"_count")
			}
		}
	}
	return out
}

// noPlugins is a Plugin store that holds none.
type noPlugins struct{}

func (noPlugins) Snapshot() (store.Snapshot, error) { return store.Snapshot{Enabled: true}, nil }

// twoLauncherPlugins is a Plugin store that holds two Plugins with a
// launcher hook. launchermetrics registers a collector that is not a
// vector, whose series exist only for the Plugins it knows: those of these
// tell their types, and the two can overlap.
type twoLauncherPlugins struct{}

func (twoLauncherPlugins) Snapshot() (store.Snapshot, error) {
	var ps []*pluginv1alpha1.Plugin
	for _, name := range []string{"listed", "listed-too"} {
		ps = append(ps, &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: pluginv1alpha1.PluginSpec{
			LauncherHooks: []pluginv1alpha1.LauncherHook{{CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: "Domain{}"}}},
		}})
	}
	return store.Snapshot{Plugins: ps, Enabled: true, Revision: 1}, nil
}

// nodeHandler is a node hook handler that is never called.
type nodeHandler struct{}

func (nodeHandler) ExecuteNodeHook(context.Context, *sdk.NodeHookRequest) error { return nil }

// cancelledContext returns a context that is already cancelled.
func cancelledContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}
