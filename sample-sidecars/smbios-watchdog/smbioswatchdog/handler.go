// SPDX-License-Identifier: Apache-2.0

package smbioswatchdog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/protos/sdk"
)

const (
	// DefaultSMBIOSLabelPrefix prefixes the labels that set SMBIOS system
	// entries; the rest of the key is the entry name.
	DefaultSMBIOSLabelPrefix = "smbios.example.com/"
	// DefaultWatchdogLabel holds the watchdog action.
	DefaultWatchdogLabel = "watchdog.example.com/action"
	// WatchdogModel is the emulated watchdog device.
	WatchdogModel = "i6300esb"
)

// systemEntries are the SMBIOS type 1 (system) fields libvirt accepts.
var systemEntries = []string{"manufacturer", "product", "version", "serial", "sku", "family"}

// watchdogActions are the actions libvirt accepts for a watchdog.
var watchdogActions = []string{"reset", "shutdown", "poweroff", "pause", "none", "dump", "inject-nmi"}

// Options configure a Handler.
type Options struct {
	// SMBIOSLabelPrefix: default DefaultSMBIOSLabelPrefix.
	SMBIOSLabelPrefix string
	// WatchdogLabel: default DefaultWatchdogLabel.
	WatchdogLabel string
}

// Handler implements sdk.GuestDefinitionHandler.
type Handler struct {
	opts Options
}

var _ sdk.GuestDefinitionHandler = (*Handler)(nil)

// New returns a Handler.
func New(opts Options) *Handler {
	if opts.SMBIOSLabelPrefix == "" {
		opts.SMBIOSLabelPrefix = DefaultSMBIOSLabelPrefix
	}
	if opts.WatchdogLabel == "" {
		opts.WatchdogLabel = DefaultWatchdogLabel
	}
	return &Handler{opts: opts}
}

// GuestDefinition applies the labels of req.VMI to req.Domain.
func (h *Handler) GuestDefinition(_ context.Context, req *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	entries, action, err := h.fromLabels(req.VMI.Labels)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "VMI %s/%s: %v", req.VMI.Namespace, req.VMI.Name, err)
	}
	dom := req.Domain
	if len(entries) > 0 {
		setSystemEntries(dom, entries)
	}
	if action != "" {
		setWatchdog(dom, action)
	}
	return dom, nil
}

type entry struct{ name, value string }

func (h *Handler) fromLabels(labels map[string]string) ([]entry, string, error) {
	var entries []entry
	for _, name := range systemEntries {
		if v, ok := labels[h.opts.SMBIOSLabelPrefix+name]; ok {
			entries = append(entries, entry{name, v})
		}
	}
	for k := range labels {
		if name, ok := strings.CutPrefix(k, h.opts.SMBIOSLabelPrefix); ok && !slices.Contains(systemEntries, name) {
			return nil, "", fmt.Errorf("label %s: %q is not an SMBIOS system entry (want one of %v)", k, name, systemEntries)
		}
	}
	action, ok := labels[h.opts.WatchdogLabel]
	if ok && !slices.Contains(watchdogActions, action) {
		return nil, "", fmt.Errorf("label %s: unknown watchdog action %q (want one of %v)", h.opts.WatchdogLabel, action, watchdogActions)
	}
	return entries, action, nil
}

// setSystemEntries sets entries in the first SMBIOS sysinfo block (adding
// one when the domain has none), overwriting entries of the same name, and
// points the firmware at it.
func setSystemEntries(dom *libvirtxml.Domain, entries []entry) {
	var smbios *libvirtxml.DomainSysInfoSMBIOS
	for i := range dom.SysInfo {
		if dom.SysInfo[i].SMBIOS != nil {
			smbios = dom.SysInfo[i].SMBIOS
			break
		}
	}
	if smbios == nil {
		smbios = &libvirtxml.DomainSysInfoSMBIOS{}
		dom.SysInfo = append(dom.SysInfo, libvirtxml.DomainSysInfo{SMBIOS: smbios})
	}
	if smbios.System == nil {
		smbios.System = &libvirtxml.DomainSysInfoSystem{}
	}
	for _, e := range entries {
		i := slices.IndexFunc(smbios.System.Entry, func(x libvirtxml.DomainSysInfoEntry) bool { return x.Name == e.name })
		if i < 0 {
			smbios.System.Entry = append(smbios.System.Entry, libvirtxml.DomainSysInfoEntry{Name: e.name, Value: e.value})
			continue
		}
		smbios.System.Entry[i].Value = e.value
	}
	if dom.OS == nil {
		dom.OS = &libvirtxml.DomainOS{}
	}
	dom.OS.SMBios = &libvirtxml.DomainSMBios{Mode: "sysinfo"}
}

// setWatchdog makes the domain's i6300esb watchdog use action, adding the
// device when missing. Watchdogs of other models are left alone.
func setWatchdog(dom *libvirtxml.Domain, action string) {
	if dom.Devices == nil {
		dom.Devices = &libvirtxml.DomainDeviceList{}
	}
	for i := range dom.Devices.Watchdogs {
		if dom.Devices.Watchdogs[i].Model == WatchdogModel {
			dom.Devices.Watchdogs[i].Action = action
			return
		}
	}
	dom.Devices.Watchdogs = append(dom.Devices.Watchdogs, libvirtxml.DomainWatchdog{Model: WatchdogModel, Action: action})
}
