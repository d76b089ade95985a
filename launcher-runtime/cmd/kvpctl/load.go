// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// pluginDoc is one Plugin read from a manifest, or the reason it could not
// be read.
type pluginDoc struct {
	source string // file and document number
	plugin *pluginv1alpha1.Plugin
	err    error
}

// readPluginDocs reads every document of the files at path: a file, or a
// directory whose .yaml, .yml and .json files are read in name order.
// Documents of another kind are reported on notes and skipped.
func readPluginDocs(path string, notes io.Writer) ([]pluginDoc, error) {
	files, err := manifestFiles(path)
	if err != nil {
		return nil, err
	}
	var out []pluginDoc
	for _, f := range files {
		docs, err := readFileDocs(f, notes)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	return out, nil
}

func manifestFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	sort.Strings(files)
	return files, nil
}

func readFileDocs(file string, notes io.Writer) ([]pluginDoc, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []pluginDoc
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading document %d: %w", file, n, err)
		}
		source := fmt.Sprintf("%s (document %d)", file, n)
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			out = append(out, pluginDoc{source: source, err: err})
			continue
		}
		if s := string(bytes.TrimSpace(j)); s == "null" || s == "" {
			continue // a document of comments only
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(j, &tm); err != nil {
			out = append(out, pluginDoc{source: source, err: err})
			continue
		}
		want := pluginv1alpha1.GroupVersion.String()
		if tm.Kind != "Plugin" || tm.APIVersion != want {
			fmt.Fprintf(notes, "kvpctl: %s: skipping %s %s, not a %s Plugin\n", source, tm.APIVersion, tm.Kind, want)
			continue
		}
		p := &pluginv1alpha1.Plugin{}
		if err := yaml.UnmarshalStrict(j, p); err != nil {
			out = append(out, pluginDoc{source: source, err: err})
			continue
		}
		out = append(out, pluginDoc{source: source, plugin: p})
	}
}

// loadPlugins reads the Plugins at paths (files or directories); any
// document that does not decode fails the load.
func loadPlugins(paths []string, notes io.Writer) ([]pluginv1alpha1.Plugin, error) {
	var docs []pluginDoc
	for _, path := range paths {
		d, err := readPluginDocs(path, notes)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	var out []pluginv1alpha1.Plugin
	var errs []error
	for _, d := range docs {
		if d.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.source, d.err))
			continue
		}
		out = append(out, *d.plugin)
	}
	return out, errors.Join(errs...)
}

// loadVMI reads a VirtualMachineInstance as YAML or JSON. A VirtualMachine
// is accepted too: its template becomes the VMI, as KubeVirt would create it.
func loadVMI(file string) (*kubevirtv1.VirtualMachineInstance, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	switch tm.Kind {
	case "VirtualMachineInstance", "":
		vmi := &kubevirtv1.VirtualMachineInstance{}
		if err := yaml.Unmarshal(data, vmi); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return vmi, nil
	case "VirtualMachine":
		vm := &kubevirtv1.VirtualMachine{}
		if err := yaml.Unmarshal(data, vm); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if vm.Spec.Template == nil {
			return nil, fmt.Errorf("%s: VirtualMachine %q has no template", file, vm.Name)
		}
		vmi := &kubevirtv1.VirtualMachineInstance{
			TypeMeta:   metav1.TypeMeta{APIVersion: kubevirtv1.GroupVersion.String(), Kind: "VirtualMachineInstance"},
			ObjectMeta: *vm.Spec.Template.ObjectMeta.DeepCopy(),
			Spec:       *vm.Spec.Template.Spec.DeepCopy(),
		}
		vmi.Name, vmi.Namespace = vm.Name, vm.Namespace
		return vmi, nil
	}
	return nil, fmt.Errorf("%s: kind %q is not a VirtualMachineInstance", file, tm.Kind)
}

func loadDomain(file string) (*libvirtxml.Domain, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(string(data)); err != nil {
		return nil, fmt.Errorf("%s: invalid domain XML: %w", file, err)
	}
	return d, nil
}
