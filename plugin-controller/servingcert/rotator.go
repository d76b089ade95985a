// SPDX-License-Identifier: Apache-2.0

package servingcert

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The webhook configurations' caBundles are patched here; least privilege
// limits the writes to the configurations deploy/controller and
// deploy/sidecar-injector install. Both are read and watched (by name; the
// Plugin reconciler reads every configuration anyway). The shared CA lives
// in one Secret of the controller's namespace (create cannot be limited to
// a name).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=update;patch,resourceNames=plugin-controller
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=update;patch,resourceNames=kubevirt-plugin-sidecar-injector
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;update,resourceNames=plugin-controller-webhook-ca,namespace=kubevirt
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create,namespace=kubevirt

// File names in Options.CertDir. CertFile and KeyFile are the names the
// controller-runtime webhook server reads by default.
const (
	CertFile   = "tls.crt"
	KeyFile    = "tls.key"
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// Options configures a Rotator.
type Options struct {
	// CertDir is where the certificate, its key and the CA are written.
	// Required.
	CertDir string
	// DNSNames the serving certificate is valid for; the first is also its
	// common name. Usually <service>.<namespace>.svc. Required.
	DNSNames []string
	// WebhookConfigurationName is the ValidatingWebhookConfiguration whose
	// webhooks get the CA in their caBundle. While it does not exist the
	// check fails (and is retried). Default: none is patched.
	WebhookConfigurationName string
	// MutatingWebhookConfigurationName is a MutatingWebhookConfiguration
	// whose webhooks get the CA in their caBundle too, under the same
	// rules. It is optional: while it does not exist there is nothing to
	// fill and no error; one created later gets its caBundle at once.
	// Default: none is patched.
	MutatingWebhookConfigurationName string
	// CASecret is the Secret holding the CA (keys ca.crt and ca.key) that
	// every replica signs its serving certificate with, so that one
	// caBundle trusts them all. The first replica creates it; the others
	// load it; the one that renews it near expiry wins by resourceVersion.
	// Default: none: the CA is kept in CertDir, one per replica, which
	// suits a single replica only.
	CASecret *types.NamespacedName
	// Client reads and updates the webhook configurations and the CA
	// Secret, and watches the configurations so that their caBundle is
	// filled in as soon as they are created; it should read from the API
	// server directly, not from a cache. Required when
	// WebhookConfigurationName, MutatingWebhookConfigurationName or
	// CASecret is set.
	Client client.WithWatch
	// CAValidity is how long a new CA is valid. Default: one year.
	CAValidity time.Duration
	// CertValidity is how long a new serving certificate is valid; it is
	// shortened to the CA's end when that comes first. Default: 90 days.
	CertValidity time.Duration
	// RenewBefore renews the serving certificate when less than this is
	// left of it. The CA is renewed when less than CertValidity is left of
	// it. Default: CertValidity/3.
	RenewBefore time.Duration
	// CheckInterval is how often Start checks the certificates and the
	// caBundle. Default: 5 minutes, or RenewBefore/4 if that is shorter.
	CheckInterval time.Duration
	// MaxCAs bounds the CAs kept in a caBundle: the current one plus
	// earlier ones that have not expired. Default: 4.
	MaxCAs int
	// Clock tells the time and drives the check interval. Default: the
	// real clock.
	Clock clock.WithTicker
	// Logger receives renewals and errors, and at V(1) each check that
	// found the caBundle current. Default: discard.
	Logger logr.Logger
}

// Rotator keeps the files in CertDir and the webhook caBundle current. It
// is a controller-runtime Runnable that runs on every replica (each one
// serves the webhook with the files in its own CertDir).
type Rotator struct {
	opts Options
	// targets are the webhook configurations whose caBundle is kept.
	targets []bundleTarget
	// mu serializes Ensure between the check interval and the watch.
	mu sync.Mutex
}

// New checks opts and fills in the defaults.
func New(opts Options) (*Rotator, error) {
	if opts.CertDir == "" {
		return nil, errors.New("servingcert: CertDir is required")
	}
	if len(opts.DNSNames) == 0 {
		return nil, errors.New("servingcert: at least one DNS name is required")
	}
	if (opts.WebhookConfigurationName != "" || opts.MutatingWebhookConfigurationName != "" || opts.CASecret != nil) && opts.Client == nil {
		return nil, errors.New("servingcert: a Client is required to patch the webhook configurations or keep the CA in a Secret")
	}
	if opts.CAValidity <= 0 {
		opts.CAValidity = 365 * 24 * time.Hour
	}
	if opts.CertValidity <= 0 {
		opts.CertValidity = 90 * 24 * time.Hour
	}
	if opts.CertValidity > opts.CAValidity {
		return nil, fmt.Errorf("servingcert: CertValidity %s exceeds CAValidity %s", opts.CertValidity, opts.CAValidity)
	}
	if opts.RenewBefore <= 0 {
		opts.RenewBefore = opts.CertValidity / 3
	}
	if opts.RenewBefore >= opts.CertValidity {
		return nil, fmt.Errorf("servingcert: RenewBefore %s must be shorter than CertValidity %s", opts.RenewBefore, opts.CertValidity)
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = min(5*time.Minute, opts.RenewBefore/4)
	}
	if opts.MaxCAs <= 0 {
		opts.MaxCAs = 4
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	r := &Rotator{opts: opts}
	if opts.WebhookConfigurationName != "" {
		r.targets = append(r.targets, validatingTarget(opts.WebhookConfigurationName))
	}
	if opts.MutatingWebhookConfigurationName != "" {
		r.targets = append(r.targets, mutatingTarget(opts.MutatingWebhookConfigurationName))
	}
	return r, nil
}

// bundleTarget is a webhook configuration whose webhooks' caBundles the
// Rotator keeps trusting the CA.
type bundleTarget struct {
	kind, name string
	// logKey names the configuration in log lines.
	logKey string
	// optional: a configuration that does not exist has nothing to fill,
	// which is not an error.
	optional  bool
	newObject func() client.Object
	newList   func() client.ObjectList
	// clientConfigs returns the client configuration of each webhook of
	// obj (an object newObject made), to be changed in place.
	clientConfigs func(obj client.Object) []*admissionregistrationv1.WebhookClientConfig
}

func validatingTarget(name string) bundleTarget {
	return bundleTarget{
		kind: "ValidatingWebhookConfiguration", name: name, logKey: "validatingWebhookConfiguration",
		newObject: func() client.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		newList:   func() client.ObjectList { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		clientConfigs: func(obj client.Object) []*admissionregistrationv1.WebhookClientConfig {
			webhooks := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks
			out := make([]*admissionregistrationv1.WebhookClientConfig, len(webhooks))
			for i := range webhooks {
				out[i] = &webhooks[i].ClientConfig
			}
			return out
		},
	}
}

func mutatingTarget(name string) bundleTarget {
	return bundleTarget{
		kind: "MutatingWebhookConfiguration", name: name, logKey: "mutatingWebhookConfiguration", optional: true,
		newObject: func() client.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
		newList:   func() client.ObjectList { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		clientConfigs: func(obj client.Object) []*admissionregistrationv1.WebhookClientConfig {
			webhooks := obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks
			out := make([]*admissionregistrationv1.WebhookClientConfig, len(webhooks))
			for i := range webhooks {
				out[i] = &webhooks[i].ClientConfig
			}
			return out
		},
	}
}

// NeedLeaderElection is false: every replica needs its own certificate.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start checks the certificates every CheckInterval until ctx ends, and
// each time one of the webhook configurations is created or changed.
// Errors are logged and retried at the next check.
func (r *Rotator) Start(ctx context.Context) error {
	if err := r.Ensure(ctx); err != nil {
		r.opts.Logger.Error(err, "serving certificate check failed; retrying", "certDir", r.opts.CertDir)
	}
	for _, t := range r.targets {
		go r.watchConfiguration(ctx, t)
	}
	t := r.opts.Clock.NewTicker(r.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if err := r.Ensure(ctx); err != nil {
				r.opts.Logger.Error(err, "serving certificate check failed; retrying", "certDir", r.opts.CertDir)
			}
		}
	}
}

// Ensure renews the CA and the serving certificate when they are missing,
// invalid or close to expiry, and makes sure the caBundle trusts the CA.
// A renewed CA is put into the caBundle before a certificate signed by it
// is written, so clients never meet a certificate they do not trust yet.
func (r *Rotator) Ensure(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Clock.Now()
	log := r.opts.Logger

	ca, err := r.currentCA(ctx, now)
	if err != nil {
		return err
	}

	serving, err := r.load(CertFile, KeyFile)
	if err == nil && r.servingUsable(serving, ca, now) {
		return r.syncBundle(ctx, ca, now)
	}
	if err := r.syncBundle(ctx, ca, now); err != nil {
		// Keep serving a certificate that still works until the new CA
		// is trusted; with nothing usable, write the new one anyway.
		if serving != nil && now.Before(serving.cert.NotAfter) {
			return err
		}
		log.Error(err, "caBundle not updated; writing the serving certificate anyway")
	}
	serving, err = newServing(ca, r.opts.DNSNames, now, r.opts.CertValidity)
	if err != nil {
		return fmt.Errorf("servingcert: %w", err)
	}
	if err := r.write(KeyFile, CertFile, serving); err != nil {
		return err
	}
	log.Info("issued webhook serving certificate", "dnsNames", r.opts.DNSNames, "notAfter", serving.cert.NotAfter)
	return nil
}

// caUsable: a CA with at least a serving certificate's validity left.
func (r *Rotator) caUsable(ca *keyPair, now time.Time) bool {
	return ca.cert.IsCA && ca.cert.NotAfter.Sub(now) >= r.opts.CertValidity
}

// currentCA returns the CA to sign with, creating or renewing it where it
// is kept: CertDir, or the CASecret shared by every replica.
func (r *Rotator) currentCA(ctx context.Context, now time.Time) (*keyPair, error) {
	if r.opts.CASecret == nil {
		ca, err := r.load(CACertFile, CAKeyFile)
		if err == nil && r.caUsable(ca, now) {
			return ca, nil
		}
		if ca, err = newCA("plugin-controller-webhook-ca", now, r.opts.CAValidity); err != nil {
			return nil, fmt.Errorf("servingcert: %w", err)
		}
		if err := r.write(CAKeyFile, CACertFile, ca); err != nil {
			return nil, err
		}
		r.opts.Logger.Info("created webhook CA", "notAfter", ca.cert.NotAfter)
		return ca, nil
	}
	return r.sharedCA(ctx, now)
}

// sharedCA loads the CA from the Secret, creating it when absent and
// replacing it when unusable. Replicas racing to do either agree on the
// API server's answer: the loser of a create (AlreadyExists) or of an
// update (Conflict) reads the winner's CA.
func (r *Rotator) sharedCA(ctx context.Context, now time.Time) (*keyPair, error) {
	key := *r.opts.CASecret
	for range 3 {
		var secret corev1.Secret
		err := r.opts.Client.Get(ctx, key, &secret)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("servingcert: reading the CA Secret %s: %w", key, err)
		}
		found := err == nil
		if found {
			ca, perr := parseKeyPair(secret.Data[CACertFile], secret.Data[CAKeyFile])
			if perr == nil && r.caUsable(ca, now) {
				return ca, nil
			}
			reason := "expires within CertValidity"
			if perr != nil {
				reason = perr.Error()
			}
			r.opts.Logger.Info("replacing the webhook CA in its Secret", "secret", key.String(), "reason", reason)
		}
		ca, err := newCA("plugin-controller-webhook-ca", now, r.opts.CAValidity)
		if err != nil {
			return nil, fmt.Errorf("servingcert: %w", err)
		}
		secret.Data = map[string][]byte{CACertFile: ca.certPEM, CAKeyFile: ca.keyPEM}
		if found {
			err = r.opts.Client.Update(ctx, &secret)
		} else {
			secret.ObjectMeta = metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
			secret.Type = corev1.SecretTypeOpaque
			err = r.opts.Client.Create(ctx, &secret)
		}
		switch {
		case err == nil:
			r.opts.Logger.Info("stored a new webhook CA", "secret", key.String(), "notAfter", ca.cert.NotAfter)
			return ca, nil
		case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
			continue // another replica was first: use its CA
		default:
			return nil, fmt.Errorf("servingcert: writing the CA Secret %s: %w", key, err)
		}
	}
	return nil, fmt.Errorf("servingcert: the CA Secret %s keeps changing under this replica", key)
}

// watchConfiguration runs Ensure each time the webhook configuration t
// is created or changed, so that a configuration applied after the
// controller started gets its caBundle at once, not at the next check.
// A closed or failed watch is opened again after a second.
func (r *Rotator) watchConfiguration(ctx context.Context, t bundleTarget) {
	for ctx.Err() == nil {
		w, err := r.opts.Client.Watch(ctx, t.newList(), client.MatchingFields{"metadata.name": t.name})
		if err != nil {
			r.opts.Logger.Error(err, "watching the webhook configuration; retrying", t.logKey, t.name)
		} else {
			for ev := range w.ResultChan() {
				if ev.Type != watch.Added && ev.Type != watch.Modified {
					continue
				}
				if obj, ok := ev.Object.(client.Object); !ok || obj.GetName() != t.name {
					continue // a client that ignores the field selector
				}
				if err := r.Ensure(ctx); err != nil {
					r.opts.Logger.Error(err, "serving certificate check after a webhook configuration change failed", t.logKey, t.name)
				}
			}
			w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-r.opts.Clock.After(time.Second):
		}
	}
}

// servingUsable: signed by ca, for the configured names, and with more
// than RenewBefore left.
func (r *Rotator) servingUsable(s, ca *keyPair, now time.Time) bool {
	if s.cert.NotAfter.Sub(now) <= r.opts.RenewBefore || !slices.Equal(s.cert.DNSNames, r.opts.DNSNames) {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	_, err := s.cert.Verify(x509.VerifyOptions{
		Roots: roots, CurrentTime: now, DNSName: r.opts.DNSNames[0],
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err == nil
}

// syncBundle puts ca into the caBundle of every webhook of each
// configuration, keeping earlier CAs that are still valid. Every
// configuration is tried; the errors are returned together.
func (r *Rotator) syncBundle(ctx context.Context, ca *keyPair, now time.Time) error {
	var errs []error
	for _, t := range r.targets {
		if err := r.syncTarget(ctx, t, ca, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Rotator) syncTarget(ctx context.Context, t bundleTarget, ca *keyPair, now time.Time) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := t.newObject()
		if err := r.opts.Client.Get(ctx, client.ObjectKey{Name: t.name}, obj); err != nil {
			return err
		}
		changed := false
		for _, cc := range t.clientConfigs(obj) {
			merged := mergeBundle(ca.cert, cc.CABundle, now, r.opts.MaxCAs)
			if !bytes.Equal(merged, cc.CABundle) {
				cc.CABundle, changed = merged, true
			}
		}
		if !changed {
			r.opts.Logger.V(1).Info("webhook caBundle already trusts the CA", t.logKey, t.name)
			return nil
		}
		if err := r.opts.Client.Update(ctx, obj); err != nil {
			return err
		}
		r.opts.Logger.Info("updated webhook caBundle", t.logKey, t.name)
		return nil
	})
	switch {
	case err == nil:
		return nil
	case t.optional && apierrors.IsNotFound(err):
		// Not installed (or deleted meanwhile): the watch sees it created.
		r.opts.Logger.V(1).Info("webhook configuration not installed; nothing to fill", t.logKey, t.name)
		return nil
	default:
		return fmt.Errorf("servingcert: updating caBundle of %s %s: %w", t.kind, t.name, err)
	}
}

func (r *Rotator) load(certName, keyName string) (*keyPair, error) {
	certPEM, err := os.ReadFile(filepath.Join(r.opts.CertDir, certName))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(r.opts.CertDir, keyName))
	if err != nil {
		return nil, err
	}
	return parseKeyPair(certPEM, keyPEM)
}

// write replaces the key, then the certificate, each atomically. A reader
// that sees the new key with the old certificate fails to pair them and
// keeps what it had until the certificate follows.
func (r *Rotator) write(keyName, certName string, kp *keyPair) error {
	if err := os.MkdirAll(r.opts.CertDir, 0o700); err != nil {
		return fmt.Errorf("servingcert: %w", err)
	}
	if err := writeAtomic(filepath.Join(r.opts.CertDir, keyName), kp.keyPEM, 0o600); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(r.opts.CertDir, certName), kp.certPEM, 0o644)
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("servingcert: writing %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, mode)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("servingcert: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("servingcert: writing %s: %w", path, err)
	}
	return nil
}
