// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package domainrun

import (
	"os"
	"path/filepath"
	"testing"

	"libvirt.org/go/libvirt"
)

// The migration abort travels on a connection of its own to the URI the
// domain's connection uses, and falls back to the domain itself only when
// the domain cannot be found there. libvirt's built-in test driver stands
// in for a daemon: every connection to test:///default sees its "test"
// domain, while each connection to a test driver file starts from the
// file and does not see domains another connection created.
func TestMigrationAbortUsesAConnectionOfItsOwn(t *testing.T) {
	shared := testDomain(t, "test:///default", "")
	own, release := abortHandle(shared)
	if own == shared {
		t.Fatal("the abort would share the migrating domain's connection")
	}
	want, _ := shared.GetUUIDString()
	if got, err := own.GetUUIDString(); err != nil || got != want {
		t.Fatalf("abort handle is domain %q (%v), want %q", got, err, want)
	}
	release()

	node := filepath.Join(t.TempDir(), "node.xml")
	if err := os.WriteFile(node, []byte("<node/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	private := testDomain(t, "test://"+node, "<domain type='test'><name>transient</name><memory>1024</memory><os><type>hvm</type></os></domain>")
	fallback, release := abortHandle(private)
	defer release()
	if fallback != private {
		t.Fatal("with the domain not found on a second connection, the abort did not fall back to the domain's own")
	}
}

// testDomain connects to uri and returns its domain "test", or the
// transient domain created from xml when xml is given.
func testDomain(t *testing.T, uri, xml string) *libvirt.Domain {
	t.Helper()
	conn, err := libvirt.NewConnect(uri)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Close() })
	var dom *libvirt.Domain
	if xml == "" {
		dom, err = conn.LookupDomainByName("test")
	} else {
		dom, err = conn.DomainCreateXML(xml, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dom.Free() })
	return dom
}
