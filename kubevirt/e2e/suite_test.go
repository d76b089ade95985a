// SPDX-License-Identifier: Apache-2.0

// The suite that runs KubeVirt's Plugins e2e (tests/plugin_test.go of the
// patched release) on its own: kubevirt/e2e.sh copies the two files into a
// package of their own in the build tree, so that only what they import is
// compiled, not the hundreds of files of KubeVirt's other functional tests.
// It sets up and cleans up as KubeVirt's own suite does (tests/testsuite).
package tests_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/client-go/rest"

	"kubevirt.io/client-go/kubecli"

	"kubevirt.io/kubevirt/tests/flags"
	"kubevirt.io/kubevirt/tests/libkubevirt/config"
	"kubevirt.io/kubevirt/tests/libnode"
	"kubevirt.io/kubevirt/tests/testsuite"
)

// The suite's clients may send 50 requests a second, bursts of 100,
// instead of client-go's default 5 and 10: KubeVirt's cleanup after each
// spec lists and deletes some 30 kinds of object in each of the four test
// namespaces, and at 5 a second the client's own rate limiter made that
// take 27.3 s after every spec, the same each time (specs of 51 to 130 s).
func init() {
	kubecli.RegisterRestConfigHook(func(c *rest.Config) {
		c.QPS, c.Burst = 50, 100
	})
}

func TestPlugins(t *testing.T) {
	flags.NormalizeFlags()
	testsuite.CalculateNamespaces()
	RegisterFailHandler(Fail)
	RunSpecs(t, "KubeVirt Plugins e2e")
}

var _ = SynchronizedBeforeSuite(testsuite.SynchronizedBeforeTestSetup, testsuite.BeforeTestSuiteSetup)

var _ = SynchronizedAfterSuite(testsuite.AfterTestSuiteCleanup, testsuite.SynchronizedAfterTestSuiteCleanup)

// After each spec, what KubeVirt's suite does: the test namespaces emptied,
// the nodes' test labels and taints removed, KubeVirt's configuration as
// the suite found it, KubeVirt ready again.
// Each part's time is printed: the cleanup is a large share of a spec.
var _ = AfterEach(func() {
	timed := func(what string, f func()) {
		start := time.Now()
		f()
		GinkgoWriter.Printf("cleanup: %s took %s\n", what, time.Since(start).Round(10*time.Millisecond))
	}
	timed("emptying the test namespaces", testsuite.CleanNamespaces)
	timed("cleaning the nodes", libnode.CleanNodes)
	timed("restoring KubeVirt's configuration", func() { config.UpdateKubeVirtConfigValueAndWait(testsuite.KubeVirtDefaultConfig) })
	timed("waiting for KubeVirt to be ready", testsuite.EnsureKubevirtReady)
})
