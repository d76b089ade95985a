// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package domainrun

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"libvirt.org/go/libvirt"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

func s(v string) *hooksv1alpha1.StringParam { return &hooksv1alpha1.StringParam{Value: &v} }
func u(v uint64) *hooksv1alpha1.Uint64Param { return &hooksv1alpha1.Uint64Param{Value: &v} }
func i(v int32) *hooksv1alpha1.IntParam     { return &hooksv1alpha1.IntParam{Value: &v} }
func l(v ...string) *hooksv1alpha1.StringListParam {
	return &hooksv1alpha1.StringListParam{Values: v}
}

// libvirt12_5 is the release the Go binding was generated from: it knows
// every parameter.
var libvirt12_5 = V(12, 5, 0)

// debianLibvirt is the libvirt of Debian 12 and of the test containers.
var debianLibvirt = V(9, 0, 0)

// everyParam sets every MigrationParams field (bandwidth.postcopy equal
// to bandwidth, one compression method: what the binding can send).
func everyParam() *hooksv1alpha1.MigrationParams {
	return &hooksv1alpha1.MigrationParams{
		MigrateUri:               s("tcp://dst"),
		DestinationName:          s("vm-b"),
		DestinationXml:           s("<domain/>"),
		PersistentXml:            s("<domain><name>p</name></domain>"),
		GraphicsUri:              s("spice://dst"),
		ListenAddress:            s("0.0.0.0"),
		DisksUri:                 s("unix:///run/disks.sock"),
		TlsDestination:           s("dst.example"),
		Bandwidth:                u(100),
		BandwidthPostcopy:        u(100),
		BandwidthAvailSwitchover: u(2000),
		CompressionXbzrleCache:   u(1 << 26),
		DisksPort:                i(49153),
		CompressionMtLevel:       i(1),
		CompressionMtThreads:     i(2),
		CompressionMtDthreads:    i(3),
		CompressionZlibLevel:     i(4),
		CompressionZstdLevel:     i(5),
		AutoConvergeInitial:      i(20),
		AutoConvergeIncrement:    i(10),
		ParallelConnections:      i(8),
		MigrateDisks:             l("vda", "vdb"),
		MigrateDisksDetectZeroes: l("vda"),
		MigrateDisksTargetZero:   l("vdb"),
		Compression:              l("mt"),
	}
}

// everyBindingParam is everyParam as the binding takes it.
func everyBindingParam() *libvirt.DomainMigrateParameters {
	return &libvirt.DomainMigrateParameters{
		URISet: true, URI: "tcp://dst",
		DestNameSet: true, DestName: "vm-b",
		DestXMLSet: true, DestXML: "<domain/>",
		PersistXMLSet: true, PersistXML: "<domain><name>p</name></domain>",
		GraphicsURISet: true, GraphicsURI: "spice://dst",
		ListenAddressSet: true, ListenAddress: "0.0.0.0",
		DisksURISet: true, DisksURI: "unix:///run/disks.sock",
		TLSDestinationSet: true, TLSDestination: "dst.example",
		BandwidthSet: true, Bandwidth: 100,
		BandwidthAvailSwitchoverSet: true, BandwidthAvailSwitchover: 2000,
		CompressionXBZRLECacheSet: true, CompressionXBZRLECache: 1 << 26,
		DisksPortSet: true, DisksPort: 49153,
		CompressionMTLevelSet: true, CompressionMTLevel: 1,
		CompressionMTThreadsSet: true, CompressionMTThreads: 2,
		CompressionMTDThreadsSet: true, CompressionMTDThreads: 3,
		CompressionZlibLevelSet: true, CompressionZlibLevel: 4,
		CompressionZstdLevelSet: true, CompressionZstdLevel: 5,
		AutoConvergeInitialSet: true, AutoConvergeInitial: 20,
		AutoConvergeIncrementSet: true, AutoConvergeIncrement: 10,
		ParallelConnectionsSet: true, ParallelConnections: 8,
		MigrateDisksSet: true, MigrateDisks: []string{"vda", "vdb"},
		MigrateDisksDetectZeroesSet: true, MigrateDisksDetectZeroesList: []string{"vda"},
		MigrateDisksTargetZeroSet: true, MigrateDisksTargetZero: []string{"vdb"},
		CompressionSet: true, Compression: "mt",
	}
}

