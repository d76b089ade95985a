// SPDX-License-Identifier: Apache-2.0

// Package crd checks the generated Plugin CRD on a real API server: the
// user guide's examples are accepted unchanged and every structural rule
// rejects bad Plugins with a message naming the field.
package crd

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/examples"
	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
)

var server *apiserver.Server

func TestMain(m *testing.M) {
	var err error
	server, err = apiserver.Start(apiserver.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := server.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

func object(t *testing.T, c examples.Case) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(c.YAML, &u.Object); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return u
}

func TestGuideExamplesAcceptedAndReadBackUnchanged(t *testing.T) {
	cases, err := examples.Valid()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 5 {
		t.Fatalf("want the 5 examples of the user guide, got %d", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ctx := t.Context()
			want := object(t, c)
			created := want.DeepCopy()
			if err := server.Client.Create(ctx, created); err != nil {
				t.Fatalf("rejected: %v", err)
			}
			t.Cleanup(func() { _ = server.Client.Delete(context.WithoutCancel(t.Context()), created) })
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			if err := server.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Object["spec"], want.Object["spec"]) {
				t.Fatalf("spec changed on the way through the API server:\nsent: %v\n got: %v", want.Object["spec"], got.Object["spec"])
			}
		})
	}
}

func TestInvalidPluginsRejectedNamingTheField(t *testing.T) {
	cases, err := examples.Invalid()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 15 {
		t.Fatalf("want at least 15 invalid cases, got %d", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			obj := object(t, c)
			err := server.Client.Create(t.Context(), obj)
			if err == nil {
				_ = server.Client.Delete(t.Context(), obj)
				t.Fatal("accepted by the API server")
			}
			msg := err.Error()
			if !strings.Contains(msg, c.Field) || !strings.Contains(msg, c.Message) {
				t.Fatalf("rejection does not name %q with %q:\n%s", c.Field, c.Message, msg)
			}
		})
	}
}
