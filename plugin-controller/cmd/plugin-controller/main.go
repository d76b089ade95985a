// SPDX-License-Identifier: Apache-2.0

// Command plugin-controller runs the Plugin status reconciler and the
// validating webhook for Plugins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
	"github.com/kubevirt-plugins/framework/plugin-controller/certmetrics"
	pluginreconciler "github.com/kubevirt-plugins/framework/plugin-controller/reconcilers/plugin"
	"github.com/kubevirt-plugins/framework/plugin-controller/servingcert"
	pluginwebhook "github.com/kubevirt-plugins/framework/plugin-controller/webhooks/plugin"
	sidecarwebhook "github.com/kubevirt-plugins/framework/plugin-controller/webhooks/sidecar"
)

// Leader election lives in the controller's namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=kubevirt
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=kubevirt

// The metrics endpoint asks the API server who a scraper is and whether it
// may get /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Certificate management modes of --webhook-cert-management.
const (
	certsSelfSigned = "self-signed"
	certsExternal   = "external"
)

type flags struct {
	kubeconfig, metricsAddr, probeAddr string
	metricsSecure                      bool
	metricsCertDir                     string
	leaderElect                        bool
	leaderElectionNamespace            string
	enableWebhook                      bool
	enableSidecarInjector              bool
	webhookPort                        int
	certDir, certManagement            string
	serviceName, serviceNamespace      string
	webhookConfigName                  string
	mutatingWebhookConfigName          string
	caSecretName                       string
	certCheckInterval                  time.Duration
	celCostLimit                       uint64
	celConditionCostLimit              uint64
	maxConcurrentReconciles            int
	zap                                zap.Options
}

func parseFlags(args []string) (*flags, error) {
	f := &flags{}
	namespace := os.Getenv("POD_NAMESPACE")
	if namespace == "" {
		namespace = "kubevirt"
	}
	fs := flag.NewFlagSet("plugin-controller", flag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Default: in-cluster configuration, or $KUBECONFIG.")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS to clients whose bearer token the API server authenticates (TokenReview) and authorizes for GET /metrics (SubjectAccessReview); false serves plain HTTP to anyone.")
	fs.StringVar(&f.metricsCertDir, "metrics-cert-dir", "",
		"Directory holding tls.crt and tls.key for the metrics endpoint, reloaded when they change. Default: a self-signed certificate made at start-up.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles.")
	fs.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", namespace, "Namespace of the leader election Lease. Default: $POD_NAMESPACE, else kubevirt.")
	fs.BoolVar(&f.enableWebhook, "enable-webhook", true, "Serve the validating webhook for Plugins; false runs the reconciler alone.")
	fs.BoolVar(&f.enableSidecarInjector, "enable-sidecar-injector", true,
		"Serve the mutating webhook that injects plugin sidecars into virt-launcher Pods, as the ConfigMaps labelled "+sidecarinjection.ConfigMapLabel+" in $POD_NAMESPACE describe (deploy/sidecar-injector registers it); needs --enable-webhook.")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "Port the webhook server listens on.")
	fs.StringVar(&f.certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding tls.crt and tls.key for the webhook server.")
	fs.StringVar(&f.certManagement, "webhook-cert-management", certsSelfSigned,
		"self-signed: create, rotate and publish (caBundle) a self-signed serving certificate; external: use the files another tool (cert-manager) puts into --webhook-cert-dir.")
	fs.StringVar(&f.serviceName, "webhook-service-name", "plugin-controller-webhook", "Service in front of the webhook; names the self-signed certificate.")
	fs.StringVar(&f.serviceNamespace, "webhook-service-namespace", namespace, "Namespace of that Service. Default: $POD_NAMESPACE, else kubevirt.")
	fs.StringVar(&f.webhookConfigName, "webhook-configuration-name", "plugin-controller", "ValidatingWebhookConfiguration whose caBundle the self-signed mode maintains.")
	fs.StringVar(&f.mutatingWebhookConfigName, "mutating-webhook-configuration-name", "kubevirt-plugin-sidecar-injector",
		"MutatingWebhookConfiguration (the sidecar injector's, deploy/sidecar-injector) whose caBundle the self-signed mode maintains too, once it exists; \"\" leaves it alone.")
	fs.StringVar(&f.caSecretName, "webhook-ca-secret-name", "plugin-controller-webhook-ca",
		"Secret (in --webhook-service-namespace) holding the self-signed CA every replica signs its serving certificate with, so one caBundle trusts them all; \"\" keeps a CA per replica in --webhook-cert-dir (one replica only).")
	fs.DurationVar(&f.certCheckInterval, "webhook-cert-check-interval", 0,
		"How often the self-signed mode checks the certificates and the caBundles, besides watching the webhook configurations. Default: 5 minutes.")
	fs.Uint64Var(&f.celCostLimit, "cel-cost-limit", celenv.DefaultCostLimit, "Cost limit of GuestDefinition CEL expressions; must match the launcher's.")
	fs.Uint64Var(&f.celConditionCostLimit, "cel-condition-cost-limit", celenv.DefaultConditionCostLimit, "Cost limit of CEL conditions; must match the launcher's and the handler's.")
	fs.IntVar(&f.maxConcurrentReconciles, "max-concurrent-reconciles", pluginreconciler.DefaultMaxConcurrentReconciles, "Plugins reconciled in parallel.")
	f.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if f.certManagement != certsSelfSigned && f.certManagement != certsExternal {
		return nil, fmt.Errorf("--webhook-cert-management must be %s or %s, not %q", certsSelfSigned, certsExternal, f.certManagement)
	}
	return f, nil
}

