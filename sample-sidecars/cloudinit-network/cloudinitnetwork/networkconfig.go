// SPDX-License-Identifier: Apache-2.0

package cloudinitnetwork

import (
	"fmt"
	"net/netip"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Prefixes applied to addresses the network status gives without one.
type Prefixes struct {
	// IPv4: default 24.
	IPv4 int
	// IPv6: default 64.
	IPv6 int
}

func (p Prefixes) withDefaults() Prefixes {
	if p.IPv4 == 0 {
		p.IPv4 = 24
	}
	if p.IPv6 == 0 {
		p.IPv6 = 64
	}
	return p
}

// Ethernet is one ethernets entry of a version 2 network-config.
type Ethernet struct {
	MAC         string
	Addresses   []string
	Gateway4    string
	Gateway6    string
	Nameservers []string
	Search      []string
}

// EthernetsFor maps the VMI's Multus networks to ethernets entries keyed by
// VMI network name. A VMI without networks in its spec (a bare VMI) gets one
// entry per non-default network status with a MAC and addresses, keyed by
// the Pod interface name.
func EthernetsFor(vmi *kubevirtv1.VirtualMachineInstance, statuses []NetworkStatus, prefixes Prefixes) (map[string]Ethernet, error) {
	prefixes = prefixes.withDefaults()
	out := map[string]Ethernet{}
	if len(vmi.Spec.Networks) == 0 {
		for _, st := range statuses {
			if st.Default || st.MAC == "" || len(st.IPs) == 0 || st.Interface == "" {
				continue
			}
			e, err := ethernet(st, st.MAC, prefixes)
			if err != nil {
				return nil, err
			}
			out[st.Interface] = e
		}
		return out, nil
	}
	macs := map[string]string{}
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		macs[iface.Name] = iface.MacAddress
	}
	for _, n := range vmi.Spec.Networks {
		if n.Multus == nil {
			continue
		}
		st, ok := findStatus(statuses, vmi.Namespace, n.Multus.NetworkName)
		if !ok || len(st.IPs) == 0 {
			continue
		}
		mac := macs[n.Name]
		if mac == "" {
			mac = st.MAC
		}
		if mac == "" {
			return nil, fmt.Errorf("network %s: no MAC address in the VMI interface or the network status", n.Name)
		}
		e, err := ethernet(st, mac, prefixes)
		if err != nil {
			return nil, fmt.Errorf("network %s: %w", n.Name, err)
		}
		out[n.Name] = e
	}
	return out, nil
}

func findStatus(statuses []NetworkStatus, namespace, networkName string) (NetworkStatus, bool) {
	for _, st := range statuses {
		if st.Name == networkName || st.Name == namespace+"/"+networkName {
			return st, true
		}
	}
	return NetworkStatus{}, false
}

func ethernet(st NetworkStatus, mac string, prefixes Prefixes) (Ethernet, error) {
	e := Ethernet{MAC: strings.ToLower(mac)}
	for _, ip := range st.IPs {
		addr, err := withPrefix(ip, prefixes)
		if err != nil {
			return Ethernet{}, err
		}
		e.Addresses = append(e.Addresses, addr)
	}
	if st.Default {
		for _, gw := range st.Gateway {
			a, err := netip.ParseAddr(gw)
			if err != nil {
				return Ethernet{}, fmt.Errorf("gateway %q: %w", gw, err)
			}
			if a.Is4() && e.Gateway4 == "" {
				e.Gateway4 = a.String()
			} else if a.Is6() && e.Gateway6 == "" {
				e.Gateway6 = a.String()
			}
		}
	}
	if st.DNS != nil {
		e.Nameservers = st.DNS.Nameservers
		e.Search = st.DNS.Search
		if len(e.Search) == 0 && st.DNS.Domain != "" {
			e.Search = []string{st.DNS.Domain}
		}
	}
	return e, nil
}

func withPrefix(ip string, prefixes Prefixes) (string, error) {
	if p, err := netip.ParsePrefix(ip); err == nil {
		return p.String(), nil
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", ip, err)
	}
	bits := prefixes.IPv4
	if a.Is6() {
		bits = prefixes.IPv6
	}
	return netip.PrefixFrom(a, bits).String(), nil
}

// toMap renders the entry as network-config version 2.
func (e Ethernet) toMap() map[string]any {
	m := map[string]any{"match": map[string]any{"macaddress": e.MAC}}
	if len(e.Addresses) > 0 {
		m["addresses"] = e.Addresses
	}
	var routes []any
	if e.Gateway4 != "" {
		routes = append(routes, map[string]any{"to": "0.0.0.0/0", "via": e.Gateway4})
	}
	if e.Gateway6 != "" {
		routes = append(routes, map[string]any{"to": "::/0", "via": e.Gateway6})
	}
	if len(routes) > 0 {
		m["routes"] = routes
	}
	if len(e.Nameservers) > 0 || len(e.Search) > 0 {
		ns := map[string]any{}
		if len(e.Nameservers) > 0 {
			ns["addresses"] = e.Nameservers
		}
		if len(e.Search) > 0 {
			ns["search"] = e.Search
		}
		m["nameservers"] = ns
	}
	return m
}

// MergeNetworkConfig adds the ethernets entries to an existing version 2
// network-config (nil or empty for none) and renders the result. Keys of
// the existing config other than the replaced entries are kept. The output
// has sorted keys, so equal configurations render to equal bytes.
func MergeNetworkConfig(existing []byte, ethernets map[string]Ethernet) ([]byte, error) {
	cfg := map[string]any{}
	if len(strings.TrimSpace(string(existing))) > 0 {
		if err := yaml.Unmarshal(existing, &cfg); err != nil {
			return nil, fmt.Errorf("parse existing network-config: %w", err)
		}
		if cfg == nil {
			cfg = map[string]any{}
		}
		// A network-config may be wrapped in a top-level "network" key.
		if inner, ok := cfg["network"].(map[string]any); ok && len(cfg) == 1 {
			cfg = inner
		}
		if v, ok := cfg["version"]; ok && fmt.Sprint(v) != "2" {
			return nil, fmt.Errorf("existing network-config has version %v; only version 2 can be merged", v)
		}
	}
	cfg["version"] = 2
	eths, _ := cfg["ethernets"].(map[string]any)
	if eths == nil {
		eths = map[string]any{}
	}
	for name, e := range ethernets {
		eths[name] = e.toMap()
	}
	cfg["ethernets"] = eths
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("render network-config: %w", err)
	}
	return out, nil
}
