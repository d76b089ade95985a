// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LauncherHookPoint names a point in virt-launcher where launcher hooks run.
// +kubebuilder:validation:Enum=GuestDefinition;PreBoot;PreMigrationSource
type LauncherHookPoint string

const (
	// GuestDefinition runs after the domain is generated and before it is
	// handed to libvirt. CEL and sidecar hooks may use it.
	GuestDefinition LauncherHookPoint = "GuestDefinition"
	// PreBoot runs after the boot artifacts are generated and before the
	// guest starts. Sidecars only.
	PreBoot LauncherHookPoint = "PreBoot"
	// PreMigrationSource runs on the migration source right before the
	// migration is handed to libvirt. Sidecars only.
	PreMigrationSource LauncherHookPoint = "PreMigrationSource"
)

// LauncherHookPoints lists every launcher hook point in the order the
// launcher reaches them during a VM's life.
var LauncherHookPoints = []LauncherHookPoint{GuestDefinition, PreBoot, PreMigrationSource}

// NodeHookPoint names a VM lifecycle event at which virt-handler calls node
// hooks.
// +kubebuilder:validation:Enum=PreVMStart;PostVMStart;OnVMStop;PostVMStop;PreMigrationSource;PreMigrationTarget;PostMigrationTarget
type NodeHookPoint string

const (
	// PreVMStart fires before the VM starts.
	PreVMStart NodeHookPoint = "PreVMStart"
	// PostVMStart fires after the VM is running.
	PostVMStart NodeHookPoint = "PostVMStart"
	// OnVMStop fires when KubeVirt stops a running VM (for example when the
	// VMI is deleted), not when the guest shuts down or crashes by itself.
	OnVMStop NodeHookPoint = "OnVMStop"
	// PostVMStop fires after the VM has stopped.
	PostVMStop NodeHookPoint = "PostVMStop"
	// NodePreMigrationSource fires on the source node before a migration.
	NodePreMigrationSource NodeHookPoint = "PreMigrationSource"
	// PreMigrationTarget fires on the target node before a migration.
	PreMigrationTarget NodeHookPoint = "PreMigrationTarget"
	// PostMigrationTarget fires on the target node after a migration.
	PostMigrationTarget NodeHookPoint = "PostMigrationTarget"
)

// NodeHookPoints lists every node hook point.
var NodeHookPoints = []NodeHookPoint{
	PreVMStart, PostVMStart, OnVMStop, PostVMStop,
	NodePreMigrationSource, PreMigrationTarget, PostMigrationTarget,
}

// FailureStrategy says what happens when a hook fails or times out.
// +kubebuilder:validation:Enum=Fail;Ignore
type FailureStrategy string

const (
	// Fail blocks the operation the hook belongs to. It is the default.
	Fail FailureStrategy = "Fail"
	// Ignore logs the error and lets the operation continue.
	Ignore FailureStrategy = "Ignore"
)

// FailureStrategies lists every failure strategy.
var FailureStrategies = []FailureStrategy{Fail, Ignore}

