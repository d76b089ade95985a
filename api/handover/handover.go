// SPDX-License-Identifier: Apache-2.0

// Package handover is the wire format of the Plugins virt-handler hands a
// virt-launcher: in KubeVirt, the bytes of VirtualMachineOptions.PluginsJson
// on each sync. handler-runtime's launcherplugins writes it,
// launcher-runtime's kubevirthost reads it.
//
// The data is a JSON array with one object per Plugin, which holds the
// Plugin under the key "plugin":
//
//	[{"plugin": {"apiVersion": "plugin.kubevirt.io/v1alpha1", "kind": "Plugin", "metadata": {...}, "spec": {...}}}, ...]
//
// The envelope is for the launchers of KubeVirt's in-tree alpha-1 Plugins,
// which keep running their VMs while a cluster moves to the framework (until
// KubeVirt's workload update migrates them, or for good without one): such a
// launcher reads the same field as a JSON array of alpha-1 Plugins, and
// finds in each element a Plugin with no condition and no hooks. It runs
// none, and its syncs go on, where a format it cannot read would fail every
// one of them. A launcher of the framework reads an alpha-1 array (from a
// virt-handler older than itself) as an error naming the element.
package handover

import (
	"bytes"
	"encoding/json"
	"fmt"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// entry is one element of the array.
type entry struct {
	Plugin *pluginv1alpha1.Plugin `json:"plugin"`
}

// Encode writes plugins, in their order.
func Encode(plugins []pluginv1alpha1.Plugin) ([]byte, error) {
	entries := make([]entry, len(plugins))
	for i := range plugins {
		entries[i].Plugin = &plugins[i]
	}
	data, err := json.Marshal(entries)
	if err != nil {
		return nil, fmt.Errorf("encoding the Plugins for the launcher: %w", err)
	}
	return data, nil
}

// Decode reads what Encode wrote. Empty data (or only white space) is no
// Plugin. Fields a Plugin does not have are ignored, so that a launcher
// reads what a newer virt-handler hands it during an upgrade; an element
// that holds no Plugin under "plugin", or one without a name, is an error.
func Decode(data []byte) ([]pluginv1alpha1.Plugin, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var entries []entry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("reading the Plugins virt-handler handed over: %w", err)
	}
	plugins := make([]pluginv1alpha1.Plugin, 0, len(entries))
	for i, e := range entries {
		switch {
		case e.Plugin == nil:
			return nil, fmt.Errorf("reading the Plugins virt-handler handed over: element %d holds no \"plugin\" (a virt-handler of KubeVirt's alpha-1 Plugins hands Plugins without it)", i)
		case e.Plugin.Name == "":
			return nil, fmt.Errorf("reading the Plugins virt-handler handed over: element %d: the Plugin has no metadata.name", i)
		}
		plugins = append(plugins, *e.Plugin)
	}
	return plugins, nil
}
