// SPDX-License-Identifier: Apache-2.0

package servingcert_test

import (
	"context"
	"fmt"
	"os"

	"github.com/kubevirt-plugins/framework/plugin-controller/servingcert"
)

// A webhook server's certificate directory filled without a certificate
// manager. Add the Rotator to the manager (mgr.Add) to keep it renewed;
// set WebhookConfigurationName and Client to publish the CA.
func ExampleRotator_Ensure() {
	dir, err := os.MkdirTemp("", "certs")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	r, err := servingcert.New(servingcert.Options{
		CertDir:  dir,
		DNSNames: []string{"plugin-controller-webhook.kubevirt.svc"},
	})
	if err != nil {
		panic(err)
	}
	if err := r.Ensure(context.Background()); err != nil {
		panic(err)
	}
	for _, f := range []string{servingcert.CertFile, servingcert.KeyFile, servingcert.CACertFile} {
		_, err := os.Stat(dir + "/" + f)
		fmt.Println(f, err == nil)
	}
	// Output:
	// tls.crt true
	// tls.key true
	// ca.crt true
}
