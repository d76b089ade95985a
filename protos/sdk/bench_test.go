// SPDX-License-Identifier: Apache-2.0

package sdk_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// BenchmarkGuestDefinitionOverSocket measures one GuestDefinition call
// through the SDK on a real socket with a domain KubeVirt generates:
// decoding the VMI and the domain, the interceptors, and encoding the
// returned domain.
func BenchmarkGuestDefinitionOverSocket(b *testing.B) {
	fixture := filepath.Join("..", "..", "..", "shared", "fixtures", "domain_x86_64.xml")
	domainXML, err := os.ReadFile(fixture)
	if err != nil {
		b.Skipf("fixture %s is absent (it lives outside the repository): %v", fixture, err)
	}
	handler := guestDefFunc(func(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
		r.Domain.Description = "benchmark"
		return r.Domain, nil
	})
	conn, err := sdktest.Dial(sdktest.StartLauncher(b, "bench", handler))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	cl := hooksv1alpha1.NewLauncherHookServiceClient(conn)
	req := &hooksv1alpha1.GuestDefinitionRequest{
		DomainXml:      domainXML,
		Vmi:            sdktest.VMIJSON("default", "vm1", map[string]string{"app": "bench"}, nil),
		SidecarContext: &hooksv1alpha1.SidecarContext{InvocationContext: string(sdk.InvocationBoot)},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := cl.GuestDefinition(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
