// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// writeExplanation prints, for every part of the domain the hooks changed,
// the last hook that changed it, marking a change that overwrote another
// plugin's; then every overlap, naming both hooks.
func writeExplanation(w io.Writer, r *pipeline.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tCHANGED BY")
	if len(r.Changed) == 0 {
		fmt.Fprintln(tw, "(nothing)\t")
	}
	for _, c := range r.Changed {
		var overwrote []string
		for _, o := range r.Overlaps {
			if o.Hook == c.Hook && o.Path == c.Path {
				overwrote = append(overwrote, o.Overwritten.String())
			}
		}
		line := pathLabel(c.Path) + "\t" + c.Hook.String()
		if len(overwrote) > 0 {
			line += ", overwriting " + strings.Join(overwrote, " and ")
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Overlaps) == 0 {
		_, err := fmt.Fprintln(w, "\nno part of the domain was changed by more than one plugin")
		return err
	}
	fmt.Fprintln(w, "\nOVERWRITTEN (changed by more than one plugin; the later value is kept):")
	for _, o := range r.Overlaps {
		fmt.Fprintln(w, "  "+o.String())
	}
	return nil
}

// pathLabel shows a written path; the empty one is the whole domain.
func pathLabel(p string) string {
	if p == "" {
		return "(whole domain)"
	}
	return p
}
