package celenv

import (
	"context"
	"testing"
)

func BenchmarkConditionEval(b *testing.B) {
	e := newEnv(b, Options{})
	vmi := loadVMI(b, "testdata/vmi-tuned.yaml")
	for _, bc := range []struct{ name, expr string }{
		{"label in", `"example.com/tuning" in vmi.Labels`},
		{"label value", `vmi.Labels["example.com/tuning"] == "cpu"`},
		{"disks exists", `vmi.Spec.Domain.Devices.Disks.exists(d, d.Name == "data" && d.Disk.Bus == "scsi")`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := e.Condition(bc.expr)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := c.Eval(ctx, vmi); err != nil || !ok {
					b.Fatalf("Eval = %v, %v", ok, err)
				}
			}
		})
	}
}

// BenchmarkConditionCached is the cost of looking up an already compiled
// expression, what a caller pays when it does not keep the *Condition.
func BenchmarkConditionCached(b *testing.B) {
	e := newEnv(b, Options{})
	const expr = `vmi.Labels["example.com/tuning"] == "cpu"`
	if _, err := e.Condition(expr); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Condition(expr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDomainTransformApply applies GuestDefinition expressions to the
// domain KubeVirt generates (188 lines of XML). Applying again to the same
// domain is what happens when GuestDefinition runs more than once per boot.
func BenchmarkDomainTransformApply(b *testing.B) {
	path := sharedFixture(b, "domain_x86_64.xml")
	e := newEnv(b, Options{})
	vmi := loadVMI(b, "testdata/vmi-tuned.yaml")
	for _, bc := range []struct{ name, expr string }{
		{"guide example", `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`},
		{"append interface", `Domain{Devices: DomainDeviceList{Interfaces: domainSpec.Devices.Interfaces.filter(i, i.Model.Type != "e1000") + [DomainInterface{Model: DomainInterfaceModel{Type: "e1000"}}]}}`},
		{"conditional result", `vmi.Labels["example.com/tuning"] == "cpu" ? Domain{CPU: DomainCPU{Mode: "host-passthrough"}} : domainSpec`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr, err := e.DomainTransform(bc.expr)
			if err != nil {
				b.Fatal(err)
			}
			domain := loadDomain(b, path)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := tr.Apply(ctx, vmi, domain); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
