// SPDX-License-Identifier: Apache-2.0

// Package celenv is the one CEL environment of the framework: the launcher,
// the handler, the plugin controller and kvpctl compile and evaluate Plugin
// conditions and GuestDefinition expressions through it, so an expression
// admitted by the controller behaves the same in every VMI.
//
// # Variables
//
// A condition (Env.Condition) sees one variable, vmi, a
// *kubevirtv1.VirtualMachineInstance, and must evaluate to bool. A
// GuestDefinition expression (Env.DomainTransform) sees vmi and domainSpec, the
// *libvirtxml.Domain generated so far, and must return a libvirtxml Domain.
//
// # Go field names
//
// Fields are read by their Go names, not their JSON or XML names:
// vmi.Spec.Domain.CPU.Cores, domainSpec.Devices.Disks[0].Target.Dev. Fields
// of embedded structs are reachable directly, as in Go: vmi.Name, vmi.Labels
// (from the embedded metav1.ObjectMeta), as well as through the embedded
// struct, vmi.ObjectMeta.Name. Structs are built with libvirtxml type names,
// unqualified: Domain{CPU: DomainCPU{Mode: "host-passthrough"}}; a pointer
// field (Domain.CPU is a *DomainCPU) takes the struct value itself.
//
// libvirtxml counts and sizes are unsigned: write them with the u suffix
// (DomainVCPU{Value: 4u}). Ordering comparisons between int and uint work
// (vmi.Spec.Domain.CPU.Cores > 2), equality needs matching types (== 2u).
// Only the CEL standard library is enabled, and in GuestDefinition
// expressions optional values (optional.of, optional.none, ?F: in literals).
//
// # Absent elements, has() and reads through them
//
// CEL has no null for Go pointers. Reading an element the input does not
// have yields an empty one, and reading through it yields zero values: on a
// domain without <numatune>, domainSpec.NUMATune.Memory.Mode is "", and on a
// disk without <boot>, d.Boot.Order is 0u. A nil pointer to a scalar reads as
// its zero value too (d.Driver.IOThread is 0u without iothread=).
//
// has(x.F) is true when F is set: a pointer (element or attribute) that is
// present, even empty (has(domainSpec.Features.ACPI) with <acpi/>), a list or
// map that is not empty, a scalar that is not its zero value. On an absent
// element every has() is false: has(domainSpec.NUMATune.Memory) without
// <numatune>. Use has() to tell an absent attribute from a present zero.
//
// # Merging the result
//
// DomainTransform.Merge returns the domain with the result merged into it;
// the domain it is given is never modified. One rule decides what is written,
// wherever a value sits (top level, nested, chosen by ?:, inside a list
// literal or a map() body), and is applied at run time to the value the
// expression actually produced:
//
//   - A struct built by a struct literal writes exactly the fields the literal
//     initialises, each one even when its value is the zero value (a zero
//     value written on purpose is written): Domain{UUID: ""} clears the
//     UUID, Domain{Title: domainSpec.Name} sets the title and keeps
//     everything else.
//   - A field initialised with another struct literal is merged the same way,
//     recursively, into the element already there, or into a new one when
//     there is none: Domain{CPU: DomainCPU{Mode: "host-passthrough"}} keeps
//     the CPU's topology and check. A literal is a literal however it was
//     reached: Domain{CPU: cond ? DomainCPU{Mode: "host-passthrough"} :
//     domainSpec.CPU} merges like the direct literal when cond holds, and
//     cond ? Domain{Title: ""} : domainSpec clears the title like
//     Domain{Title: ""} does.
//   - A literal always makes its element present, even an empty one:
//     DomainFeatureList{PAE: DomainFeature{}} adds <pae/>.
//   - Any other value (read from domainSpec or vmi, a constant, a list)
//     replaces the field as a whole. A value read back unchanged keeps the
//     input's presence: Domain{NUMATune: domainSpec.NUMATune} leaves an
//     absent <numatune> absent, DomainFeatureList{ACPI:
//     domainSpec.Features.ACPI} keeps a present <acpi/>, and
//     DomainDisk{..., Boot: d.Boot} adds no <boot> to a disk that has none.
//     Attributes alike: a read of an absent attribute that reaches a field's
//     initialiser unchanged leaves the field absent, wherever the value went
//     on the way: IOThread: d.Driver.IOThread, a branch of ?: there, a list
//     element taken back by an index ([d.Driver.IOThread][0]), a map() or
//     filter() result, a list concatenation. This is tracked at run time:
//     the read yields a zero value that remembers the attribute was absent.
//     A value computed from reads (d.Boot.Order + 1u, a comparison, a
//     function's result, a map() variable) is a plain value and is written:
//     IOThread: [d.Driver.IOThread].map(x, x)[0] writes iothread="0" on a
//     disk without one.
//   - Lists are replaced wholesale, never merged element by element, and a
//     list element starts from nothing: DomainDisk{...} in a list or a map()
//     body is a new disk holding what the literal writes (merged into an
//     empty disk by the rules above). To edit every device, copy the fields
//     to keep: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device,
//     Source: d.Source, Target: d.Target, Alias: d.Alias, Boot: d.Boot,
//     Driver: DomainDiskDriver{Name: d.Driver.Name, Type: d.Driver.Type,
//     Cache: "writeback"}}). To add a device, write the old list plus the new
//     element (domainSpec.Devices.Interfaces + [DomainInterface{...}]).
//   - A result that is not a literal (domainSpec, or domainSpec chosen by a
//     conditional) is the domain as it was.
//
// So an expression that reads every top-level part back, Domain{Devices:
// domainSpec.Devices, Features: domainSpec.Features, ...}, returns the domain
// unchanged. The merged domain is new along the paths the expression writes
// and shares every other part with the input (copy-on-write): callers treat
// both as read-only. On error nothing is returned and the input is, as
// always, unchanged. Apply is Merge writing the result into the domain.
// MergeWritten is Merge that also lists the fields the expression changed
// ("CPU.Mode"), read off the literal the merge follows, so that a host can
// tell which hook changed what at the cost of the literal, not the domain.
//
// # Cost
//
// Each expression's cost is estimated at compile time, with bounds real
// inputs stay within: a list or map read from vmi or domainSpec holds at most
// 256 elements (KubeVirt refuses VMIs with more disks, volumes, interfaces or
// networks), a string at most 64 KiB, a struct at most the 1.5 MiB etcd
// stores. With them a map(), filter() or exists() over the domain's or the
// VMI's lists with a struct-building body estimates in the tens of thousands
// and is admitted; nested comprehensions comparing strings, or three nested
// ones, are refused. A GuestDefinition expression whose worst-case estimate
// exceeds Options.CostLimit (default DefaultCostLimit, 10,000,000), or a
// condition whose estimate exceeds Options.ConditionCostLimit (default
// DefaultConditionCostLimit, 1,000,000: conditions run in virt-handler for
// every VM of the node), is rejected with a *CompileError of Reason "cost"
// whose Message states the estimate and the limit, and accepted expressions
// report theirs (EstimatedCost) so admission can show it. The same limits
// bound every evaluation at run time, whatever the input's size: an
// evaluation reaching its limit stops with an error wrapping
// ErrCostLimitExceeded and quoting the expression. The cost is counted as
// the evaluation goes at a constant price per step, so an evaluation's time
// grows with its cost, never with its square: a condition is stopped after
// about 0.1 s of CPU and a GuestDefinition expression after about 1 s on the
// machines of docs/benchmarks.md, and a comprehension over 80,000 labels
// runs to its answer in well under the condition limit. (An expression without a comprehension whose
// estimate does not depend on the input, minimum equal to maximum, always
// costs what it was admitted with: it runs without counting.) Evaluation also stops, with an error wrapping the
// context's, when its context ends.
//
// # Compile once
//
// An Env caches compilations, successful or not, by expression text
// (Options.CacheSize, least recently used evicted): calling Condition or
// DomainTransform again with the same text returns the same compiled value
// without compiling. Env, Condition and DomainTransform are safe for
// concurrent use.
//
// # Cost of a process
//
// Every virt-launcher links this package, and most are handed no expression.
// New builds nothing: the environment of conditions is built with the first
// condition compiled, the one of GuestDefinition expressions with the first
// of those, and each describes to CEL only the Go types its expressions
// reach (a field read describes the field's type; a struct literal's type is
// searched for from there), not the hundreds the VMI and the domain hold.
package celenv
