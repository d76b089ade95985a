// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
	"github.com/kubevirt-plugins/framework/launcher-runtime/internal/linediff"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// runValidate prints each problem on stderr, as "SOURCE: plugin NAME:
// FIELD: message", and a summary on stdout when all plugins are valid.
func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s", err)
	}
	if fs.NArg() == 0 {
		return usagef("name at least one file")
	}
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		return err
	}
	problems, plugins := 0, 0
	for _, file := range fs.Args() {
		docs, err := readPluginDocs(file, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", file, err)
			problems++
			continue
		}
		found := false
		for _, d := range docs {
			if d.err != nil {
				fmt.Fprintf(stderr, "%s: %s\n", d.source, d.err)
				problems++
				continue
			}
			found = true
			plugins++
			for _, e := range validation.All(d.plugin, env) {
				fmt.Fprintf(stderr, "%s: plugin %q: %s\n", d.source, d.plugin.Name, e.Error())
				problems++
			}
		}
		if !found && len(docs) == 0 {
			fmt.Fprintf(stderr, "%s: no %s Plugin in this file\n", file, pluginv1alpha1.GroupVersion)
			problems++
		}
	}
	if problems > 0 {
		return fmt.Errorf("%d problem(s) found in %d plugin(s)", problems, plugins)
	}
	fmt.Fprintf(stdout, "%d plugin(s) valid\n", plugins)
	return nil
}

// chainFlags are the flags of the commands that run a hook chain.
type chainFlags struct {
	plugins    pathsFlag
	vmi        string
	socketWait time.Duration
	socketRoot string
	// trackSidecars compares the domain before and after each sidecar.
	trackSidecars bool
}

// pathsFlag is a flag that may be given several times.
type pathsFlag []string

func (p *pathsFlag) String() string { return strings.Join(*p, ",") }

func (p *pathsFlag) Set(v string) error {
	*p = append(*p, v)
	return nil
}

func (c *chainFlags) register(fs *flag.FlagSet) {
	fs.Var(&c.plugins, "plugins", "a Plugin manifest (several documents allowed) or a directory of them; may be given several times")
	fs.StringVar(&c.vmi, "vmi", "", "the VirtualMachineInstance, YAML or JSON")
	fs.DurationVar(&c.socketWait, "socket-wait", pluginv1alpha1.SocketWaitBudget, "how long to wait in total for sidecar sockets to appear")
	fs.StringVar(&c.socketRoot, "socket-root", pluginv1alpha1.SocketsRoot, "the directory standing in for "+pluginv1alpha1.SocketsRoot)
}

func (c *chainFlags) pipeline(stderr io.Writer) (*pipeline.Pipeline, error) {
	if c.socketWait <= 0 {
		return nil, usagef("--socket-wait must be positive")
	}
	plugins, err := loadPlugins(c.plugins, stderr)
	if err != nil {
		return nil, err
	}
	return pipeline.New(plugins, pipeline.Options{
		Logger:             stderrLogger(stderr),
		SocketRoot:         c.socketRoot,
		SocketWaitBudget:   c.socketWait,
		TrackSidecarWrites: c.trackSidecars,
	})
}

// stderrLogger reports ignored hook failures on stderr.
func stderrLogger(w io.Writer) logr.Logger {
	return funcr.New(func(prefix, args string) {
		fmt.Fprintf(w, "kvpctl: %s\n", args)
	}, funcr.Options{})
}

func runGuestDefinition(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("guest-definition", flag.ContinueOnError)
	var c chainFlags
	c.register(fs)
	domainFile := fs.String("domain", "", "the libvirt domain XML")
	invocation := fs.String("context", string(pipeline.Boot), "invocation context: Boot or MigrationTarget")
	diff := fs.Bool("diff", false, "print a unified diff of the domain instead of the resulting XML")
	explain := fs.Bool("explain", false, "print which plugin and hook changed each part of the domain, and which overwrote another plugin's change, instead of the resulting XML (before the diff with --diff)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	c.trackSidecars = *explain
	if err := required(map[string]string{"plugins": c.plugins.String(), "vmi": c.vmi, "domain": *domainFile}); err != nil {
		return err
	}
	ic := pipeline.InvocationContext(*invocation)
	if ic != pipeline.Boot && ic != pipeline.MigrationTarget {
		return usagef("--context must be Boot or MigrationTarget, not %q", *invocation)
	}
	p, err := c.pipeline(stderr)
	if err != nil {
		return err
	}
	vmi, err := loadVMI(c.vmi)
	if err != nil {
		return err
	}
	domain, err := loadDomain(*domainFile)
	if err != nil {
		return err
	}
	out, report, err := p.GuestDefinitionWithReport(ctx, vmi, domain, ic)
	if err != nil {
		return err
	}
	if *explain {
		if err := writeExplanation(stdout, report); err != nil || !*diff {
			return err
		}
	}
	after, err := out.Marshal()
	if err != nil {
		return fmt.Errorf("encoding the resulting domain: %w", err)
	}
	if !*diff {
		_, err = fmt.Fprintln(stdout, after)
		return err
	}
	// Both sides go through the same encoder, so only real changes show.
	before, err := domain.Marshal()
	if err != nil {
		return fmt.Errorf("encoding the input domain: %w", err)
	}
	_, err = io.WriteString(stdout, linediff.Unified(*domainFile, *domainFile+" (after GuestDefinition)", before+"\n", after+"\n"))
	return err
}

func runPreMigrationSource(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pre-migration-source", flag.ContinueOnError)
	var c chainFlags
	c.register(fs)
	flagsText := fs.String("flags", "", "the VIR_MIGRATE_* flags, decimal or 0x hexadecimal")
	paramsFile := fs.String("params", "", "the migration parameters, a JSON or YAML map keyed by libvirt names (parallel.connections, ...)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := required(map[string]string{"plugins": c.plugins.String(), "vmi": c.vmi, "flags": *flagsText}); err != nil {
		return err
	}
	flags, err := strconv.ParseUint(*flagsText, 0, 64)
	if err != nil {
		return usagef("--flags: %s", err)
	}
	params := &hooksv1alpha1.MigrationParams{}
	if *paramsFile != "" {
		if params, err = loadParams(*paramsFile); err != nil {
			return err
		}
	}
	p, err := c.pipeline(stderr)
	if err != nil {
		return err
	}
	vmi, err := loadVMI(c.vmi)
	if err != nil {
		return err
	}
	res, err := p.PreMigrationSource(ctx, vmi, flags, params)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(struct {
		Flags  uint64         `json:"flags"`
		Params map[string]any `json:"params"`
	}{res.Flags, hooksv1alpha1.ParamsToMap(res.Params)}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(out))
	return err
}

func loadParams(file string) (*hooksv1alpha1.MigrationParams, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	// Through JSON with json.Number, so that 64-bit values such as a
	// bandwidth arrive exactly rather than as float64.
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	m := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	params, err := hooksv1alpha1.ParamsFromMap(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return params, nil
}

func runCondition(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("condition", flag.ContinueOnError)
	expr := fs.String("expression", "", "a condition over vmi (Go field names), for example '\"app\" in vmi.Labels'")
	vmiFile := fs.String("vmi", "", "the VirtualMachineInstance, YAML or JSON")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := required(map[string]string{"expression": *expr, "vmi": *vmiFile}); err != nil {
		return err
	}
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		return err
	}
	cond, err := env.Condition(*expr)
	if err != nil {
		return err
	}
	vmi, err := loadVMI(*vmiFile)
	if err != nil {
		return err
	}
	ok, err := cond.Eval(ctx, vmi)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, ok)
	return err
}
