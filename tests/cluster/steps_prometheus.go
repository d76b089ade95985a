// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt-plugins/framework/tests/monitoring"
)

// A real Prometheus, Debian's binary, scrapes the components as an
// operator's would and evaluates deploy/monitoring's rules, with windows
// of a minute instead of ten (monitoring.Shortened), so that faults
// injected into the cluster are seen firing each named alert, and resolving
// once repaired, within the scenario.

const (
	promNamespace = "kvp-monitoring"
	promManifest  = "tests/cluster/manifests/prometheus.yaml"
	// promWindow and promFor replace the rules' ranges and for: durations.
	promWindow = "1m"
	promFor    = "15s"
	// labelWalker is a Plugin whose CEL hook condition the cost limit
	// stops on a VM with many labels.
	labelWalker = "label-walker"
	// nodeWalker is a Plugin whose node hook condition the cost limit
	// stops on a VM with many labels.
	nodeWalker = "node-walker"
)

// promConfig is Prometheus's configuration. Debian's build of Prometheus
// has no Kubernetes service discovery, so its targets come from a file the
// scenario writes (promPublishTargets, a ConfigMap), each with the labels
// job, namespace and pod, which the rules expect
// (deploy/monitoring/README.md).
const promConfig = `global:
  scrape_interval: 5s
  evaluation_interval: 5s
rule_files:
- /etc/prometheus-rules/*.yaml
scrape_configs:
# plugin-controller and label-syncer: controller-runtime's secure metrics,
# authorized for this ServiceAccount's token by the metrics-reader roles.
- job_name: kubevirt-plugins
  scheme: https
  authorization:
    credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token
  tls_config:
    insecure_skip_verify: true
  file_sd_configs:
  - files: [/etc/prometheus-targets/kubevirt-plugins.json]
    refresh_interval: 5s
# KubeVirt's virt-handler, one per node: the node hook series and the
# launchers' hook counts.
- job_name: virt-handler
  scheme: https
  tls_config:
    insecure_skip_verify: true
  file_sd_configs:
  - files: [/etc/prometheus-targets/virt-handler.json]
    refresh_interval: 5s
# The API server: its admission webhook refusals.
- job_name: apiserver
  scheme: https
  authorization:
    credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token
  tls_config:
    ca_file: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server_name: kubernetes.default.svc
  file_sd_configs:
  - files: [/etc/prometheus-targets/apiserver.json]
    refresh_interval: 5s
`

// promTargetGroup is one entry of a Prometheus file_sd file.
type promTargetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// promPublishTargets writes the ConfigMap prometheus-targets: every Pod of
// plugin-controller, label-syncer and virt-handler with an address, and
// the API server's endpoints. The kubelet updates the mounted file within
// about half a minute, and Prometheus reads it again within seconds.
func (s *scenario) promPublishTargets(ctx context.Context) error {
	files := map[string][]promTargetGroup{"kubevirt-plugins.json": {}, "virt-handler.json": {}, "apiserver.json": {}}
	for _, c := range []struct{ file, selector, job, port string }{
		{"kubevirt-plugins.json", "app.kubernetes.io/name=plugin-controller", "plugin-controller", "metrics"},
		{"kubevirt-plugins.json", "app.kubernetes.io/name=label-syncer", "label-syncer", "metrics"},
		{"virt-handler.json", "kubevirt.io=virt-handler", "virt-handler", "metrics"},
	} {
		pods, err := s.cs.CoreV1().Pods(kubevirtNamespace).List(ctx, metav1.ListOptions{LabelSelector: c.selector})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
				continue
			}
			port := 0
			for _, ctr := range p.Spec.Containers {
				for _, cp := range ctr.Ports {
					if cp.Name == c.port {
						port = int(cp.ContainerPort)
					}
				}
			}
			if port == 0 {
				return fmt.Errorf("pod %s has no port %s", p.Name, c.port)
			}
			files[c.file] = append(files[c.file], promTargetGroup{
				Targets: []string{net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))},
				Labels:  map[string]string{"job": c.job, "namespace": p.Namespace, "pod": p.Name},
			})
		}
	}
	eps, err := s.cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	if err != nil {
		return err
	}
	for _, sl := range eps.Items {
		for _, ep := range sl.Endpoints {
			for _, a := range ep.Addresses {
				for _, p := range sl.Ports {
					if p.Port != nil {
						files["apiserver.json"] = append(files["apiserver.json"], promTargetGroup{
							Targets: []string{net.JoinHostPort(a, strconv.Itoa(int(*p.Port)))},
							Labels:  map[string]string{"job": "apiserver"},
						})
					}
				}
			}
		}
	}
	data := map[string]string{}
	for name, groups := range files {
		b, err := json.Marshal(groups)
		if err != nil {
			return err
		}
		data[name] = string(b)
	}
	return s.applyConfigMap(ctx, "prometheus-targets", data)
}

