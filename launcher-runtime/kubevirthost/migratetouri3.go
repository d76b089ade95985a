// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package kubevirthost

import (
	"context"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"google.golang.org/protobuf/proto"

	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// MigrateToURI3Args runs PreMigrationSource on the arguments virt-launcher
// is about to hand libvirt's MigrateToURI3 and returns the arguments to hand
// it instead. With no Plugin it returns flags and params as they are.
//
// The parameters the hooks answer are checked against the version of the
// libvirt library virt-launcher is linked with (the one its virtqemud
// comes with): a parameter that libvirt lacks is an error naming it and the
// release it needs, returned before the migration starts, as is a hook's
// error under failureStrategy Fail. The changes are logged, one line per
// migration, naming the flags and the parameters the hooks changed.
func (l *Launcher) MigrateToURI3Args(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, flags libvirt.DomainMigrateFlags, params *libvirt.DomainMigrateParameters) (libvirt.DomainMigrateFlags, *libvirt.DomainMigrateParameters, error) {
	if len(l.Plugins()) == 0 {
		return flags, params, nil
	}
	in := domainrun.ParamsOf(params)
	res, _, err := l.PreMigrationSource(ctx, vmi, uint64(flags), proto.Clone(in).(*hooksv1alpha1.MigrationParams))
	if err != nil {
		return 0, nil, err
	}
	outFlags, err := domainrun.MigrateFlags(res.Flags)
	if err != nil {
		return 0, nil, fmt.Errorf("PreMigrationSource of VMI %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	lib, err := libvirt.GetVersion()
	if err != nil {
		return 0, nil, fmt.Errorf("PreMigrationSource of VMI %s/%s: libvirt version: %w", vmi.Namespace, vmi.Name, err)
	}
	out, err := domainrun.MigrateParameters(res.Params, domainrun.Version(lib))
	if err != nil {
		return 0, nil, fmt.Errorf("PreMigrationSource of VMI %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	l.log.Info("migration arguments after PreMigrationSource", "vmi", vmi.Namespace+"/"+vmi.Name,
		"flags", fmt.Sprintf("%#x", uint64(outFlags)), "flagsBefore", fmt.Sprintf("%#x", uint64(flags)),
		"paramsChanged", changedParams(in, res.Params))
	return outFlags, out, nil
}

// changedParams gives the parameters whose values differ between a and b,
// by libvirt's names: the new value, "removed", or for the two domain XMLs
// their new length.
func changedParams(a, b *hooksv1alpha1.MigrationParams) map[string]any {
	out := map[string]any{}
	after := hooksv1alpha1.ParamsToMap(b)
	ra, rb := a.ProtoReflect(), b.ProtoReflect()
	fields := ra.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if ra.Has(f) == rb.Has(f) && (!ra.Has(f) || proto.Equal(ra.Get(f).Message().Interface(), rb.Get(f).Message().Interface())) {
			continue
		}
		name := hooksv1alpha1.LibvirtParamName(f)
		v, ok := after[name]
		switch {
		case !ok:
			out[name] = "removed"
		case name == hooksv1alpha1.ParamDestinationXML || name == hooksv1alpha1.ParamPersistentXML:
			out[name] = fmt.Sprintf("%d bytes", len(v.(string)))
		default:
			out[name] = v
		}
	}
	return out
}