func TestMigrateParametersCarriesEveryParameterTheConnectedLibvirtKnows(t *testing.T) {
	in, want := everyParam(), everyBindingParam()
	got, err := MigrateParameters(in, libvirt12_5)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MigrateParameters:\n got %+v\nwant %+v", got, want)
	}
	// Every field of the proto was given above: a new parameter added to
	// the contract without a conversion fails here.
	n := 0
	in.ProtoReflect().Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool { n++; return true })
	if fields := in.ProtoReflect().Descriptor().Fields().Len(); n != fields {
		t.Fatalf("test sets %d of %d MigrationParams fields", n, fields)
	}
}

func TestMigrateParametersTreatsRemovedParametersAsUnset(t *testing.T) {
	in := &hooksv1alpha1.MigrationParams{
		MigrateUri:          &hooksv1alpha1.StringParam{},
		Bandwidth:           &hooksv1alpha1.Uint64Param{},
		ParallelConnections: &hooksv1alpha1.IntParam{},
		MigrateDisks:        &hooksv1alpha1.StringListParam{},
		Compression:         &hooksv1alpha1.StringListParam{},
	}
	for name, p := range map[string]*hooksv1alpha1.MigrationParams{"nil": nil, "empty wrappers": in} {
		got, err := MigrateParameters(p, debianLibvirt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, &libvirt.DomainMigrateParameters{}) {
			t.Fatalf("%s: got %+v, want no parameter set", name, got)
		}
	}
}

func TestMigrateParametersRefusesParametersNewerThanTheConnectedLibvirt(t *testing.T) {
	cases := []struct {
		param  string
		since  string
		params *hooksv1alpha1.MigrationParams
	}{
		{"compression.zlib.level", "9.4.0", &hooksv1alpha1.MigrationParams{CompressionZlibLevel: i(1)}},
		{"compression.zstd.level", "9.4.0", &hooksv1alpha1.MigrationParams{CompressionZstdLevel: i(1)}},
		{"migrate_disks_detect_zeroes", "10.9.0", &hooksv1alpha1.MigrationParams{MigrateDisksDetectZeroes: l("vda")}},
		{"migrate_disks_target_zero", "12.2.0", &hooksv1alpha1.MigrationParams{MigrateDisksTargetZero: l("vda")}},
		{"bandwidth.avail.switchover", "11.1.0", &hooksv1alpha1.MigrationParams{BandwidthAvailSwitchover: u(1)}},
	}
	for _, tc := range cases {
		t.Run(tc.param, func(t *testing.T) {
			// Alongside a parameter 9.0 knows, which must not hide the error.
			p := proto.Clone(tc.params).(*hooksv1alpha1.MigrationParams)
			p.ParallelConnections = i(2)
			_, err := MigrateParameters(p, debianLibvirt)
			if !errors.Is(err, ErrUnsupportedParam) {
				t.Fatalf("error = %v, want ErrUnsupportedParam", err)
			}
			for _, want := range []string{`"` + tc.param + `"`, tc.since, "9.0.0"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not mention %s", err, want)
				}
			}
			if _, err := MigrateParameters(p, V(12, 2, 0)); err != nil {
				t.Fatalf("libvirt 12.2.0 refused %s: %v", tc.param, err)
			}
		})
	}
}

func TestMigrateParametersReportsEveryUnsupportedParameter(t *testing.T) {
	_, err := MigrateParameters(&hooksv1alpha1.MigrationParams{
		CompressionZlibLevel: i(1), CompressionZstdLevel: i(1), ParallelConnections: i(2),
	}, V(5, 1, 0))
	for _, want := range []string{"compression.zlib.level", "compression.zstd.level", "parallel.connections"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v does not name %s", err, want)
		}
	}
}

