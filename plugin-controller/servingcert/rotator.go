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
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The webhook configuration's caBundle is patched here; least privilege
// limits the write to the configuration deploy/controller installs.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=update;patch,resourceNames=plugin-controller

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
	// webhooks get the CA in their caBundle. Default: none is patched.
	WebhookConfigurationName string
	// Client reads and updates the webhook configuration; it should read
	// from the API server directly, not from a cache. Required when
	// WebhookConfigurationName is set.
	Client client.Client
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
	// Logger receives renewals and errors. Default: discard.
	Logger logr.Logger
}

// Rotator keeps the files in CertDir and the webhook caBundle current. It
// is a controller-runtime Runnable that runs on every replica (each one
// serves the webhook with the files in its own CertDir).
type Rotator struct {
	opts Options
}

// New checks opts and fills in the defaults.
func New(opts Options) (*Rotator, error) {
	if opts.CertDir == "" {
		return nil, errors.New("servingcert: CertDir is required")
	}
	if len(opts.DNSNames) == 0 {
		return nil, errors.New("servingcert: at least one DNS name is required")
	}
	if opts.WebhookConfigurationName != "" && opts.Client == nil {
		return nil, errors.New("servingcert: a Client is required to patch the webhook configuration")
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
	return &Rotator{opts: opts}, nil
}

// NeedLeaderElection is false: every replica needs its own certificate.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start checks the certificates every CheckInterval until ctx ends.
// Errors are logged and retried at the next check.
func (r *Rotator) Start(ctx context.Context) error {
	if err := r.Ensure(ctx); err != nil {
		r.opts.Logger.Error(err, "serving certificate check failed; retrying", "certDir", r.opts.CertDir)
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
	now := r.opts.Clock.Now()
	log := r.opts.Logger

	ca, err := r.load(CACertFile, CAKeyFile)
	if err != nil || !ca.cert.IsCA || ca.cert.NotAfter.Sub(now) < r.opts.CertValidity {
		if ca, err = newCA("plugin-controller-webhook-ca", now, r.opts.CAValidity); err != nil {
			return fmt.Errorf("servingcert: %w", err)
		}
		if err := r.write(CAKeyFile, CACertFile, ca); err != nil {
			return err
		}
		log.Info("created webhook CA", "notAfter", ca.cert.NotAfter)
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

// syncBundle puts ca into the caBundle of every webhook of the
// configuration, keeping earlier CAs that are still valid.
func (r *Rotator) syncBundle(ctx context.Context, ca *keyPair, now time.Time) error {
	name := r.opts.WebhookConfigurationName
	if name == "" {
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := r.opts.Client.Get(ctx, client.ObjectKey{Name: name}, &vwc); err != nil {
			return err
		}
		changed := false
		for i := range vwc.Webhooks {
			cc := &vwc.Webhooks[i].ClientConfig
			merged := mergeBundle(ca.cert, cc.CABundle, now, r.opts.MaxCAs)
			if !bytes.Equal(merged, cc.CABundle) {
				cc.CABundle, changed = merged, true
			}
		}
		if !changed {
			return nil
		}
		if err := r.opts.Client.Update(ctx, &vwc); err != nil {
			return err
		}
		r.opts.Logger.Info("updated webhook caBundle", "validatingWebhookConfiguration", name)
		return nil
	})
	if err != nil {
		return fmt.Errorf("servingcert: updating caBundle of ValidatingWebhookConfiguration %s: %w", name, err)
	}
	return nil
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