// applyConfigMap creates or replaces a ConfigMap of promNamespace.
func (s *scenario) applyConfigMap(ctx context.Context, name string, data map[string]string) error {
	cm, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]string{"name": name, "namespace": promNamespace}, "data": data})
	if err != nil {
		return err
	}
	_, err = s.kubectl(ctx, string(cm), "apply", "-f", "-")
	return err
}

// promJobs are the scrape jobs and how many targets each must have up.
var promJobs = map[string]int{"plugin-controller": 2, "label-syncer": 1, "virt-handler": 2, "apiserver": 1}

// promGet reads a path of Prometheus's HTTP API through the API server's
// Service proxy and decodes its data.
func (s *scenario) promGet(ctx context.Context, path string, data any) error {
	return s.promGetWith(ctx, path, nil, data)
}

// promGetWith is promGet with query parameters.
func (s *scenario) promGetWith(ctx context.Context, path string, params map[string]string, data any) error {
	b, err := s.cs.CoreV1().Services(promNamespace).ProxyGet("http", "prometheus", "web", path, params).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	var r struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("prometheus %s: %s", path, r.Error)
	}
	return json.Unmarshal(r.Data, data)
}

// promTargets counts the targets up and all targets per job, and says
// why each target that is not up is down, in Prometheus's words.
func (s *scenario) promTargets(ctx context.Context) (up, all map[string]int, down []string, err error) {
	var d struct {
		ActiveTargets []struct {
			Labels    map[string]string `json:"labels"`
			Health    string            `json:"health"`
			LastError string            `json:"lastError"`
		} `json:"activeTargets"`
	}
	if err := s.promGet(ctx, "api/v1/targets", &d); err != nil {
		return nil, nil, nil, err
	}
	up, all = map[string]int{}, map[string]int{}
	for _, t := range d.ActiveTargets {
		all[t.Labels["job"]]++
		if t.Health == "up" {
			up[t.Labels["job"]]++
			continue
		}
		down = append(down, fmt.Sprintf("%s %s/%s %s: %s", t.Labels["job"], t.Labels["namespace"], t.Labels["pod"], t.Health, t.LastError))
	}
	sort.Strings(down)
	return up, all, down, nil
}

// promAlert is an alert as Prometheus's /api/v1/alerts lists it.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

func (a promAlert) String() string {
	keys := make([]string, 0, len(a.Labels))
	for k := range a.Labels {
		if k != "alertname" && k != "severity" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+a.Labels[k])
	}
	return a.Labels["alertname"] + "{" + strings.Join(parts, ",") + "} " + a.State
}

func (s *scenario) promAlerts(ctx context.Context) ([]promAlert, error) {
	var d struct {
		Alerts []promAlert `json:"alerts"`
	}
	err := s.promGet(ctx, "api/v1/alerts", &d)
	return d.Alerts, err
}

