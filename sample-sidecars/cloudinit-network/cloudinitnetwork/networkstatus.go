// SPDX-License-Identifier: Apache-2.0

package cloudinitnetwork

import (
	"encoding/json"
	"fmt"
)

// NetworkStatusAnnotation is the Pod annotation Multus writes.
const NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"

// NetworkStatus is one element of the network-status annotation.
type NetworkStatus struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface,omitempty"`
	IPs       []string `json:"ips,omitempty"`
	MAC       string   `json:"mac,omitempty"`
	Default   bool     `json:"default,omitempty"`
	DNS       *DNS     `json:"dns,omitempty"`
	Gateway   []string `json:"gateway,omitempty"`
}

// DNS is the DNS part of a NetworkStatus.
type DNS struct {
	Nameservers []string `json:"nameservers,omitempty"`
	Domain      string   `json:"domain,omitempty"`
	Search      []string `json:"search,omitempty"`
}

// ParseNetworkStatus decodes the annotation's value.
func ParseNetworkStatus(value []byte) ([]NetworkStatus, error) {
	var out []NetworkStatus
	if err := json.Unmarshal(value, &out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", NetworkStatusAnnotation, err)
	}
	return out, nil
}
