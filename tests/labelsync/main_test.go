// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
)

// server is the API server every test and benchmark of the package uses.
var server *apiserver.Server

func TestMain(m *testing.M) {
	s, err := apiserver.Start(apiserver.Options{WithKubeVirtCRDs: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the API server: %v\n", err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	syncerBinary.Remove()
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the API server: %v\n", err)
	}
	os.Exit(code)
}