// promStart builds the Prometheus image, loads it into the nodes and runs
// it with the rules of deploy/monitoring's PrometheusRules, shortened.
func (s *scenario) promStart(ctx context.Context) error {
	out, err := s.script(ctx, "hack/build-prometheus-image.sh")
	if err != nil {
		return err
	}
	image := lastLine(out)
	if _, err := s.script(ctx, "hack/kind/cluster.sh", "load", image); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kvp-rules-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	files, err := monitoring.PrometheusRules(s.root, dir)
	if err != nil {
		return err
	}
	short := monitoring.Shortened(files, promWindow, promFor)
	rules := map[string]string{}
	for _, f := range short {
		b, err := yaml.Marshal(f)
		if err != nil {
			return err
		}
		rules[f.Name+".yaml"] = string(b)
	}
	b, err := os.ReadFile(filepath.Join(s.root, promManifest))
	if err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, strings.ReplaceAll(string(b), "@IMAGE@", image), "apply", "-f", "-"); err != nil {
		return err
	}
	for name, data := range map[string]map[string]string{"prometheus-config": {"prometheus.yml": promConfig}, "prometheus-rules": rules} {
		if err := s.applyConfigMap(ctx, name, data); err != nil {
			return err
		}
	}
	if err := s.promPublishTargets(ctx); err != nil {
		return err
	}
	s.Show(fmt.Sprintf("Prometheus %s in namespace %s; the rules of %d PrometheusRules with every range %s and every for: %s (monitoring.Shortened)",
		image, promNamespace, len(files), promWindow, promFor))
	var up, all map[string]int
	var down []string
	err = poll(ctx, "every target up", 3*time.Minute, func() (bool, string, error) {
		var err error
		if up, all, down, err = s.promTargets(ctx); err != nil {
			return false, err.Error(), nil
		}
		for job, n := range promJobs {
			if up[job] < n {
				return false, fmt.Sprintf("up %v of %v; down: %s", up, all, strings.Join(down, "; ")), nil
			}
		}
		return true, "", nil
	})
	s.Check("Prometheus scrapes, with its ServiceAccount's token where the endpoint asks for one, plugin-controller (both replicas), label-syncer, virt-handler on both workers and the API server: every target up",
		err == nil, "up %v of %v%s%s", up, all, downSuffix(down), errSuffix(err))
	var groups struct {
		Groups []struct {
			Rules []struct {
				Type string `json:"type"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := s.promGet(ctx, "api/v1/rules", &groups); err != nil {
		return err
	}
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Type == "alerting" {
				alerts++
			}
		}
	}
	want := len(monitoring.Alerts(files))
	s.Check("it loaded every alert of deploy/monitoring", alerts == want, "%d alerting rules loaded, %d in deploy/monitoring", alerts, want)
	// A rule evaluated before the first scrape of its targets is pending
	// (KubeVirtPluginControllerDown reads no replica up until then): the
	// healthy cluster shows no alert, firing or pending, once the rules
	// have been evaluated on scraped series, within a few evaluations.
	var listed []promAlert
	err = poll(ctx, "no alert", time.Minute, func() (bool, string, error) {
		var err error
		if listed, err = s.promAlerts(ctx); err != nil {
			return false, err.Error(), nil
		}
		return len(listed) == 0, fmt.Sprintf("%v", listed), nil
	})
	s.Check("no alert fires, or is pending, on the healthy cluster", err == nil, "%v%s", listed, errSuffix(err))
	return nil
}

// downSuffix lists the targets that are not up, and why.
func downSuffix(down []string) string {
	if len(down) == 0 {
		return ""
	}
	return "; down: " + strings.Join(down, "; ")
}

// promFault is an alert a fault must fire, named with the labels it
// must carry.
type promFault struct {
	alert  string
	labels map[string]string
}

func (f promFault) matches(a promAlert) bool {
	if a.Labels["alertname"] != f.alert {
		return false
	}
	for k, v := range f.labels {
		if a.Labels[k] != v {
			return false
		}
	}
	return true
}

// labelWalkerYAML has a CEL hook whose condition compares every label of
// the VMI with every other one: the cost limit stops it on a VMI with a few
// hundred labels.
const labelWalkerYAML = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: ` + labelWalker + `
spec:
  condition: '"plugins.example.com/label-walker" in vmi.Labels'
  failureStrategy: Fail
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{Title: "walked"}'
    condition: 'vmi.Labels.all(a, vmi.Labels.all(b, size(a) + size(b) > 0))'
`

// nodeWalkerYAML has a node hook at PreVMStart with the same condition. A
// node hook condition that cannot be decided fails the dispatch whatever
// the failureStrategy (handler-runtime/dispatch), so the VM it selects
// never reaches its launcher's hooks: it gets a VM of its own. Its socket
// is served by no one; the condition is all it gets to.
const nodeWalkerYAML = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: ` + nodeWalker + `
spec:
  condition: '"plugins.example.com/node-walker" in vmi.Labels'
  nodeHooks:
  - socket: /var/run/kubevirt-plugin/` + nodeWalker + `/node.sock
    permittedHooks: [PreVMStart]
    condition: 'vmi.Labels.all(a, vmi.Labels.all(b, size(a) + size(b) > 0))'
`

// overlapPlugins are two Plugins whose CEL hooks both set the domain's
// title, on a VM labelled plugins.example.com/overlap: the second one's
// value is kept, an overlap the launcher counts.
const overlapPlugins = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: overlap-a
spec:
  condition: '"plugins.example.com/overlap" in vmi.Labels'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{Title: "set by overlap-a"}'
---
apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: overlap-b
spec:
  condition: '"plugins.example.com/overlap" in vmi.Labels'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{Title: "set by overlap-b"}'
`

// promFaults injects six faults at once, reads each named alert firing
// from Prometheus, repairs the faults and reads each alert resolved.
func (s *scenario) promFaults(ctx context.Context) error {
	for _, p := range [][2]string{{"Plugin " + labelWalker, labelWalkerYAML}, {"Plugin " + nodeWalker, nodeWalkerYAML},
		{"Plugins overlap-a and overlap-b", overlapPlugins}} {
		if err := s.applyPlugin(ctx, p[0], p[1]); err != nil {
			return err
		}
	}
	many := func(label string) map[string]string {
		labels := map[string]string{label: "yes"}
		for i := range 2000 {
			labels[fmt.Sprintf("owner.example.org/l%04d", i)] = "v"
		}
		return labels
	}
	vms := []string{"alert-sidecar", "alert-cel", "alert-node-cel"}
	manifests := map[string]string{
		"alert-sidecar": bareVM("alert-sidecar", map[string]string{"plugins.example.com/smbios-watchdog": "enabled", "watchdog.example.com/action": "explode",
			"plugins.example.com/overlap": "yes"}),
		"alert-cel":      bareVM("alert-cel", many("plugins.example.com/label-walker")),
		"alert-node-cel": bareVM("alert-node-cel", many("plugins.example.com/node-walker")),
	}
	for _, name := range vms {
		if _, err := s.kubectl(ctx, manifests[name], "apply", "-f", "-"); err != nil {
			return err
		}
	}
	s.Show("faults: VM alert-sidecar labelled for smbios-watchdog with watchdog action \"explode\", which its sidecar refuses every boot (Fail), " +
		"and for overlap-a and overlap-b, whose CEL hooks both set the domain's title (an overlap, for the dashboard); " +
		"VMs alert-cel and alert-node-cel with 2,000 labels, selected by Plugin label-walker, whose launcher hook condition compares every label with every other (Fail), " +
		"and by Plugin node-walker, whose PreVMStart node hook condition does the same")
	faults := []promFault{
		{"KubeVirtPluginLauncherHookFailing", map[string]string{"plugin": "smbios-watchdog", "hook_point": "GuestDefinition"}},
		{"KubeVirtPluginLauncherCELCostLimitExceeded", map[string]string{"plugin": labelWalker, "hook_point": "GuestDefinition"}},
		{"KubeVirtPluginNodeCELCostLimitExceeded", map[string]string{"plugin": nodeWalker, "hook_point": "PreVMStart"}},
		{"KubeVirtPluginNodeDaemonSetDown", map[string]string{"plugin": "node-hook-recorder"}},
		{"KubeVirtPluginSidecarInjectorUnreachable", nil},
		{"KubeVirtPluginControllerDown", nil},
	}
	// Prometheus is read from the first fault on: KubeVirt retries a VMI
	// whose hooks fail with a growing backoff, and an alert on one-minute
	// windows may fire and resolve between two retries.
	type fired struct {
		seen map[string]time.Duration
		last []promAlert
	}
	firing := make(chan fired, 1)
	go func() {
		seen, last := s.promWait(ctx, faults, "every alert firing", func(f promFault, alerts []promAlert) bool {
			return slices.ContainsFunc(alerts, func(a promAlert) bool { return f.matches(a) && a.State == "firing" })
		})
		firing <- fired{seen, last}
	}()
	err := poll(ctx, "the VMs' launcher Pods", 3*time.Minute, func() (bool, string, error) {
		out, err := s.kubectl(ctx, "", "-n", vmNamespace, "get", "pods", "-l", "kubevirt.io=virt-launcher", "-o", "jsonpath={.items[*].metadata.labels.vm\\.kubevirt\\.io/name}")
		if err != nil {
			return false, err.Error(), nil
		}
		names := strings.Fields(out)
		return !slices.ContainsFunc(vms, func(vm string) bool { return !slices.Contains(names, vm) }), out, nil
	})
	if err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "", "-n", "kubevirt-plugins-node-hooks", "patch", "daemonset", "node-hook-recorder", "--type=merge",
		"-p", `{"spec":{"template":{"spec":{"nodeSelector":{"kvp.example.com/no-such-node":"true"}}}}}`); err != nil {
		return err
	}
	s.Show("fault: DaemonSet node-hook-recorder on no node (a nodeSelector no node has): its node hooks fail on every node")
	replicas, err := s.kubectl(ctx, "", "-n", kubevirtNamespace, "get", "deployment", "plugin-controller", "-o", "jsonpath={.spec.replicas}")
	if err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "", "-n", kubevirtNamespace, "scale", "deployment", "plugin-controller", "--replicas=0"); err != nil {
		return err
	}
	s.Show("fault: $ kubectl -n kubevirt scale deployment plugin-controller --replicas=0 (it serves the sidecar injector's webhook too)")
	// Its Pods answer the webhook until they are gone (a preStop delay).
	err = poll(ctx, "plugin-controller's Pods to go", 2*time.Minute, func() (bool, string, error) {
		out, err := s.kubectl(ctx, "", "-n", kubevirtNamespace, "get", "pods", "-l", "app.kubernetes.io/name=plugin-controller", "-o", "name")
		return err == nil && strings.TrimSpace(out) == "", out, nil
	})
	if err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, bareVM("alert-refused", map[string]string{"app": "refused"}), "apply", "-f", "-"); err != nil {
		return err
	}
	s.Show("VM alert-refused created: its launcher Pod goes through the injector's webhook, which no Pod serves")

	r := <-firing
	seen, last := r.seen, r.last
	for _, f := range faults {
		took, ok := seen[f.alert]
		s.Check(fmt.Sprintf("Prometheus's /api/v1/alerts: %s firing %v", f.alert, f.labels), ok,
			"%s", firedDetail(ok, took, last))
	}

	for _, name := range append(vms, "alert-refused") {
		if _, err := s.kubectl(ctx, "", "-n", vmNamespace, "delete", "vm", name, "--wait=false"); err != nil {
			return err
		}
	}
	if _, err := s.kubectl(ctx, "", "-n", "kubevirt-plugins-node-hooks", "patch", "daemonset", "node-hook-recorder", "--type=json",
		"-p", `[{"op":"remove","path":"/spec/template/spec/nodeSelector/kvp.example.com~1no-such-node"}]`); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "", "-n", kubevirtNamespace, "scale", "deployment", "plugin-controller", "--replicas="+strings.TrimSpace(replicas)); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "", "delete", "plugin", labelWalker, nodeWalker, "overlap-a", "overlap-b", "--ignore-not-found"); err != nil {
		return err
	}
	// The new plugin-controller Pods are the targets now.
	err = poll(ctx, "plugin-controller's replicas", 3*time.Minute, func() (bool, string, error) {
		out, err := s.kubectl(ctx, "", "-n", kubevirtNamespace, "get", "deployment", "plugin-controller", "-o", "jsonpath={.status.readyReplicas}")
		return err == nil && strings.TrimSpace(out) == strings.TrimSpace(replicas), out, nil
	})
	if err != nil {
		return err
	}
	if err := s.promPublishTargets(ctx); err != nil {
		return err
	}
	s.Show("repaired: the four VMs deleted, node-hook-recorder back on every node, plugin-controller back to " + strings.TrimSpace(replicas) + " replicas")
	resolved, last := s.promWait(ctx, faults, "every alert resolved", func(f promFault, alerts []promAlert) bool {
		return !slices.ContainsFunc(alerts, f.matches)
	})
	for _, f := range faults {
		took, ok := resolved[f.alert]
		s.Check("after the repair, "+f.alert+" resolves", ok, "%s", firedDetail(ok, took, last))
	}
	return s.promDashboard(ctx)
}

