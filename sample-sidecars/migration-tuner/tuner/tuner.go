// SPDX-License-Identifier: Apache-2.0

package tuner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// Labels read from the VMI, relative to Options.LabelPrefix.
const (
	// DefaultLabelPrefix prefixes every label the tuner reads.
	DefaultLabelPrefix = "migration.example.com/"
	// LabelParallel: number of parallel connections; "0" turns parallel
	// migration off.
	LabelParallel = "parallel"
	// LabelCompression: compression methods joined by "_" (xbzrle, mt,
	// zlib, zstd), or "none".
	LabelCompression = "compression"
	// LabelMTThreads: compression threads of the mt method.
	LabelMTThreads = "mt-threads"
	// LabelPostcopy: "true" allows post-copy, "false" forbids it.
	LabelPostcopy = "postcopy"
)

// maxParallelConnections is QEMU's limit on multifd channels.
const maxParallelConnections = 255

var (
	precopyMethods  = []string{"xbzrle", "mt"}
	parallelMethods = []string{"zlib", "zstd"}
)

// Options configure a Tuner.
type Options struct {
	// LabelPrefix: default DefaultLabelPrefix.
	LabelPrefix string
}

// Tuner implements sdk.PreMigrationSourceHandler.
type Tuner struct {
	prefix string
}

var _ sdk.PreMigrationSourceHandler = (*Tuner)(nil)

// New returns a Tuner.
func New(opts Options) *Tuner {
	if opts.LabelPrefix == "" {
		opts.LabelPrefix = DefaultLabelPrefix
	}
	return &Tuner{prefix: opts.LabelPrefix}
}

// PreMigrationSource turns the VMI's labels into migration changes. A label
// with a value it cannot use, or a combination libvirt refuses (xbzrle or mt
// with parallel migration, zlib or zstd without it), fails the call with
// InvalidArgument so that the migration fails with a clear reason instead of
// inside libvirt.
func (t *Tuner) PreMigrationSource(_ context.Context, req *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error) {
	changes, err := t.changes(req.VMI.Labels, req.Flags, req.Params)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "VMI %s/%s: %v", req.VMI.Namespace, req.VMI.Name, err)
	}
	return changes, nil
}

func (t *Tuner) changes(labels map[string]string, flags sdk.MigrationFlags, params sdk.MigrationParams) (*sdk.MigrationChanges, error) {
	c := sdk.NewMigrationChanges()
	label := func(name string) (string, bool) {
		v, ok := labels[t.prefix+name]
		return v, ok
	}
	if v, ok := label(LabelParallel); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxParallelConnections {
			return nil, fmt.Errorf("label %s%s=%q: want a number of connections from 0 to %d", t.prefix, LabelParallel, v, maxParallelConnections)
		}
		if n == 0 {
			c.ClearFlags(sdk.MigrateParallel).Remove(sdk.ParamParallelConnections)
		} else {
			c.SetFlags(sdk.MigrateParallel).SetParallelConnections(int32(n))
		}
	}
	if v, ok := label(LabelCompression); ok {
		if v == "none" {
			c.ClearFlags(sdk.MigrateCompressed).Remove(sdk.ParamCompression)
		} else {
			methods := strings.Split(v, "_")
			for _, m := range methods {
				if !slices.Contains(precopyMethods, m) && !slices.Contains(parallelMethods, m) {
					return nil, fmt.Errorf("label %s%s=%q: unknown compression method %q (want xbzrle, mt, zlib or zstd joined by _, or none)", t.prefix, LabelCompression, v, m)
				}
			}
			c.SetFlags(sdk.MigrateCompressed).SetCompression(methods...)
		}
	}
	if v, ok := label(LabelMTThreads); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 255 {
			return nil, fmt.Errorf("label %s%s=%q: want a thread count from 1 to 255", t.prefix, LabelMTThreads, v)
		}
		c.SetInt(sdk.ParamCompressionMTThreads, int32(n))
	}
	if v, ok := label(LabelPostcopy); ok {
		allow, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("label %s%s=%q: want true or false", t.prefix, LabelPostcopy, v)
		}
		if allow {
			c.SetFlags(sdk.MigratePostcopy)
		} else {
			c.ClearFlags(sdk.MigratePostcopy)
		}
	}
	finalFlags, finalParams, err := c.Apply(flags, params)
	if err != nil {
		return nil, err
	}
	if err := checkCompression(finalFlags, finalParams); err != nil {
		return nil, fmt.Errorf("%s: %w", t.labelsOf(labels, LabelCompression, LabelParallel), err)
	}
	return c, nil
}

// labelsOf names the labels of names the VMI has, with their values; a
// configuration a combination error is about may also come from KubeVirt's
// own flags (its parallel migration), so a missing label is said so.
func (t *Tuner) labelsOf(labels map[string]string, names ...string) string {
	var parts []string
	for _, name := range names {
		if v, ok := labels[t.prefix+name]; ok {
			parts = append(parts, fmt.Sprintf("%s%s=%q", t.prefix, name, v))
		} else {
			parts = append(parts, fmt.Sprintf("no label %s%s", t.prefix, name))
		}
	}
	return "label " + strings.Join(parts, ", ")
}

// checkCompression refuses the method combinations libvirt refuses, on the
// configuration that results from the changes.
func checkCompression(flags sdk.MigrationFlags, params map[string]any) error {
	methods, _ := params[sdk.ParamCompression].([]string)
	if !flags.Has(sdk.MigrateCompressed) || len(methods) == 0 {
		return nil
	}
	parallel := flags.Has(sdk.MigrateParallel)
	for _, m := range methods {
		switch {
		case parallel && slices.Contains(precopyMethods, m):
			return fmt.Errorf("compression method %s cannot be used with parallel migration (use zlib or zstd, or no parallel connections)", m)
		case !parallel && slices.Contains(parallelMethods, m):
			return fmt.Errorf("compression method %s needs parallel migration", m)
		}
	}
	if parallel && len(methods) > 1 {
		return fmt.Errorf("parallel migration takes one compression method, got %v", methods)
	}
	return nil
}
