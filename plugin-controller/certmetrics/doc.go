// SPDX-License-Identifier: Apache-2.0

// Package certmetrics exposes when the webhook serving certificate of a
// plugin-controller replica expires:
//
//	kubevirt_plugins_plugin_controller_webhook_certificate_expiration_timestamp_seconds
//
// a gauge, the NotAfter of the first certificate in the file the webhook
// server serves (tls.crt in --webhook-cert-dir), in seconds since the Unix
// epoch. The file is read at each scrape, so the gauge follows a renewal,
// whoever writes it: the self-signed rotator of servingcert, or
// cert-manager in the external mode. The replica is told apart by the
// scrape's own labels (namespace, pod).
//
// A file that cannot be read or holds no certificate gives no sample
// rather than a wrong one: the scrape goes on with the replica's other
// series, and the webhook server, which reads the same file, is what fails
// (KubeVirtPluginControllerDown and KubeVirtPluginSidecarInjectorUnreachable
// say so). The alert KubeVirtPluginControllerCertificateExpiringSoon of
// deploy/monitoring reads this gauge.
package certmetrics
