// SPDX-License-Identifier: Apache-2.0

// Package servingcert keeps a webhook server supplied with a serving
// certificate when no certificate manager (such as cert-manager) provides
// one. It creates a self-signed CA and a serving certificate signed by it,
// writes them to the directory the webhook server reads (tls.crt, tls.key),
// puts the CA into the caBundle of a ValidatingWebhookConfiguration and,
// optionally, of a MutatingWebhookConfiguration served by the same server,
// and renews the certificate, and the CA, before they expire.
//
// With Options.CASecret every replica signs its own serving certificate
// with one CA kept in a Secret (created by whichever replica comes first),
// so a single caBundle trusts them all and replicas do not take turns
// rewriting it. The configurations are watched: one created after the
// controller started gets its caBundle at once. The mutating one may be
// missing (it is installed on its own); that is not an error.
//
// A renewed CA is added to the caBundle next to the previous one, which
// stays trusted until it expires: replicas still serving a certificate
// signed by the previous CA keep working during a rollout or rotation.
package servingcert
