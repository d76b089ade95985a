// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// The pipeline logs as api/hookresult says, as dispatch does: an ignored
// failure with Error and the *HookError, a hook that ran at V(1), with the
// same keys.
func TestLogsFollowTheHookResultConvention(t *testing.T) {
	root := socketRoot(t)
	var log lineLog
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{
		plugin("a", celHook(`Domain{Title: "a"}`), ignore(celHook(`Domain{Title: vmi.Labels["absent"]}`))),
	}, func(o *pipeline.Options) { o.Logger = log.logger(hookresult.HookLogV) })
	if _, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot); err != nil {
		t.Fatal(err)
	}
	ignored := log.matching(hookresult.IgnoredMessage)
	if len(ignored) != 1 {
		t.Fatalf("ignored failure lines %q, want 1", ignored)
	}
	for _, want := range []string{`"error"="plugin \"a\" launcher hook #1 (cel) at GuestDefinition: `, `"plugin"="a"`, `"hookIndex"=1`,
		`"hookPoint"="GuestDefinition"`, `"outcome"="ignored"`, `"duration"=`} {
		if !strings.Contains(ignored[0], want) {
			t.Errorf("ignored failure line %s lacks %s", ignored[0], want)
		}
	}
	if strings.Contains(ignored[0], `"level"=`) {
		t.Errorf("ignored failure logged at a verbosity: %s", ignored[0])
	}
	done := log.matching("launcher hook done")
	if len(done) != 1 {
		t.Fatalf("hook lines %q, want 1", done)
	}
	for _, want := range []string{`"level"=1`, `"plugin"="a"`, `"hookIndex"=0`, `"hookPoint"="GuestDefinition"`, `"outcome"="success"`, `"duration"=`} {
		if !strings.Contains(done[0], want) {
			t.Errorf("hook line %s lacks %s", done[0], want)
		}
	}
}
