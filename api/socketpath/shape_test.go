// SPDX-License-Identifier: Apache-2.0

package socketpath

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// controlBytes are the bytes CheckShape refuses in a socket path: the C0
// controls and DEL.
func controlBytes() []byte {
	var out []byte
	for b := range byte(0x20) {
		out = append(out, b)
	}
	return append(out, 0x7f)
}

// hasControlByte reports whether s holds a byte of controlBytes.
func hasControlByte(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// TestCheckShapeRefusesControlCharacters: a socket path with a NUL byte, or
// any other control character (bytes below 0x20 and 0x7f), is refused by
// its shape, as a "." component is, and the error names the byte without
// carrying it. Bytes of other UTF-8 characters are not control characters.
func TestCheckShapeRefusesControlCharacters(t *testing.T) {
	for _, b := range controlBytes() {
		path := "/var/run/kubevirt-plugin/nul/hook.sock" + string([]byte{b}) + ".sock"
		t.Run(fmt.Sprintf("0x%02x", b), func(t *testing.T) {
			err := CheckShape(path)
			if err == nil {
				t.Fatalf("CheckShape(%q) accepted", path)
			}
			msg := err.Error()
			if !strings.Contains(msg, "must not contain a control character") || !strings.Contains(msg, fmt.Sprintf("0x%02x", b)) {
				t.Errorf("CheckShape(%q) = %q, want it to name the control character 0x%02x", path, msg, b)
			}
			if hasControlByte(msg) {
				t.Errorf("the error %q carries a control character", msg)
			}
		})
	}
	for _, ok := range []string{"/var/run/kubevirt-plugin/p/hôte.sock", "/var/run/kubevirt-plugin/p/\u0080x.sock", "/var/run/kubevirt-plugin/p/a b~.sock"} {
		if err := CheckShape(ok); err != nil {
			t.Errorf("CheckShape(%q) = %v, want nil", ok, err)
		}
	}
}

// TestRootsRefuseASocketWithANULBeforeLookingAtIt: Roots refuse a node
// hook socket with a NUL byte before the file system is looked at, with
// ErrRejected and an error that quotes the path.
func TestRootsRefuseASocketWithANULBeforeLookingAtIt(t *testing.T) {
	base := shortTempDir(t)
	r, err := NewRoots([]string{base})
	if err != nil {
		t.Fatal(err)
	}
	sock := base + "/nul/hook.sock\x00.sock"
	_, err = r.Check(sock)
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("Check(%q) = %v, want ErrRejected", sock, err)
	}
	if msg := err.Error(); hasControlByte(msg) || !strings.Contains(msg, `\x00`) || !strings.Contains(msg, "control character") {
		t.Fatalf("Check(%q) = %q, want the path quoted and the control character named", sock, msg)
	}
}