// promDashboard runs every query of every panel of deploy/monitoring's
// dashboard, as written (its ten-minute windows take in the faults just
// repaired), on the real Prometheus: each must parse and return a series.
// The one query that reads cert-manager's series returns none on a
// cluster without cert-manager, and only there.
func (s *scenario) promDashboard(ctx context.Context) error {
	panels, err := monitoring.DashboardPanels(filepath.Join(s.root, monitoring.DashboardPath))
	if err != nil {
		return err
	}
	_, crdErr := s.kubectl(ctx, "", "get", "crd", "certificates.cert-manager.io")
	certManager := crdErr == nil
	for _, p := range panels {
		for i, expr := range p.Exprs {
			var d struct {
				Result []json.RawMessage `json:"result"`
			}
			err := s.promGetWith(ctx, "api/v1/query", map[string]string{"query": expr}, &d)
			name := fmt.Sprintf("dashboard panel %q, query %d of %d", p.Title, i+1, len(p.Exprs))
			if !certManager && readsCertManager(expr) {
				s.Check(name+" parses (cert-manager's series: cert-manager is not installed here, so none is expected)", err == nil,
					"%d series%s", len(d.Result), errSuffix(err))
				continue
			}
			s.Check(name+" returns a series on the real Prometheus", err == nil && len(d.Result) > 0,
				"%d series: %s%s", len(d.Result), expr, errSuffix(err))
		}
	}
	return nil
}

