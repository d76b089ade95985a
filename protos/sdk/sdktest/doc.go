// Package sdktest checks a hook server against the contract of
// protos/hooks/v1alpha1 over its real Unix socket, from a plugin's own
// `go test`.
//
// StartLauncher and StartNode serve a handler through the SDK in a
// temporary directory for the duration of a test. RunLauncherContract runs
// every check that applies to a sidecar as subtests:
//
//   - only the permitted RPCs are implemented; the others answer
//     codes.Unimplemented;
//   - GuestDefinition returns a domain that parses, and is idempotent: called
//     again on its own output it returns the same domain;
//   - the request context is honoured: a call whose deadline has passed ends
//     with DeadlineExceeded or Canceled, and the server keeps answering.
//
// In a plugin's own tests:
//
//	func TestSidecarContract(t *testing.T) {
//		socket := sdktest.StartLauncher(t, "my-plugin", myplugin.NewHandler())
//		sdktest.RunLauncherContract(t, socket, sdktest.LauncherContract{
//			Permitted: []string{sdk.HookGuestDefinition},
//			VMI:       sdktest.VMIJSON("default", "vm1", map[string]string{"app": "db"}, nil),
//		})
//	}
//
// The Check* functions run one check each and return an error, for use
// outside testing.T or against a sidecar started some other way (a
// container with a bind-mounted socket directory, for example).
package sdktest
