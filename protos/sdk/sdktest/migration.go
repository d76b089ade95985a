// SPDX-License-Identifier: Apache-2.0

package sdktest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

func preMigrationSource(ctx context.Context, conn grpc.ClientConnInterface, c LauncherContract, flags uint64, params *hooksv1alpha1.MigrationParams) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
	callCtx, cancel := context.WithTimeout(ctx, c.CallTimeout)
	defer cancel()
	return hooksv1alpha1.NewLauncherHookServiceClient(conn).PreMigrationSource(callCtx,
		&hooksv1alpha1.PreMigrationSourceRequest{Vmi: c.VMI, Flags: flags, Params: params})
}

// responseProblems lists what makes a PreMigrationSource response invalid:
// a flag bit both set and cleared, a field the contract does not define, a
// parameter of the wrong type.
func responseProblems(resp *hooksv1alpha1.PreMigrationSourceResponse) []string {
	var problems []string
	if both := resp.GetSetFlags() & resp.GetClearFlags(); both != 0 {
		problems = append(problems, fmt.Sprintf("flag bits %s (%#x) are in both set_flags and clear_flags", sdk.MigrationFlags(both), both))
	}
	return append(problems, unknownFields(resp.ProtoReflect(), "")...)
}

// unknownFields walks m for fields the receiver could not decode: numbers
// the contract does not define, or defined fields sent with another wire
// type (a value of the wrong type), which protobuf keeps as unknown.
func unknownFields(m protoreflect.Message, path string) []string {
	var problems []string
	fields := m.Descriptor().Fields()
	raw := m.GetUnknown()
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeField(raw)
		if n < 0 {
			problems = append(problems, fmt.Sprintf("%s: undecodable bytes", orRoot(path)))
			break
		}
		raw = raw[n:]
		if fd := fields.ByNumber(num); fd != nil {
			problems = append(problems, fmt.Sprintf("%s has a value of the wrong type (wire type %d, want a %s)", join(path, string(fd.Name())), typ, fd.Kind()))
			continue
		}
		problems = append(problems, fmt.Sprintf("%s has field number %d, which the contract does not define (an unknown parameter)", orRoot(path), num))
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() {
			child := join(path, string(fd.Name()))
			if path == "params" {
				child = "params[" + hooksv1alpha1.LibvirtParamName(fd) + "]"
			}
			problems = append(problems, unknownFields(v.Message(), child)...)
		}
		return true
	})
	return problems
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func orRoot(path string) string {
	if path == "" {
		return "the response"
	}
	return path
}

func checkPreMigrationSourceResponseValid(c LauncherContract) Check {
	return Check{
		Name: "PreMigrationSource/ResponseValid",
		Rule: "a PreMigrationSource response holds only changes: no flag bit in both set_flags and clear_flags, only known parameters, each of its type",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			resp, err := preMigrationSource(ctx, conn, c, c.Flags, c.Params)
			if err != nil {
				return failed(fmt.Errorf("PreMigrationSource: %w", err))
			}
			if problems := responseProblems(resp); len(problems) > 0 {
				return failed(errors.New(strings.Join(problems, "; ")))
			}
			flags, params, err := sdk.ApplyResponse(sdk.MigrationFlags(c.Flags), sdk.NewMigrationParams(c.Params), resp)
			if err != nil {
				return failed(err)
			}
			if flags == sdk.MigrationFlags(c.Flags) && reflect.DeepEqual(params, hooksv1alpha1.ParamsToMap(c.Params)) {
				return passed("the response changes nothing")
			}
			return passed("flags %s, parameters %v", flags, params)
		},
	}
}

func checkPreMigrationSourceIdempotent(c LauncherContract) Check {
	return Check{
		Name: "PreMigrationSource/Idempotent",
		Rule: "PreMigrationSource is idempotent: called on the configuration its own response produced, it changes nothing more",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			resp, err := preMigrationSource(ctx, conn, c, c.Flags, c.Params)
			if err != nil {
				return failed(fmt.Errorf("PreMigrationSource: %w", err))
			}
			flags1, params1, err := sdk.ApplyResponse(sdk.MigrationFlags(c.Flags), sdk.NewMigrationParams(c.Params), resp)
			if err != nil {
				return failed(fmt.Errorf("first response: %w", err))
			}
			next, err := hooksv1alpha1.ParamsFromMap(params1)
			if err != nil {
				return failed(fmt.Errorf("first response's parameters: %w", err))
			}
			resp2, err := preMigrationSource(ctx, conn, c, uint64(flags1), next)
			if err != nil {
				return failed(fmt.Errorf("called on its own result: %w", err))
			}
			flags2, params2, err := sdk.ApplyResponse(flags1, sdk.NewMigrationParams(next), resp2)
			if err != nil {
				return failed(fmt.Errorf("second response: %w", err))
			}
			var diffs []string
			if flags2 != flags1 {
				diffs = append(diffs, fmt.Sprintf("flags %s became %s", flags1, flags2))
			}
			if !reflect.DeepEqual(params1, params2) {
				diffs = append(diffs, fmt.Sprintf("parameters %v became %v", params1, params2))
			}
			if len(diffs) > 0 {
				return failed(fmt.Errorf("called on the configuration its own response produced, it changed it again: %s", strings.Join(diffs, "; ")))
			}
			return passed("its own result came back unchanged")
		},
	}
}