// readsCertManager reports whether a query reads only series cert-manager
// exposes.
func readsCertManager(expr string) bool {
	return strings.Contains(expr, "certmanager_") && !strings.Contains(expr, "kubevirt_plugins")
}

// promWait polls Prometheus's alerts until done holds for every fault, and
// returns when it first held for each, and the alerts last listed.
func (s *scenario) promWait(ctx context.Context, faults []promFault, what string, done func(promFault, []promAlert) bool) (map[string]time.Duration, []promAlert) {
	start := time.Now()
	when := map[string]time.Duration{}
	var last []promAlert
	_ = poll(ctx, what, 6*time.Minute, func() (bool, string, error) {
		alerts, err := s.promAlerts(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		last = alerts
		for _, f := range faults {
			if _, ok := when[f.alert]; !ok && done(f, alerts) {
				when[f.alert] = time.Since(start)
			}
		}
		return len(when) == len(faults), fmt.Sprintf("%d of %d: %v", len(when), len(faults), alerts), nil
	})
	return when, last
}

// firedDetail says when an alert got to its state, or what Prometheus
// listed instead.
func firedDetail(ok bool, took time.Duration, alerts []promAlert) string {
	if ok {
		return "after " + took.Round(time.Second).String()
	}
	return fmt.Sprintf("not within the wait; alerts: %v", alerts)
}
