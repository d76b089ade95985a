// SPDX-License-Identifier: Apache-2.0

// Package apiserver starts a real kube-apiserver and etcd (envtest) with the
// project's CRDs installed, for integration tests. Start it once per test
// package, from TestMain.
package apiserver

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// Options configures Start.
type Options struct {
	// CRDDirs are directories of CRD manifests, relative to the repository
	// root. Default: deploy/crd. A missing directory is an error.
	CRDDirs []string
	// WithKubeVirtCRDs also installs minimal VirtualMachine and
	// VirtualMachineInstance CRDs (tests/crds/kubevirt). Default false.
	WithKubeVirtCRDs bool
	// AssetsDir holds the kube-apiserver and etcd binaries. Default:
	// $KUBEBUILDER_ASSETS, else bin/k8s in the repository (made by
	// `make setup`).
	AssetsDir string
	// WebhookInstallOptions are passed to envtest as they are.
	WebhookInstallOptions envtest.WebhookInstallOptions
	// EmulatedVersion makes the API server serve the APIs of an older
	// Kubernetes minor (kube-apiserver --emulated-version, e.g. "1.33").
	// Default: $KVP_EMULATED_VERSION, else the binary's own version.
	EmulatedVersion string
	// Logger receives what envtest and every controller-runtime component
	// of the process log. Start hands it to controller-runtime, which keeps
	// the first logger a process sets (log.SetLogger) and, when none is set
	// half a minute in, prints a warning with a goroutine stack trace.
	// Default: logr.Discard().
	Logger logr.Logger
}

// EmulatedVersionEnv names the variable that sets Options.EmulatedVersion
// for every API server a test run starts: `make test` runs the controller,
// CRD and label-sync packages once at the newest version and once with it
// set to the oldest supported minor.
const EmulatedVersionEnv = "KVP_EMULATED_VERSION"

// Server is a running API server.
type Server struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Scheme knows the core, Plugin and KubeVirt types.
	Scheme *runtime.Scheme
	// Client is a controller-runtime client using Scheme.
	Client client.Client
	// Env is the underlying envtest environment.
	Env *envtest.Environment
	// EmulatedVersion is the Kubernetes minor the server emulates, or ""
	// for the binary's own version.
	EmulatedVersion string
}

// NewScheme returns a scheme with the core Kubernetes types, the Plugin
// types and the KubeVirt core types.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, pluginv1alpha1.AddToScheme, kubevirtv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Start starts etcd and kube-apiserver and installs the CRDs.
func Start(opts Options) (*Server, error) {
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = logr.Discard()
	}
	ctrllog.SetLogger(logger)
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	dirs := opts.CRDDirs
	if len(dirs) == 0 {
		dirs = []string{"deploy/crd"}
	}
	if opts.WithKubeVirtCRDs {
		dirs = append(dirs, "tests/crds/kubevirt")
	}
	var paths []string
	for _, d := range dirs {
		p := filepath.Join(root, d)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("CRD directory %s: %w", d, err)
		}
		paths = append(paths, p)
	}
	assets := opts.AssetsDir
	if assets == "" {
		assets = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make setup` first: %w", b, assets, err)
		}
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		Scheme:                scheme,
		WebhookInstallOptions: opts.WebhookInstallOptions,
	}
	emulated := opts.EmulatedVersion
	if emulated == "" {
		emulated = os.Getenv(EmulatedVersionEnv)
	}
	if emulated != "" {
		env.ControlPlane.GetAPIServer().Configure().Append("emulated-version", emulated)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest (emulated version %q): %w", emulated, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Server{Config: cfg, Scheme: scheme, Client: c, Env: env, EmulatedVersion: emulated}, nil
}

// Kubeconfig writes, into dir, a kubeconfig file that reaches the API
// server as user, and returns its path. Processes under test (controller
// binaries, containers on the host network) authenticate with it.
func (s *Server) Kubeconfig(user envtest.User, dir string) (string, error) {
	u, err := s.Env.AddUser(user, nil)
	if err != nil {
		return "", err
	}
	data, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig-"+user.Name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// Stop stops the API server and etcd.
func (s *Server) Stop() error {
	return s.Env.Stop()
}
