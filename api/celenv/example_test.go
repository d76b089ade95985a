package celenv_test

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/celenv"
)

// A plugin's condition decides whether its GuestDefinition expression runs;
// the expression then changes only the fields it writes.
func Example() {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		panic(err)
	}
	// Compile once, for instance when the Plugin is admitted or first seen;
	// later calls with the same text return the cached compilation.
	cond, err := env.Condition(`vmi.Labels["example.com/tuning"] == "cpu"`)
	if err != nil {
		panic(err)
	}
	transform, err := env.DomainTransform(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`)
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: "vm1", Namespace: "default", Labels: map[string]string{"example.com/tuning": "cpu"},
	}}
	domain := &libvirtxml.Domain{Type: "kvm", Name: "default_vm1", CPU: &libvirtxml.DomainCPU{Check: "partial"}}

	applies, err := cond.Eval(ctx, vmi)
	if err != nil {
		panic(err)
	}
	if applies {
		if err := transform.Apply(ctx, vmi, domain); err != nil {
			panic(err)
		}
	}
	out, err := domain.Marshal()
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// <domain type="kvm">
	//   <name>default_vm1</name>
	//   <cpu mode="host-passthrough" check="partial"></cpu>
	// </domain>
}

// A rejected expression says why, for an admission webhook to report.
func ExampleCompileError() {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		panic(err)
	}
	_, err = env.DomainTransform(`Domain{CPUX: DomainCPU{Mode: "host-passthrough"}}`)
	var ce *celenv.CompileError
	if errors.As(err, &ce) {
		fmt.Println(ce.Reason)
		fmt.Println(ce.Message)
	}
	// Output:
	// type
	// ERROR: <input>:1:12: undefined field 'CPUX'
	//  | Domain{CPUX: DomainCPU{Mode: "host-passthrough"}}
	//  | ...........^
}