const (
	// DefaultTimeout bounds a sidecar launcher hook or node hook call when
	// the hook sets no timeout of its own.
	DefaultTimeout = 30 * time.Second
	// SocketWaitBudget is how long virt-launcher waits, in total, at one
	// hook point for the sockets of the sidecars handling it to appear.
	SocketWaitBudget = 30 * time.Second
	// SocketsRoot is where virt-launcher mounts the sockets volume; each
	// plugin owns the directory SocketsRoot/<plugin name>/.
	SocketsRoot = "/var/run/kubevirt-plugin"
	// SocketsVolumeName is the name of the launcher Pod volume that holds
	// the sidecar sockets.
	SocketsVolumeName = "kubevirt-plugin-sockets"
	// NodeHookSocketsRoot is the host directory virt-handler mounts and in
	// which node hook sockets lie, unless the node allows other roots.
	NodeHookSocketsRoot = "/var/run/kubevirt"
	// MetricsNamespace begins the name of every Prometheus series the
	// project defines: MetricsNamespace_<component>_..., the component
	// being launcher_hook (launcher-runtime), node_hook (handler-runtime)
	// or label_syncer.
	MetricsNamespace = "kubevirt_plugins"
	// MaxSocketPathLength is the size of sun_path in struct sockaddr_un.
	MaxSocketPathLength = 108
	// MaxHooks bounds each of a Plugin's lists of hooks, spec.launcherHooks
	// and spec.nodeHooks: the maxItems of the CRD's schema.
	MaxHooks = 32
	// EphemeralDiskDir is where the compute container keeps ephemeral disks
	// and boot artifacts; PreBoot sidecars mount it at the same path.
	EphemeralDiskDir = "/var/run/kubevirt-ephemeral-disks"
	// CheckedCELAnnotation is set by virt-handler on the copy of a Plugin
	// it hands a launcher (never on the stored object): the checked forms
	// of the Plugin's expressions, a JSON celenv.CheckedSet, so that the
	// launcher plans them without parsing. A launcher handed a Plugin
	// without it (an older virt-handler, kvpctl) compiles the text.
	CheckedCELAnnotation = "launcher.plugin.kubevirt.io/checked-cel"
)

// Plugin extends KubeVirt with launcher hooks, node hooks and references to
// the admission objects that belong to the same extension.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Launcher Hooks",type=integer,JSONPath=`.status.launcherHooks`
// +kubebuilder:printcolumn:name="Node Hooks",type=integer,JSONPath=`.status.nodeHooks`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.launcherHooks) || self.spec.launcherHooks.all(h, !has(h.sidecar) || (size(h.sidecar.socketPath.split('/')) > 5 && h.sidecar.socketPath.split('/')[4] == self.metadata.name))",fieldPath=".spec.launcherHooks",message="a sidecar socketPath must be inside the plugin's own directory /var/run/kubevirt-plugin/<metadata.name>/"
type Plugin struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PluginSpec `json:"spec"`
	// +optional
	Status PluginStatus `json:"status,omitempty"`
}

// PluginSpec declares what a plugin contributes.
type PluginSpec struct {
	// Condition is a CEL expression over `vmi` (Go field names, for example
	// vmi.Labels) that must evaluate to a bool. The plugin applies only to
	// VMIs for which it is true. Empty means every VMI.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Condition string `json:"condition,omitempty"`

	// FailureStrategy is the default for this plugin's launcher hooks.
	// Node hooks do not inherit it. Unset means Fail.
	// +optional
	FailureStrategy FailureStrategy `json:"failureStrategy,omitempty"`

	// LauncherHooks run inside virt-launcher, in declaration order.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	LauncherHooks []LauncherHook `json:"launcherHooks,omitempty"`

	// NodeHooks are called by virt-handler at VM lifecycle events, in
	// declaration order.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	NodeHooks []NodeHook `json:"nodeHooks,omitempty"`

	// MutatingAdmissionPolicies that belong to this plugin.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	MutatingAdmissionPolicies []AdmissionReference `json:"mutatingAdmissionPolicies,omitempty"`
	// ValidatingAdmissionPolicies that belong to this plugin.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	ValidatingAdmissionPolicies []AdmissionReference `json:"validatingAdmissionPolicies,omitempty"`
	// MutatingAdmissionWebhooks names MutatingWebhookConfigurations that
	// belong to this plugin.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	MutatingAdmissionWebhooks []AdmissionReference `json:"mutatingAdmissionWebhooks,omitempty"`
	// ValidatingAdmissionWebhooks names ValidatingWebhookConfigurations that
	// belong to this plugin.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	ValidatingAdmissionWebhooks []AdmissionReference `json:"validatingAdmissionWebhooks,omitempty"`
}

