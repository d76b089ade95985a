//go:build cgo

package libvirt

import (
	"testing"

	golibvirt "libvirt.org/go/libvirt"
)

// The migration abort travels on a connection of its own to the URI the
// domain's connection uses, and falls back to the domain itself only when
// no such connection can be opened. libvirt's built-in test driver stands
// in for a daemon: every connection to test:///default sees its "test"
// domain.
func TestMigrationAbortUsesAConnectionOfItsOwn(t *testing.T) {
	conn, err := golibvirt.NewConnect("test:///default")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dom, err := conn.LookupDomainByName("test")
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	uuid, err := dom.GetUUIDString()
	if err != nil {
		t.Fatal(err)
	}

	own, release := abortHandle(dom, "test:///default", uuid)
	if own == dom {
		t.Fatal("the abort would share the migrating domain's connection")
	}
	if got, err := own.GetUUIDString(); err != nil || got != uuid {
		t.Fatalf("abort handle is domain %q (%v), want %q", got, err, uuid)
	}
	release()

	fallback, release := abortHandle(dom, "nosuchdriver:///system", uuid)
	defer release()
	if fallback != dom {
		t.Fatal("with no second connection possible, the abort did not fall back to the domain's own")
	}
}
