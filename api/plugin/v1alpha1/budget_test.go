// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func sidecarHook(timeout time.Duration, points ...LauncherHookPoint) LauncherHook {
	h := LauncherHook{Sidecar: &SidecarHook{SocketPath: "/var/run/kubevirt-plugin/p/hook.sock", PermittedHooks: points}}
	if timeout > 0 {
		h.Timeout = &metav1.Duration{Duration: timeout}
	}
	return h
}

func TestLauncherHookBudget(t *testing.T) {
	plugins := []Plugin{
		{Spec: PluginSpec{LauncherHooks: []LauncherHook{
			{CEL: &CELHook{HookPoint: GuestDefinition, Expression: "Domain{}"}},
			sidecarHook(5*time.Second, GuestDefinition, PreBoot),
		}}},
		{Spec: PluginSpec{LauncherHooks: []LauncherHook{sidecarHook(0, GuestDefinition)}}},
		{Spec: PluginSpec{LauncherHooks: []LauncherHook{sidecarHook(time.Second, PreMigrationSource)}}},
	}
	for _, tc := range []struct {
		name   string
		points []LauncherHookPoint
		want   time.Duration
	}{
		{"one socket wait per point plus every sidecar's timeout, the default where unset",
			[]LauncherHookPoint{GuestDefinition}, SocketWaitBudget + 5*time.Second + DefaultTimeout},
		{"points add up", []LauncherHookPoint{GuestDefinition, PreBoot},
			SocketWaitBudget + 5*time.Second + DefaultTimeout + SocketWaitBudget + 5*time.Second},
		{"a point no sidecar serves costs nothing", []LauncherHookPoint{PreBoot, PreMigrationSource},
			SocketWaitBudget + 5*time.Second + SocketWaitBudget + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LauncherHookBudget(plugins, tc.points...); got != tc.want {
				t.Errorf("LauncherHookBudget = %s, want %s", got, tc.want)
			}
		})
	}
	if got := LauncherHookBudget(nil, GuestDefinition, PreBoot); got != 0 {
		t.Errorf("no Plugin: LauncherHookBudget = %s, want 0", got)
	}
	cel := []Plugin{{Spec: PluginSpec{LauncherHooks: []LauncherHook{{CEL: &CELHook{HookPoint: GuestDefinition, Expression: "Domain{}"}}}}}}
	if got := LauncherHookBudget(cel, GuestDefinition); got != 0 {
		t.Errorf("CEL hooks only: LauncherHookBudget = %s, want 0", got)
	}
}
