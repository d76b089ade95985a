// SPDX-License-Identifier: Apache-2.0

package cloudinitnetwork

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// networkStatus is what Multus writes for a Pod with the cluster network
// and one bridge network "ns1/red".
const networkStatus = `[
  {"name":"kindnet","interface":"eth0","ips":["10.244.0.7"],"mac":"0a:58:0a:f4:00:07","default":true,"dns":{}},
  {"name":"ns1/red","interface":"pod7b1a2c","ips":["192.168.10.5","fd10::5"],"mac":"02:AB:00:00:00:01",
   "dns":{"nameservers":["192.168.10.1"],"search":["red.example.com"]},"gateway":["192.168.10.1"]}
]`

const wantRedConfig = `ethernets:
  red:
    addresses:
    - 192.168.10.5/24
    - fd10::5/64
    match:
      macaddress: 02:ab:00:00:00:01
    nameservers:
      addresses:
      - 192.168.10.1
      search:
      - red.example.com
version: 2
`

// vmiWithNetworks is a VMI with the pod network and the Multus network red.
func vmiWithNetworks(annotations map[string]string) *kubevirtv1.VirtualMachineInstance {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name, vmi.Annotations = "ns1", "vm1", annotations
	vmi.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{{Name: "default"}, {Name: "red"}}
	vmi.Spec.Networks = []kubevirtv1.Network{
		{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
		{Name: "red", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "red"}}},
	}
	return vmi
}