// LauncherHook is one hook run inside virt-launcher: exactly one of CEL or
// Sidecar.
// +kubebuilder:validation:XValidation:rule="has(self.cel) != has(self.sidecar)",message="exactly one of cel or sidecar must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.cel) || !has(self.timeout)",message="timeout applies only to sidecar hooks; CEL hooks run inline and have none"
type LauncherHook struct {
	// CEL transforms the domain inline with an expression.
	// +optional
	CEL *CELHook `json:"cel,omitempty"`
	// Sidecar calls a gRPC server in a sidecar container of virt-launcher.
	// +optional
	Sidecar *SidecarHook `json:"sidecar,omitempty"`

	// Condition narrows the plugin-level condition for this hook; both
	// must hold. Same language and variables as the plugin condition.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Condition string `json:"condition,omitempty"`
	// FailureStrategy overrides the plugin's failureStrategy for this hook.
	// +optional
	FailureStrategy FailureStrategy `json:"failureStrategy,omitempty"`
	// Timeout bounds each call to the sidecar. Defaults to 30s. Not
	// allowed on CEL hooks.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be a positive duration such as 10s"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// CELHook transforms the domain with a CEL expression.
// +kubebuilder:validation:XValidation:rule="self.hookPoint == 'GuestDefinition'",fieldPath=".hookPoint",message="CEL hooks are supported only at hook point GuestDefinition; use a sidecar for PreBoot and PreMigrationSource"
type CELHook struct {
	// HookPoint is where the expression runs. Only GuestDefinition.
	// +required
	HookPoint LauncherHookPoint `json:"hookPoint"`
	// Expression sees `vmi` and `domainSpec` (Go field names) and returns
	// a Domain{...} built from libvirtxml type names. The result is deep
	// merged into the domain: fields it sets are overwritten, others kept,
	// slices replaced whole.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16384
	Expression string `json:"expression"`
}

// SidecarHook points at a gRPC server in a sidecar of virt-launcher.
type SidecarHook struct {
	// SocketPath is the Unix socket the sidecar serves on. It lies under
	// /var/run/kubevirt-plugin/<plugin name>/, ends with .sock, is at most
	// 108 bytes and has no control character (NUL included), "..", "."
	// component, repeated or trailing "/".
	// +required
	// +kubebuilder:validation:MaxLength=108
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/var/run/kubevirt-plugin/')",message="socketPath must be under /var/run/kubevirt-plugin/<plugin name>/"
	// +kubebuilder:validation:XValidation:rule="self.endsWith('.sock')",message="socketPath must end with .sock"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[\\\\x00-\\\\x1f\\\\x7f]')",message="socketPath must not contain a control character"
	// +kubebuilder:validation:XValidation:rule="!self.contains('..')",message="socketPath must not contain '..'"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(c, c == '.')",message="socketPath must not contain a '.' path component"
	// +kubebuilder:validation:XValidation:rule="!self.contains('//')",message="socketPath must not contain a repeated '/'"
	// +kubebuilder:validation:XValidation:rule="!self.endsWith('/')",message="socketPath must not end with '/'"
	SocketPath string `json:"socketPath"`
	// PermittedHooks lists the hook points this sidecar serves.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	PermittedHooks []LauncherHookPoint `json:"permittedHooks"`
}

// NodeHook points at a gRPC server, usually a DaemonSet, that virt-handler
// calls at VM lifecycle events.
type NodeHook struct {
	// Socket is the Unix socket of the server, on a host path that
	// virt-handler mounts (for example under /var/run/kubevirt/). The same
	// shape rules as a sidecar's socketPath apply: at most 108 bytes, no
	// control character, "..", "." component, repeated or trailing "/".
	// +required
	// +kubebuilder:validation:MaxLength=108
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="socket must be an absolute path"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[\\\\x00-\\\\x1f\\\\x7f]')",message="socket must not contain a control character"
	// +kubebuilder:validation:XValidation:rule="!self.contains('..')",message="socket must not contain '..'"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(c, c == '.')",message="socket must not contain a '.' path component"
	// +kubebuilder:validation:XValidation:rule="!self.contains('//')",message="socket must not contain a repeated '/'"
	// +kubebuilder:validation:XValidation:rule="!self.endsWith('/')",message="socket must not end with '/'"
	Socket string `json:"socket"`
	// PermittedHooks lists the lifecycle events this server handles.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=7
	PermittedHooks []NodeHookPoint `json:"permittedHooks"`
	// Condition selects the VMIs this hook applies to, within the
	// plugin-level condition.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Condition string `json:"condition,omitempty"`
	// FailureStrategy for this hook only; the plugin-level value does not
	// apply to node hooks. Unset means Fail.
	// +optional
	FailureStrategy FailureStrategy `json:"failureStrategy,omitempty"`
	// Timeout bounds each call. Defaults to 30s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be a positive duration such as 10s"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// AdmissionReference names a cluster-scoped admission object.
type AdmissionReference struct {
	// Name of the referenced object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Condition types a Plugin reports in its status.
const (
	// ConditionAccepted is True when every CEL expression of the plugin
	// compiles, type-checks and stays within the cost limit.
	ConditionAccepted = "Accepted"
	// ConditionAdmissionReferencesResolved is True when every referenced
	// admission policy and webhook configuration exists.
	ConditionAdmissionReferencesResolved = "AdmissionReferencesResolved"
	// ConditionReady is True when the plugin is accepted and its
	// references resolve.
	ConditionReady = "Ready"
)

// PluginStatus is what the plugin controller observed.
type PluginStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Accepted, AdmissionReferencesResolved and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LauncherHooks is the number of launcher hooks in the observed spec.
	// +optional
	LauncherHooks int32 `json:"launcherHooks,omitempty"`
	// NodeHooks is the number of node hooks in the observed spec.
	// +optional
	NodeHooks int32 `json:"nodeHooks,omitempty"`
}

// PluginList is a list of Plugins.
// +kubebuilder:object:root=true
type PluginList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Plugin `json:"items"`
}

// LauncherFailureStrategy is the strategy in force for launcher hook i:
// the hook's own, else the plugin's, else Fail.
func (p *Plugin) LauncherFailureStrategy(i int) FailureStrategy {
	if s := p.Spec.LauncherHooks[i].FailureStrategy; s != "" {
		return s
	}
	if p.Spec.FailureStrategy != "" {
		return p.Spec.FailureStrategy
	}
	return Fail
}

// EffectiveFailureStrategy of a node hook: its own, else Fail. The
// plugin-level strategy deliberately does not apply.
func (h *NodeHook) EffectiveFailureStrategy() FailureStrategy {
	if h.FailureStrategy != "" {
		return h.FailureStrategy
	}
	return Fail
}

// EffectiveTimeout of a launcher hook: its own, else DefaultTimeout.
func (h *LauncherHook) EffectiveTimeout() time.Duration {
	return timeoutOrDefault(h.Timeout)
}

// EffectiveTimeout of a node hook: its own, else DefaultTimeout.
func (h *NodeHook) EffectiveTimeout() time.Duration {
	return timeoutOrDefault(h.Timeout)
}

func timeoutOrDefault(d *metav1.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return DefaultTimeout
	}
	return d.Duration
}

// HookPoints returns the launcher hook points this hook handles.
func (h *LauncherHook) HookPoints() []LauncherHookPoint {
	switch {
	case h.CEL != nil:
		return []LauncherHookPoint{h.CEL.HookPoint}
	case h.Sidecar != nil:
		return h.Sidecar.PermittedHooks
	}
	return nil
}

// Handles reports whether the hook runs at the given launcher hook point.
func (h *LauncherHook) Handles(point LauncherHookPoint) bool {
	return slices.Contains(h.HookPoints(), point)
}

// Handles reports whether the node hook runs at the given hook point.
func (h *NodeHook) Handles(point NodeHookPoint) bool {
	return slices.Contains(h.PermittedHooks, point)
}

// PluginDir is the directory under SocketsRoot that belongs to a plugin.
func PluginDir(pluginName string) string {
	return SocketsRoot + "/" + pluginName + "/"
}
