// SPDX-License-Identifier: Apache-2.0

package cluster

const (
	vmNamespace = "default"
	// syncedLabel is under the label-syncer's configured prefix
	// (deploy/label-syncer: --additional-launcher-labels-sync=ops.example.com/*).
	syncedLabel = "ops.example.com/tier"
	// networkStatusAnnotation is where Multus publishes a Pod's networks;
	// cloudinit-network reads it.
	networkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
	redMAC                  = "02:ab:00:00:00:01"
)

// samples are the sample plugins applied, each with the sidecar its
// sidecar.yaml describes, which the chosen injection path adds to launcher
// Pods.
var samples = []string{"cloudinit-network", "migration-tuner", "smbios-watchdog"}

// templateLabels are the labels of a VM template that every sample and
// cel-tuning select, with their settings and a label the label-syncer syncs.
func templateLabels() map[string]string {
	return map[string]string{
		"plugins.example.com/cel-tuning":        "enabled",
		"plugins.example.com/smbios-watchdog":   "enabled",
		"plugins.example.com/cloudinit-network": "enabled",
		"plugins.example.com/migration-tuner":   "enabled",
		"smbios.example.com/manufacturer":       "Example",
		"smbios.example.com/product":            "Edge-1",
		"watchdog.example.com/action":           "reset",
		"migration.example.com/parallel":        "2",
		syncedLabel:                             "silver",
	}
}
