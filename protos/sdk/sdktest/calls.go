// SPDX-License-Identifier: Apache-2.0

package sdktest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

var launcherHooks = []string{sdk.HookGuestDefinition, sdk.HookPreBoot, sdk.HookPreMigrationSource}

// call invokes the RPC of a launcher hook point with the contract's inputs
// and boot artifacts.
func call(ctx context.Context, conn grpc.ClientConnInterface, hook string, c LauncherContract, artifacts *hooksv1alpha1.BootArtifacts) (any, error) {
	cl := hooksv1alpha1.NewLauncherHookServiceClient(conn)
	switch hook {
	case sdk.HookGuestDefinition:
		return callGuestDefinition(ctx, conn, c, c.DomainXML, sdk.InvocationBoot)
	case sdk.HookPreBoot:
		return cl.PreBoot(ctx, &hooksv1alpha1.PreBootRequest{Vmi: c.VMI, Artifacts: artifacts})
	case sdk.HookPreMigrationSource:
		return cl.PreMigrationSource(ctx, &hooksv1alpha1.PreMigrationSourceRequest{Vmi: c.VMI, Flags: c.Flags, Params: c.Params})
	}
	return nil, fmt.Errorf("unknown launcher hook point %q", hook)
}

func guestDefinitionRequest(c LauncherContract, domainXML []byte, ic sdk.InvocationContext) *hooksv1alpha1.GuestDefinitionRequest {
	return &hooksv1alpha1.GuestDefinitionRequest{
		DomainXml:      domainXML,
		Vmi:            c.VMI,
		SidecarContext: &hooksv1alpha1.SidecarContext{InvocationContext: string(ic)},
	}
}

func checkPermittedImplemented(c LauncherContract) Check {
	return Check{
		Name: "RPCs/PermittedImplemented",
		Rule: "a sidecar implements the RPC of every hook point in its permittedHooks",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			for _, hook := range c.Permitted {
				if !slices.Contains(launcherHooks, hook) {
					return failed(fmt.Errorf("permittedHooks lists %q, which is not a launcher hook point", hook))
				}
				callCtx, cancel := context.WithTimeout(ctx, c.CallTimeout)
				_, err := call(callCtx, conn, hook, c, emptyArtifacts())
				cancel()
				if code := status.Code(err); code == codes.Unimplemented || code == codes.Unavailable {
					return failed(fmt.Errorf("%s is permitted but answered %v: %v", hook, code, status.Convert(err).Message()))
				}
			}
			return passed("implemented: %v", c.Permitted)
		},
	}
}

func checkOnlyPermitted(c LauncherContract) Check {
	return Check{
		Name: "RPCs/OnlyPermitted",
		Rule: "a sidecar needs only the RPCs of its permittedHooks; the others are never called",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			var extra []string
			for _, hook := range launcherHooks {
				if slices.Contains(c.Permitted, hook) {
					continue
				}
				callCtx, cancel := context.WithTimeout(ctx, c.CallTimeout)
				_, err := call(callCtx, conn, hook, c, emptyArtifacts())
				cancel()
				if status.Code(err) != codes.Unimplemented {
					extra = append(extra, fmt.Sprintf("%s (answered %v)", hook, status.Code(err)))
				}
			}
			if len(extra) > 0 {
				return outcome{warning: fmt.Sprintf("implements hook points its Plugin does not permit, which are never called: %v", extra)}
			}
			return passed("other RPCs answer Unimplemented")
		},
	}
}

// emptyArtifacts are the boot artifacts of calls that do not watch files:
// no ISO and no directory, so that nothing on the host can be changed.
func emptyArtifacts() *hooksv1alpha1.BootArtifacts { return &hooksv1alpha1.BootArtifacts{} }

// contextHonoured checks that a handler stops when its caller gives up: a
// call ends at a short deadline, and the next call takes no longer than an
// undisturbed one plus grace. A handler that keeps working after its
// deadline, holding what the next call needs, delays it.
func contextHonoured(ctx context.Context, what string, shortDeadline, timeout, grace time.Duration, invoke func(context.Context) error) outcome {
	timed := func(d time.Duration) (time.Duration, error) {
		callCtx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		start := time.Now()
		err := invoke(callCtx)
		return time.Since(start), err
	}
	baseline, err := timed(timeout)
	if code := status.Code(err); code == codes.Unimplemented || code == codes.Unavailable || code == codes.DeadlineExceeded {
		return failed(fmt.Errorf("%s answered %v: %w", what, code, err))
	}
	_, err = timed(shortDeadline)
	shortCode := status.Code(err)
	if shortCode != codes.OK && shortCode != codes.DeadlineExceeded && shortCode != codes.Canceled {
		// The handler answered an error of its own within the deadline.
		shortCode = codes.OK
	}
	next, err := timed(timeout)
	if code := status.Code(err); code == codes.Unavailable || code == codes.DeadlineExceeded {
		return failed(fmt.Errorf("%s after a call that ended at its %v deadline answered %v: %w", what, shortDeadline, code, err))
	}
	if next > baseline+grace {
		return failed(fmt.Errorf("%s after a call that ended at its %v deadline took %v, an undisturbed call %v: the handler kept working after its caller gave up",
			what, shortDeadline, next.Round(time.Millisecond), baseline.Round(time.Millisecond)))
	}
	if shortCode == codes.OK {
		return passed("answered within the %v deadline (undisturbed call %v)", shortDeadline, baseline.Round(time.Millisecond))
	}
	return passed("a call ended at its %v deadline; the next took %v (undisturbed %v)", shortDeadline, next.Round(time.Millisecond), baseline.Round(time.Millisecond))
}

func checkLauncherContextHonoured(c LauncherContract, hook string) Check {
	return Check{
		Name: hook + "/ContextHonoured",
		Rule: "hooks honour the request context: a handler stops when its call is canceled or its deadline passes",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			return contextHonoured(ctx, hook, c.ShortDeadline, c.CallTimeout, c.Grace, func(ctx context.Context) error {
				_, err := call(ctx, conn, hook, c, emptyArtifacts())
				return err
			})
		},
	}
}