func main() {
	f, err := parseFlags(os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger := zap.New(zap.UseFlagOptions(&f.zap))
	ctrl.SetLogger(logger)
	if err := run(ctrl.SetupSignalHandler(), f, logger); err != nil {
		logger.Error(err, "plugin-controller failed")
		os.Exit(1)
	}
}

// restConfig loads the configuration like ctrl.GetConfig does, including
// its choice to leave rate limiting to the API server's priority and
// fairness (QPS -1), from --kubeconfig when it is set.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}

func run(ctx context.Context, f *flags, logger logr.Logger) error {
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the client configuration: %w", err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, pluginv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	env, err := celenv.New(celenv.Options{CostLimit: f.celCostLimit, ConditionCostLimit: f.celConditionCostLimit})
	if err != nil {
		return err
	}

	opts := ctrl.Options{
		Scheme:                        scheme,
		Logger:                        logger,
		Metrics:                       metricsOptions(f),
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              "plugin-controller.plugin.kubevirt.io",
		LeaderElectionNamespace:       f.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	}
	if f.enableWebhook {
		opts.WebhookServer = webhook.NewServer(webhook.Options{Port: f.webhookPort, CertDir: f.certDir})
		// When the certificate the webhook server serves expires, read
		// at each scrape, in either certificate mode.
		if err := crmetrics.Registry.Register(certmetrics.New(filepath.Join(f.certDir, "tls.crt"))); err != nil {
			return fmt.Errorf("registering the certificate expiry gauge: %w", err)
		}
	}
	injector := f.enableWebhook && f.enableSidecarInjector
	if injector {
		// The injector reads only the sidecar descriptions: ConfigMaps of
		// its namespace with the description label.
		opts.Cache.ByObject = map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{f.serviceNamespace: {}},
			Label:      labels.SelectorFromSet(nil).Add(mustRequirement(sidecarinjection.ConfigMapLabel, selection.Exists)),
		}}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	readiness := healthz.Ping
	if f.enableWebhook {
		readiness = mgr.GetWebhookServer().StartedChecker()
	}
	if injector {
		// Ready once the descriptions are read too: a replica that
		// answered before would inject nothing.
		if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
			return err
		}
		started := readiness
		readiness = func(req *http.Request) error {
			if err := started(req); err != nil {
				return err
			}
			if !mgr.GetCache().WaitForCacheSync(req.Context()) {
				return errors.New("the sidecar descriptions are not read yet")
			}
			return nil
		}
	}
	if err := mgr.AddReadyzCheck("ready", readiness); err != nil {
		return err
	}

	if err := (&pluginreconciler.Reconciler{
		CEL:                     env,
		MaxConcurrentReconciles: f.maxConcurrentReconciles,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if f.enableWebhook {
		if f.certManagement == certsSelfSigned {
			if err := setupSelfSignedCerts(ctx, mgr, cfg, scheme, f, logger); err != nil {
				return err
			}
		}
		if err := (&pluginwebhook.Validator{CEL: env}).SetupWebhookWithManager(mgr); err != nil {
			return err
		}
		if injector {
			if err := (&sidecarwebhook.Injector{Reader: mgr.GetClient(), Namespace: f.serviceNamespace}).SetupWebhookWithManager(mgr); err != nil {
				return err
			}
		}
	}
	logger.Info("starting", "webhook", f.enableWebhook, "sidecarInjector", injector, "leaderElection", f.leaderElect)
	return mgr.Start(ctx)
}

func mustRequirement(key string, op selection.Operator) labels.Requirement {
	r, err := labels.NewRequirement(key, op, nil)
	if err != nil {
		panic(err)
	}
	return *r
}

// metricsOptions serves metrics the way --metrics-secure says.
func metricsOptions(f *flags) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: f.metricsAddr}
	if f.metricsSecure {
		opts.SecureServing = true
		opts.CertDir = f.metricsCertDir
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}

// setupSelfSignedCerts writes a certificate before the webhook server
// starts (it needs the files) and keeps it renewed afterwards.
func setupSelfSignedCerts(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, scheme *runtime.Scheme, f *flags, logger logr.Logger) error {
	// The manager's client reads from a cache that is not running yet.
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	svc := f.serviceName + "." + f.serviceNamespace
	opts := servingcert.Options{
		CertDir:                          f.certDir,
		DNSNames:                         []string{svc + ".svc", svc + ".svc.cluster.local", svc},
		WebhookConfigurationName:         f.webhookConfigName,
		MutatingWebhookConfigurationName: f.mutatingWebhookConfigName,
		Client:                           direct,
		CheckInterval:                    f.certCheckInterval,
		Logger:                           logger.WithName("servingcert"),
	}
	if f.caSecretName != "" {
		opts.CASecret = &types.NamespacedName{Namespace: f.serviceNamespace, Name: f.caSecretName}
	}
	rotator, err := servingcert.New(opts)
	if err != nil {
		return err
	}
	ensureCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := rotator.Ensure(ensureCtx); err != nil {
		// The caBundle update is retried by the rotator; a missing
		// certificate is fatal.
		logger.Error(err, "initial serving certificate check")
	}
	return mgr.Add(rotator)
}
