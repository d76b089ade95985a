// SPDX-License-Identifier: Apache-2.0

package launcherplugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	"github.com/kubevirt-plugins/framework/api/handover"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/internal/requirement"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// PluginSource provides the Plugins. *store.Store is one.
type PluginSource interface {
	Snapshot() (store.Snapshot, error)
}

var _ PluginSource = (*store.Store)(nil)

// LauncherPlugins is what one launcher is handed.
type LauncherPlugins struct {
	// Data is the handover (api/handover: a JSON array, each Plugin under
	// "plugin", which a launcher of KubeVirt's alpha-1 Plugins reads as
	// Plugins with nothing to run) of the Plugins with launcher hooks,
	// sorted by name, each with only what the launcher runs: its name, its
	// metadata.generation, its spec, and the checked forms of its CEL
	// expressions in the annotation pluginv1alpha1.CheckedCELAnnotation
	// (see EncodeChecked). Status, resourceVersion, labels, the stored
	// annotations and the rest of the metadata are left out, so that a
	// status write or a metadata edit does not change Data. Decode reads
	// it back. It is shared by every caller of one revision and must not
	// be modified.
	Data []byte
	// Generation identifies Data (it is a hash of Data alone): equal
	// generations mean equal data. The host resends when the generation
	// differs from the one last sent.
	Generation string
}

// Options configures a Selector.
type Options struct {
	// Plugins is where the Plugins come from. Required.
	Plugins PluginSource
	// CEL compiles the Plugins' expressions whose checked forms launchers
	// are handed, and evaluates the conditions of the Plugins a VMI
	// requires (annotation plugin.kubevirt.io/required); share the
	// dispatcher's. Default: celenv.New with its
	// defaults.
	CEL *celenv.Env
}

// Selector computes LauncherPlugins. The result is encoded once per store
// revision and shared by every VMI. It is safe for concurrent use.
type Selector struct {
	plugins PluginSource
	cel     *celenv.Env

	mu       sync.Mutex
	cached   bool
	revision uint64
	enabled  bool
	result   LauncherPlugins
}

// New creates a Selector.
func New(opts Options) (*Selector, error) {
	if opts.Plugins == nil {
		return nil, errors.New("launcherplugins: Options.Plugins is required")
	}
	if opts.CEL == nil {
		env, err := celenv.New(celenv.Options{})
		if err != nil {
			return nil, fmt.Errorf("launcherplugins: %w", err)
		}
		opts.CEL = env
	}
	return &Selector{plugins: opts.Plugins, cel: opts.CEL}, nil
}

// LauncherPlugins returns what the launcher of vmi is handed. With the
// feature gate off it is an empty list (with its own generation).
//
// A VMI that requires Plugins (annotation plugin.kubevirt.io/required) is
// refused its plugins, with a *required.Error naming each required Plugin
// that is missing, not Ready for its generation, or whose condition does
// not select the VMI, and why: its launcher must not run without them.
func (s *Selector) LauncherPlugins(vmi *kubevirtv1.VirtualMachineInstance) (LauncherPlugins, error) {
	if vmi == nil {
		return LauncherPlugins{}, errors.New("launcher plugins: no VMI given")
	}
	snap, err := s.plugins.Snapshot()
	if err != nil {
		return LauncherPlugins{}, fmt.Errorf("launcher plugins for VMI %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	// Conditions are bounded by the CEL cost limit; nothing to cancel.
	if err := requirement.Check(context.Background(), vmi, snap, s.evalCondition); err != nil {
		return LauncherPlugins{}, fmt.Errorf("launcher plugins refused: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached && s.revision == snap.Revision && s.enabled == snap.Enabled {
		return s.result, nil
	}
	result, err := EncodeChecked(snap.Plugins, s.cel)
	if err != nil {
		return LauncherPlugins{}, fmt.Errorf("launcher plugins for VMI %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	s.cached, s.revision, s.enabled, s.result = true, snap.Revision, snap.Enabled, result
	return result, nil
}

// Encode serializes those of plugins that have launcher hooks, sorted by
// name, each reduced to its name, generation and spec, without checked
// forms: the launcher compiles the expressions' text.
func Encode(plugins []*pluginv1alpha1.Plugin) (LauncherPlugins, error) {
	return EncodeChecked(plugins, nil)
}

// EncodeChecked is Encode with, on each Plugin, the checked forms of those
// of its expressions env compiles (conditions, node hook conditions
// included, and GuestDefinition expressions), a JSON celenv.CheckedSet in
// the annotation pluginv1alpha1.CheckedCELAnnotation: the launcher plans
// them without parsing (see launcher-runtime's pipeline.New). An expression
// that does not compile gets none; the launcher compiles its text and
// reports the problem. A nil env adds none.
func EncodeChecked(plugins []*pluginv1alpha1.Plugin, env *celenv.Env) (LauncherPlugins, error) {
	var items []pluginv1alpha1.Plugin
	byName := func(a, b *pluginv1alpha1.Plugin) int { return strings.Compare(a.Name, b.Name) }
	for _, p := range slices.SortedFunc(slices.Values(plugins), byName) {
		if len(p.Spec.LauncherHooks) == 0 {
			continue
		}
		meta := metav1.ObjectMeta{Name: p.Name, Generation: p.Generation}
		if env != nil {
			checked, err := checkedSet(p, env)
			if err != nil {
				return LauncherPlugins{}, fmt.Errorf("encoding plugin %s: %w", p.Name, err)
			}
			if checked != "" {
				meta.Annotations = map[string]string{pluginv1alpha1.CheckedCELAnnotation: checked}
			}
		}
		// The spec is shared with the snapshot; marshaling only reads it.
		items = append(items, pluginv1alpha1.Plugin{
			TypeMeta:   metav1.TypeMeta{APIVersion: pluginv1alpha1.GroupVersion.String(), Kind: "Plugin"},
			ObjectMeta: meta,
			Spec:       p.Spec,
		})
	}
	data, err := handover.Encode(items)
	if err != nil {
		return LauncherPlugins{}, err
	}
	sum := sha256.Sum256(data)
	return LauncherPlugins{Data: data, Generation: hex.EncodeToString(sum[:])}, nil
}

// checkedSet returns the checked forms of the expressions of p that env
// compiles, as JSON; "" when there are none.
func checkedSet(p *pluginv1alpha1.Plugin, env *celenv.Env) (string, error) {
	var set celenv.CheckedSet
	add := func(m *map[string][]byte, expr string, check func(string) ([]byte, error)) {
		if expr == "" {
			return
		}
		checked, err := check(expr)
		if err != nil {
			return // the launcher compiles the text and reports why
		}
		if *m == nil {
			*m = map[string][]byte{}
		}
		(*m)[expr] = checked
	}
	add(&set.Conditions, p.Spec.Condition, env.CheckedCondition)
	for _, h := range p.Spec.LauncherHooks {
		add(&set.Conditions, h.Condition, env.CheckedCondition)
		if h.CEL != nil {
			add(&set.Transforms, h.CEL.Expression, env.CheckedDomainTransform)
		}
	}
	for _, h := range p.Spec.NodeHooks {
		add(&set.Conditions, h.Condition, env.CheckedCondition)
	}
	if set.Conditions == nil && set.Transforms == nil {
		return "", nil
	}
	data, err := json.Marshal(set)
	return string(data), err
}

// Decode reads Data back into Plugins, for the launcher side
// (handover.Decode).
func Decode(data []byte) ([]pluginv1alpha1.Plugin, error) {
	return handover.Decode(data)
}
