// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	requiredplugins "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
)

const requiredSynopsis = "required --vmi FILE --plugins PATH...  which Plugins the VMI requires (annotation " +
	requiredplugins.Annotation + ") would be missing: absent, invalid, or not selecting it"

// runRequired prints one line per Plugin the VMI requires, OK or why it
// would not be satisfied, and fails when one would not. Readiness is the
// cluster's to report: files carry no status.
func runRequired(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("required", flag.ContinueOnError)
	var plugins pathsFlag
	fs.Var(&plugins, "plugins", "a Plugin manifest (several documents allowed) or a directory of them; may be given several times")
	vmiFile := fs.String("vmi", "", "the VirtualMachineInstance (or VirtualMachine), YAML or JSON")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := required(map[string]string{"plugins": plugins.String(), "vmi": *vmiFile}); err != nil {
		return err
	}
	vmi, err := loadVMI(*vmiFile)
	if err != nil {
		return err
	}
	names, err := requiredplugins.Names(vmi)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		_, err := fmt.Fprintf(stdout, "VMI %s/%s requires no Plugin (no annotation %s)\n", vmi.Namespace, vmi.Name, requiredplugins.Annotation)
		return err
	}
	loaded, err := loadPlugins(plugins, stderr)
	if err != nil {
		return err
	}
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		return err
	}
	unmet, err := requiredUnmet(ctx, vmi, loaded, env)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REQUIRED PLUGIN\tSTATUS")
	for _, n := range names {
		status := "ok"
		for _, u := range unmet {
			if u.Plugin == n {
				status = fmt.Sprintf("%s: %s", u.Reason, u.Detail)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", n, status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(unmet) > 0 {
		return fmt.Errorf("%d of the %d Plugins VMI %s/%s requires would be missing: it would not start", len(unmet), len(names), vmi.Namespace, vmi.Name)
	}
	return nil
}

// requiredUnmet checks the VMI's required Plugins against the files: a
// Plugin that does not validate would be refused at admission, so it is
// missing too.
func requiredUnmet(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, plugins []pluginv1alpha1.Plugin, env *celenv.Env) ([]requiredplugins.Unmet, error) {
	var valid []*pluginv1alpha1.Plugin
	var invalid []requiredplugins.Unmet
	for i := range plugins {
		p := &plugins[i]
		if errs := validation.All(p, env); len(errs) > 0 {
			invalid = append(invalid, requiredplugins.Unmet{Plugin: p.Name, Reason: requiredplugins.Missing,
				Detail: fmt.Sprintf("the Plugin does not validate, the API server would refuse it: %v", errs.ToAggregate())})
			continue
		}
		valid = append(valid, p)
	}
	err := requiredplugins.Check(ctx, vmi, valid, requiredplugins.Options{EvalCondition: func(ctx context.Context, expr string, vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
		c, err := env.Condition(expr)
		if err != nil {
			return false, err
		}
		return c.Eval(ctx, vmi)
	}})
	var unmet []requiredplugins.Unmet
	if rerr, ok := errors.AsType[*requiredplugins.Error](err); ok {
		unmet = rerr.Unmet
	} else if err != nil {
		return nil, err
	}
	// An invalid Plugin was left out above, so Check found it missing;
	// say why.
	for i, u := range unmet {
		for _, inv := range invalid {
			if inv.Plugin == u.Plugin {
				unmet[i] = inv
			}
		}
	}
	return unmet, nil
}
