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
// CEL has no null for Go pointers: reading a field behind a nil pointer yields
// the zero value (domainSpec.CPU.Mode is "" when the domain has no <cpu>), and
// has() tells whether it is set: has(vmi.Spec.Domain.CPU). A few Go types read
// as CEL scalars: resource.Quantity as its canonical string
// (vmi.Spec.Domain.Resources.Requests["memory"] == "8Gi"), metav1.Time as a
// timestamp (vmi.CreationTimestamp), time.Duration as a duration. Fields of
// interface types are not visible.
//
// libvirtxml counts and sizes are unsigned: write them with the u suffix
// (DomainVCPU{Value: 4u}). Ordering comparisons between int and uint work
// (vmi.Spec.Domain.CPU.Cores > 2), equality needs matching types (== 2u).
// Only the CEL standard library is enabled.
//
// # Merging the result
//
// DomainTransform.Apply merges the result into the domain in place. The fields
// to overwrite are derived once, at compile time, from the expression:
//
//   - When the expression is a Domain{...} literal, exactly the fields it
//     initialises are written, even with zero values: Domain{UUID: ""}
//     clears the UUID. All other fields keep their values.
//   - A field initialised with another struct literal is merged the same way,
//     recursively; for a pointer field the literal merges into the element
//     already there, or into a new one when there is none.
//   - A field initialised with anything else (a constant, a list, a variable
//     such as domainSpec.CPU, a conditional) is replaced as a whole.
//   - Lists are always replaced wholesale, never merged element by element:
//     to add a device, write the old list plus the new element
//     (domainSpec.Devices.Interfaces + [DomainInterface{...}]).
//   - A pointer field replaced by an empty struct that did not come from a
//     literal becomes nil: Domain{NUMATune: domainSpec.NUMATune} keeps an
//     absent <numatune> absent instead of adding an empty one.
//   - When the expression is not a literal (cond ? Domain{...} : domainSpec),
//     which fields it writes is only known at run time, so the result's
//     non-zero fields are merged recursively and zero values are not written.
//
// Written values are deep copies: the domain never shares memory with what the
// expression read. On error the domain is left unchanged.
//
// # Cost
//
// Each expression's cost is estimated at compile time, assuming anything read
// from vmi or domainSpec fits in the 1.5 MiB etcd stores at most. An
// expression whose worst-case estimate exceeds Options.CostLimit (default
// DefaultCostLimit) is rejected with a *CompileError of Reason "cost" whose
// Message states the estimate and the limit, and accepted expressions report
// theirs (EstimatedCost) so admission can show it. The same limit bounds every
// evaluation at run time: an evaluation reaching it stops with an error
// wrapping ErrCostLimitExceeded. Evaluation also stops, with an error wrapping
// the context's, when its context ends.
//
// # Compile once
//
// An Env caches compilations, successful or not, by expression text
// (Options.CacheSize, least recently used evicted): calling Condition or
// DomainTransform again with the same text returns the same compiled value
// without compiling. Env, Condition and DomainTransform are safe for
// concurrent use.
package celenv