func vmiJSON(t *testing.T, vmi *kubevirtv1.VirtualMachineInstance) []byte {
	t.Helper()
	b, err := json.Marshal(vmi)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeISO makes a NoCloud ISO with the given files in a fresh directory.
func writeISO(t *testing.T, files map[string]string) string {
	t.Helper()
	iso := &ISO{Label: NoCloudLabel, Files: map[string][]byte{}}
	for n, c := range files {
		iso.Files[n] = []byte(c)
	}
	b, err := iso.Encode()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "noCloud.iso")
	if err := os.WriteFile(p, b, 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

func preBoot(t *testing.T, h *Handler, vmi *kubevirtv1.VirtualMachineInstance, iso string) error {
	t.Helper()
	conn, err := sdktest.Dial(sdktest.StartLauncher(t, "cloudinit-network", h))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = hooksv1alpha1.NewLauncherHookServiceClient(conn).PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{
		Vmi:       vmiJSON(t, vmi),
		Artifacts: &hooksv1alpha1.BootArtifacts{CloudInitIso: iso, EphemeralDiskDir: filepath.Dir(iso)},
	})
	return err
}

func TestCloudInitNetworkConfigFromNetworkStatus(t *testing.T) {
	statuses, err := ParseNetworkStatus([]byte(networkStatus))
	if err != nil {
		t.Fatal(err)
	}
	eths, err := EthernetsFor(vmiWithNetworks(nil), statuses, Prefixes{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := MergeNetworkConfig(nil, eths)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != wantRedConfig {
		t.Fatalf("network-config:\n%s\nwant:\n%s", got, wantRedConfig)
	}
}

func TestNetworkConfigMapping(t *testing.T) {
	cases := []struct {
		name   string
		vmi    *kubevirtv1.VirtualMachineInstance
		status string
		want   map[string]Ethernet
	}{
		{
			name: "VMI interface MAC wins over the Pod's",
			vmi: func() *kubevirtv1.VirtualMachineInstance {
				v := vmiWithNetworks(nil)
				v.Spec.Domain.Devices.Interfaces[1].MacAddress = "02:00:00:00:00:99"
				return v
			}(),
			status: `[{"name":"ns1/red","interface":"net1","ips":["10.1.0.2/16"],"mac":"02:ab:00:00:00:01"}]`,
			want:   map[string]Ethernet{"red": {MAC: "02:00:00:00:00:99", Addresses: []string{"10.1.0.2/16"}}},
		},
		{
			name:   "default secondary network gets the default routes",
			vmi:    vmiWithNetworks(nil),
			status: `[{"name":"red","interface":"net1","ips":["10.1.0.2"],"mac":"02:ab:00:00:00:01","default":true,"gateway":["10.1.0.1","fd00::1"]}]`,
			want:   map[string]Ethernet{"red": {MAC: "02:ab:00:00:00:01", Addresses: []string{"10.1.0.2/24"}, Gateway4: "10.1.0.1", Gateway6: "fd00::1"}},
		},
		{
			name:   "network without addresses is left to the guest",
			vmi:    vmiWithNetworks(nil),
			status: `[{"name":"ns1/red","interface":"net1","mac":"02:ab:00:00:00:01"}]`,
			want:   map[string]Ethernet{},
		},
		{
			name:   "bare VMI: every non-default status by Pod interface",
			vmi:    &kubevirtv1.VirtualMachineInstance{},
			status: networkStatus,
			want: map[string]Ethernet{"pod7b1a2c": {MAC: "02:ab:00:00:00:01", Addresses: []string{"192.168.10.5/24", "fd10::5/64"},
				Nameservers: []string{"192.168.10.1"}, Search: []string{"red.example.com"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			statuses, err := ParseNetworkStatus([]byte(tc.status))
			if err != nil {
				t.Fatal(err)
			}
			got, err := EthernetsFor(tc.vmi, statuses, Prefixes{})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(tc.want)
			if string(a) != string(b) {
				t.Fatalf("ethernets = %s, want %s", a, b)
			}
		})
	}
}

func TestPreBootWritesNetworkConfigIntoNoCloudISO(t *testing.T) {
	iso := writeISO(t, map[string]string{FileUserData: "#cloud-config\npassword: x\n", FileMetaData: "instance-id: vm1\n"})
	before, err := os.Open(iso)
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	oldImage, err := ReadISO(iso)
	if err != nil {
		t.Fatal(err)
	}
	if err := preBoot(t, New(Options{}), vmiWithNetworks(map[string]string{NetworkStatusAnnotation: networkStatus}), iso); err != nil {
		t.Fatal(err)
	}
	got, err := ReadISO(iso)
	if err != nil {
		t.Fatal(err)
	}
	if got.Label != NoCloudLabel {
		t.Errorf("label = %q, want %q", got.Label, NoCloudLabel)
	}
	if string(got.Files[FileUserData]) != "#cloud-config\npassword: x\n" || string(got.Files[FileMetaData]) != "instance-id: vm1\n" {
		t.Errorf("user-data or meta-data changed: %q %q", got.Files[FileUserData], got.Files[FileMetaData])
	}
	if string(got.Files[FileNetworkConfig]) != wantRedConfig {
		t.Errorf("network-config:\n%s\nwant:\n%s", got.Files[FileNetworkConfig], wantRedConfig)
	}
	if fi, err := os.Stat(iso); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("ISO mode = %v, %v; want 0640 kept", fi.Mode(), err)
	}
	// Replaced, not rewritten in place: a reader holding the old file
	// still sees the old image whole.
	old, err := readISOFrom(before)
	if err != nil {
		t.Fatalf("old image through an earlier descriptor: %v", err)
	}
	if _, ok := old.Files[FileNetworkConfig]; ok || len(old.Files) != len(oldImage.Files) {
		t.Errorf("earlier descriptor sees %v, want the old image", old.Files)
	}
}

func TestPreBootIsIdempotent(t *testing.T) {
	iso := writeISO(t, map[string]string{FileUserData: "#cloud-config\n", FileMetaData: "instance-id: vm1\n"})
	vmi := vmiWithNetworks(map[string]string{NetworkStatusAnnotation: networkStatus})
	h := New(Options{})
	if err := preBoot(t, h, vmi, iso); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(iso)
	if err != nil {
		t.Fatal(err)
	}
	firstInfo, _ := os.Stat(iso)
	if err := preBoot(t, h, vmi, iso); err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(iso)
	if err != nil {
		t.Fatal(err)
	}
	secondInfo, _ := os.Stat(iso)
	if string(first) != string(second) || !os.SameFile(firstInfo, secondInfo) {
		t.Fatal("second PreBoot replaced an ISO that was already up to date")
	}
}

func TestPreBootKeepsExistingNetworkData(t *testing.T) {
	existing := "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n  red:\n    dhcp4: true\n"
	iso := writeISO(t, map[string]string{FileUserData: "#cloud-config\n", FileMetaData: "instance-id: vm1\n", FileNetworkConfig: existing})
	if err := preBoot(t, New(Options{}), vmiWithNetworks(map[string]string{NetworkStatusAnnotation: networkStatus}), iso); err != nil {
		t.Fatal(err)
	}
	got, err := ReadISO(iso)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Version   int                       `json:"version"`
		Ethernets map[string]map[string]any `json:"ethernets"`
	}
	if err := yaml.Unmarshal(got.Files[FileNetworkConfig], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Version != 2 || cfg.Ethernets["eth0"]["dhcp4"] != true {
		t.Errorf("the VMI's own eth0 entry was lost:\n%s", got.Files[FileNetworkConfig])
	}
	if _, dhcp := cfg.Ethernets["red"]["dhcp4"]; dhcp || cfg.Ethernets["red"]["addresses"] == nil {
		t.Errorf("the red entry was not replaced by the static one:\n%s", got.Files[FileNetworkConfig])
	}
}

func TestPreBootRejectsVersion1NetworkConfig(t *testing.T) {
	iso := writeISO(t, map[string]string{FileMetaData: "instance-id: vm1\n", FileNetworkConfig: "version: 1\nconfig:\n- type: physical\n  name: eth0\n"})
	err := preBoot(t, New(Options{}), vmiWithNetworks(map[string]string{NetworkStatusAnnotation: networkStatus}), iso)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("got %v, want FailedPrecondition about version 1", err)
	}
}

func TestPreBootWithoutISOOrStatusChangesNothing(t *testing.T) {
	iso := writeISO(t, map[string]string{FileMetaData: "instance-id: vm1\n"})
	before, _ := os.Stat(iso)
	cases := map[string]struct {
		vmi *kubevirtv1.VirtualMachineInstance
		iso string
	}{
		"no cloud-init ISO":        {vmiWithNetworks(map[string]string{NetworkStatusAnnotation: networkStatus}), ""},
		"no network status":        {vmiWithNetworks(nil), iso},
		"only the cluster network": {vmiWithNetworks(map[string]string{NetworkStatusAnnotation: `[{"name":"kindnet","interface":"eth0","ips":["10.244.0.7"],"mac":"0a:58:0a:f4:00:07","default":true}]`}), iso},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := preBoot(t, New(Options{}), tc.vmi, tc.iso); err != nil {
				t.Fatal(err)
			}
			after, _ := os.Stat(iso)
			if !os.SameFile(before, after) {
				t.Fatal("ISO replaced")
			}
		})
	}
}

func TestNetworkStatusSourcePriority(t *testing.T) {
	file := filepath.Join(t.TempDir(), "network-status")
	if err := os.WriteFile(file, []byte(`[{"name":"from-file"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	vmi := vmiWithNetworks(map[string]string{NetworkStatusAnnotation: `[{"name":"from-annotation"}]`})
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"file first", Options{StatusFile: file, StatusJSON: `[{"name":"from-env"}]`}, "from-file"},
		{"missing file falls through to the environment", Options{StatusFile: file + ".missing", StatusJSON: `[{"name":"from-env"}]`}, "from-env"},
		{"annotation last", Options{}, "from-annotation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, _, err := New(tc.opts).networkStatus(&sdk.PreBootRequest{VMI: vmi})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), tc.want) {
				t.Fatalf("status = %s, want %s", raw, tc.want)
			}
		})
	}
}

// KubeVirt builds the ISO with genisoimage (Rock Ridge and Joliet names);
// the handler must read such an image and keep its files.
func TestPreBootReadsGenisoimageISO(t *testing.T) {
	genisoimage, err := exec.LookPath("genisoimage")
	if err != nil {
		t.Skip("genisoimage is not installed; the ISOs of the other tests come from the Go writer")
	}
	src := t.TempDir()
	for n, c := range map[string]string{FileUserData: "#cloud-config\n", FileMetaData: "instance-id: vm1\n"} {
		if err := os.WriteFile(filepath.Join(src, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	iso := filepath.Join(t.TempDir(), "noCloud.iso")
	if out, err := exec.Command(genisoimage, "-output", iso, "-volid", "cidata", "-joliet", "-rock", "-quiet", src).CombinedOutput(); err != nil {
		t.Fatalf("genisoimage: %v\n%s", err, out)
	}
	if err := preBoot(t, New(Options{}), vmiWithNetworks(map[string]string{NetworkStatusAnnotation: networkStatus}), iso); err != nil {
		t.Fatal(err)
	}
	got, err := ReadISO(iso)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Files[FileUserData]) != "#cloud-config\n" || string(got.Files[FileNetworkConfig]) != wantRedConfig {
		t.Fatalf("files after PreBoot: %q", got.Files)
	}
}

func TestCloudInitNetworkPassesLauncherContract(t *testing.T) {
	iso := writeISO(t, map[string]string{FileMetaData: "instance-id: vm1\n"})
	socket := sdktest.StartLauncher(t, "cloudinit-network", New(Options{}))
	sdktest.RunLauncherContract(t, socket, sdktest.LauncherContract{
		Permitted: []string{sdk.HookPreBoot},
		VMI:       vmiJSON(t, vmiWithNetworks(map[string]string{NetworkStatusAnnotation: networkStatus})),
		Artifacts: &hooksv1alpha1.BootArtifacts{CloudInitIso: iso, EphemeralDiskDir: filepath.Dir(iso)},
	})
}

// The contract's default ISO, the stand-in NoCloud ISO, is one the sample
// reads and rewrites.
func TestCloudInitNetworkPassesLauncherContractOnTheStandInISO(t *testing.T) {
	socket := sdktest.StartLauncher(t, "cloudinit-network", New(Options{}))
	results := sdktest.RunChecks(t.Context(), dialContract(t, socket), sdktest.LauncherChecks(sdktest.LauncherContract{
		Permitted: []string{sdk.HookPreBoot},
		VMI:       vmiJSON(t, vmiWithNetworks(map[string]string{NetworkStatusAnnotation: networkStatus})),
	}))
	for _, r := range results {
		t.Log(r)
		if r.Status != sdktest.Pass {
			t.Errorf("%s", r)
		}
		if r.Check == "PreBoot/AtomicWrites" && !strings.Contains(r.Detail, "noCloud.iso rewritten") {
			t.Errorf("the sample did not rewrite the stand-in ISO: %s", r)
		}
	}
}

func dialContract(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := sdktest.Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
