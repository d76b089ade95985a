// Package validation checks the parts of a Plugin that the CRD schema cannot:
// every CEL expression must compile, have the right result type and stay
// under the cost limit of the shared CEL environment. Each problem comes back
// as a field error whose path names the expression (spec.condition,
// spec.launcherHooks[1].cel.expression, spec.nodeHooks[0].condition, ...).
//
// The package is pure Go so that it can move into the api module
// (api/plugin/v1alpha1/validation) unchanged; the controller's webhook and
// reconciler both use it so that admission and status always agree.
package validation
