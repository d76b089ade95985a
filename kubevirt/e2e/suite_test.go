// SPDX-License-Identifier: Apache-2.0

// The suite that runs KubeVirt's Plugins e2e (tests/plugin_test.go of the
// patched release) on its own: kubevirt/e2e.sh copies the two files into a
// package of their own in the build tree, so that only what they import is
// compiled, not the hundreds of files of KubeVirt's other functional tests.
// It sets up and cleans up as KubeVirt's own suite does (tests/testsuite).
package tests_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/client-go/rest"

	"kubevirt.io/client-go/kubecli"

	"kubevirt.io/kubevirt/tests/flags"
	"kubevirt.io/kubevirt/tests/framework/kubevirt"
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
	timed("settling the test namespaces", settleTestNamespaces)
	timed("emptying the test namespaces", testsuite.CleanNamespaces)
	timed("cleaning the nodes", libnode.CleanNodes)
	timed("restoring KubeVirt's configuration", func() { config.UpdateKubeVirtConfigValueAndWait(testsuite.KubeVirtDefaultConfig) })
	timed("waiting for KubeVirt to be ready", testsuite.EnsureKubevirtReady)
})

// settleTestNamespaces does first what made KubeVirt's cleanup wait:
// CleanNamespaces deletes each test namespace's Events, and looks again 10 s
// later, until it finds none; the VMIs and virt-launcher Pods it has just
// deleted write new ones meanwhile, so after most specs it waited 21 s (two
// looks) and after some 42 s. Here the VMIs and their virt-launcher Pods are
// deleted, then the Events again each second until the VMIs and those Pods
// are gone and no Event has come for two looks in a row (at most half a
// minute in all): CleanNamespaces then finds none of the three. Other Pods
// are left to it (a spec's node hook DaemonSet, which the spec deletes after
// this, would only make new ones). What CleanNamespaces removes is unchanged.
func settleTestNamespaces() {
	c := kubevirt.Client()
	ctx := context.Background()
	zero := int64(0)
	deadline := time.Now().Add(30 * time.Second)
	launchers := metav1.ListOptions{LabelSelector: "kubevirt.io=virt-launcher"}
	for _, ns := range testsuite.TestNamespaces {
		if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); k8serrors.IsNotFound(err) {
			continue
		}
		Expect(c.RestClient().Delete().Namespace(ns).Resource("virtualmachineinstances").Do(ctx).Error()).To(Succeed())
		Expect(c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, launchers)).To(Succeed())
		quiet := 0
		for quiet < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Second)
			vmis, err := c.VirtualMachineInstance(ns).List(ctx, metav1.ListOptions{Limit: 1})
			Expect(err).ToNot(HaveOccurred())
			pods, err := c.CoreV1().Pods(ns).List(ctx, launchers)
			Expect(err).ToNot(HaveOccurred())
			events, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{Limit: 1})
			Expect(err).ToNot(HaveOccurred())
			if len(events.Items) > 0 {
				Expect(c.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
			}
			if len(vmis.Items)+len(pods.Items)+len(events.Items) == 0 {
				quiet++
			} else {
				quiet = 0
			}
		}
	}
}