func TestMigrateParametersRefusesMoreThanOneCompressionMethod(t *testing.T) {
	_, err := MigrateParameters(&hooksv1alpha1.MigrationParams{Compression: l("mt", "xbzrle")}, libvirt12_5)
	if !errors.Is(err, ErrUnsupportedParam) || !strings.Contains(err.Error(), `"compression"`) || !strings.Contains(err.Error(), "xbzrle") {
		t.Fatalf("error = %v, want ErrUnsupportedParam naming compression and the methods", err)
	}
}

func TestMigrateParametersSendsBandwidthPostcopyOnlyEqualToBandwidth(t *testing.T) {
	cases := []struct {
		name      string
		lib       Version
		pre, post *hooksv1alpha1.Uint64Param
		want      uint64 // the one value the binding sends for both
		wantErr   string
	}{
		{name: "bandwidth alone caps post-copy alike", lib: debianLibvirt, pre: u(50), want: 50},
		{name: "equal values", lib: debianLibvirt, pre: u(50), post: u(50), want: 50},
		{name: "post-copy alone", lib: debianLibvirt, post: u(50), wantErr: `"bandwidth.postcopy" (50 MiB/s) cannot be sent without "bandwidth"`},
		{name: "different values", lib: debianLibvirt, pre: u(50), post: u(80), wantErr: `"bandwidth.postcopy" (80 MiB/s) differs from "bandwidth" (50 MiB/s)`},
		{name: "libvirt without bandwidth.postcopy", lib: V(5, 0, 0), pre: u(50), wantErr: `"bandwidth.postcopy" needs libvirt 5.1.0`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MigrateParameters(&hooksv1alpha1.MigrationParams{Bandwidth: tc.pre, BandwidthPostcopy: tc.post}, tc.lib)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrUnsupportedParam) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.BandwidthSet || got.Bandwidth != tc.want {
				t.Fatalf("Bandwidth = %v/%d, want set/%d", got.BandwidthSet, got.Bandwidth, tc.want)
			}
		})
	}
}

func TestVersionReadsLikeLibvirtReleases(t *testing.T) {
	cases := map[Version]string{V(9, 0, 0): "9.0.0", V(12, 5, 0): "12.5.0", V(1, 3, 4): "1.3.4", Version(10009002): "10.9.2"}
	for v, want := range cases {
		if v.String() != want {
			t.Errorf("Version(%d) = %s, want %s", uint32(v), v, want)
		}
	}
}

func TestMigrateFlagsRefusesBitsLibvirtCannotTake(t *testing.T) {
	want := libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER | libvirt.MIGRATE_PARALLEL
	if got, err := MigrateFlags(uint64(want)); err != nil || got != want {
		t.Fatalf("MigrateFlags(%#x) = %#x, %v", uint64(want), got, err)
	}
	if _, err := MigrateFlags(1 << 32); err == nil || !strings.Contains(err.Error(), "0x100000000") {
		t.Fatalf("MigrateFlags(1<<32) error = %v, want one naming the flags", err)
	}
}

func TestMigrateParametersRefusesCompressionMethodsNewerThanTheConnectedLibvirt(t *testing.T) {
	for _, method := range []string{"zlib", "zstd"} {
		p := &hooksv1alpha1.MigrationParams{Compression: l(method)}
		_, err := MigrateParameters(p, debianLibvirt)
		if !errors.Is(err, ErrUnsupportedParam) || !strings.Contains(err.Error(), `"`+method+`"`) || !strings.Contains(err.Error(), "9.4.0") {
			t.Fatalf("%s on libvirt 9.0.0: error %v, want ErrUnsupportedParam naming the method and 9.4.0", method, err)
		}
		if got, err := MigrateParameters(p, V(9, 4, 0)); err != nil || got.Compression != method {
			t.Fatalf("%s on libvirt 9.4.0: %+v, %v", method, got, err)
		}
	}
	for _, method := range []string{"xbzrle", "mt"} {
		if got, err := MigrateParameters(&hooksv1alpha1.MigrationParams{Compression: l(method)}, debianLibvirt); err != nil || got.Compression != method {
			t.Fatalf("%s on libvirt 9.0.0: %+v, %v", method, got, err)
		}
	}
}
