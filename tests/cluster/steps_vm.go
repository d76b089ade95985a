// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

func smbiosEntry(d *libvirtxml.Domain, name string) string {
	for _, si := range d.SysInfo {
		if si.SMBIOS == nil || si.SMBIOS.System == nil {
			continue
		}
		for _, e := range si.SMBIOS.System.Entry {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}

func watchdogAction(d *libvirtxml.Domain) string {
	if d.Devices == nil {
		return ""
	}
	for _, w := range d.Devices.Watchdogs {
		if w.Model == "i6300esb" {
			return w.Action
		}
	}
	return ""
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, st := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		n += st.RestartCount
	}
	return n
}
