// SPDX-License-Identifier: Apache-2.0

package hookresult_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kubevirt-plugins/framework/api/hookresult"
)

func TestSiteMessage(t *testing.T) {
	cause := errors.New("boom")
	for _, tc := range []struct {
		site hookresult.Site
		want string
	}{
		{hookresult.Site{Side: hookresult.Launcher, Plugin: "x", Index: 1, Detail: "sidecar", HookPoint: "PreBoot"},
			`plugin "x" launcher hook #1 (sidecar) at PreBoot: boom`},
		{hookresult.Site{Side: hookresult.Node, Plugin: "x", Index: 0, Detail: "socket /s", HookPoint: "PreVMStart"},
			`plugin "x" node hook #0 (socket /s) at PreVMStart: boom`},
		{hookresult.Site{Side: hookresult.Node, Plugin: "x", Index: 2, HookPoint: "OnVMStop"},
			`plugin "x" node hook #2 at OnVMStop: boom`},
		{hookresult.Site{Side: hookresult.Launcher, Plugin: "x", Scope: hookresult.ScopePlugin, Index: 3, HookPoint: "PreBoot"},
			`plugin "x" at PreBoot: boom`},
		{hookresult.Site{Side: hookresult.Launcher, Scope: hookresult.ScopeLegacyHooks, HookPoint: "GuestDefinition"},
			`legacy hook sidecars at GuestDefinition: boom`},
	} {
		if got := tc.site.Message(cause); got != tc.want {
			t.Errorf("Message = %q, want %q", got, tc.want)
		}
	}
}

func TestOutcomeFailed(t *testing.T) {
	for o, want := range map[hookresult.Outcome]bool{
		hookresult.Success: false, hookresult.Skipped: false, hookresult.Ignored: true, hookresult.Error: true,
	} {
		if o.Failed() != want {
			t.Errorf("%s.Failed() = %v, want %v", o, !want, want)
		}
	}
}

func TestScopeText(t *testing.T) {
	for _, s := range []hookresult.Scope{hookresult.ScopeHook, hookresult.ScopePlugin, hookresult.ScopeLegacyHooks} {
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back hookresult.Scope
		if err := json.Unmarshal(data, &back); err != nil || back != s {
			t.Errorf("%s: encoded %s, decoded %v (%v)", s, data, back, err)
		}
	}
	if _, err := json.Marshal(hookresult.Scope(9)); err == nil {
		t.Error("an unknown scope encoded")
	}
	var s hookresult.Scope
	if err := json.Unmarshal([]byte(`"nope"`), &s); err == nil {
		t.Error("an unknown scope name decoded")
	}
}
