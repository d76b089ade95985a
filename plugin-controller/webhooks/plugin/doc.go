// Package plugin serves the validating admission webhook for Plugins. It
// rejects what the CRD schema cannot check: CEL expressions that do not
// compile, have the wrong result type (a condition that is not a bool, a
// GuestDefinition expression that does not return a Domain), exceed the cost
// limit, or name fields Domain{...} does not have. Every problem is listed
// with its field path and the CEL error.
package plugin
