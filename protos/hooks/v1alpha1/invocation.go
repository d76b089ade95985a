// SPDX-License-Identifier: Apache-2.0

package hooksv1alpha1

// InvocationContext is a value of SidecarContext.invocation_context: why
// GuestDefinition is called. The SDK (sdk.InvocationContext) and the
// launcher (pipeline.InvocationContext) use this type.
type InvocationContext string

const (
	// InvocationBoot: the domain is about to be defined and started.
	InvocationBoot InvocationContext = "Boot"
	// InvocationMigrationTarget: the launcher is the target of a migration.
	// Hooks run so that sidecars can prepare the target Pod; the domain they
	// return is discarded.
	InvocationMigrationTarget InvocationContext = "MigrationTarget"
)
