// SPDX-License-Identifier: Apache-2.0

package syncer

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// A deployment's manager validates controller names; only a test that asks
// for it lets the names repeat.
func TestControllerNamesAreValidatedUnlessATestAsks(t *testing.T) {
	scheme := runtime.NewScheme()
	o, err := managerOptions(scheme, withDefaults(Options{}), newManagerConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	if v := o.Controller.SkipNameValidation; v != nil && *v {
		t.Fatal("the manager skips controller name validation without WithoutControllerNameValidation")
	}
	o, err = managerOptions(scheme, withDefaults(Options{}), newManagerConfig([]ManagerOption{WithoutControllerNameValidation()}))
	if err != nil {
		t.Fatal(err)
	}
	if v := o.Controller.SkipNameValidation; v == nil || !*v {
		t.Fatal("WithoutControllerNameValidation does not skip controller name validation")
	}
}

func TestFullPodWatchOnlyWhenAsked(t *testing.T) {
	if newManagerConfig(nil).fullPodWatch {
		t.Fatal("a manager without options watches whole Pods")
	}
	if !newManagerConfig([]ManagerOption{WithFullPodWatch()}).fullPodWatch {
		t.Fatal("WithFullPodWatch does not ask for a full Pod watch")
	}
}
