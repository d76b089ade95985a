// SPDX-License-Identifier: Apache-2.0

package socketpath

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// CheckShape checks, without looking at the file system, the shape every
// socket path of the contract has, sidecar and node hook sockets alike: at
// most v1alpha1.MaxSocketPathLength bytes (sun_path), no control character
// (a byte below 0x20, or 0x7f: a NUL would end the path connect(2) is
// given), no "..", no "." component, no repeated and no trailing "/".
// Sockets are dialed one component at a time (see the package
// documentation), and a "." component would be refused there: this refuses
// it first, and a control character too, which no dial could reach. It is
// the one implementation of the rule: admission (validation.SocketPath),
// the SDK when it creates a socket, and Roots before it dials all apply
// it.
//
// The error reads as the end of a sentence about the path, for example
// "must not contain '..'"; it never holds the path, so the caller quotes
// it (%q) where it names it. For a path that is too long it wraps
// ErrTooLong.
func CheckShape(path string) error {
	if len(path) > v1alpha1.MaxSocketPathLength {
		return tooLongError(len(path))
	}
	if i := strings.IndexFunc(path, isControl); i >= 0 {
		return fmt.Errorf("must not contain a control character (byte 0x%02x at offset %d)", path[i], i)
	}
	switch {
	case strings.Contains(path, ".."):
		return fmt.Errorf("must not contain '..'")
	case slices.Contains(strings.Split(path, "/"), "."):
		return fmt.Errorf("must not contain a '.' path component")
	case strings.Contains(path, "//"):
		return fmt.Errorf("must not contain a repeated '/'")
	case strings.HasSuffix(path, "/"):
		return fmt.Errorf("must not end with '/'")
	}
	return nil
}

// isControl reports the bytes CheckShape refuses: the C0 control
// characters and DEL. Bytes of multi-byte UTF-8 characters are all 0x80 or
// above, so a rune-wise search finds exactly these bytes.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// ErrTooLong is wrapped by the error of CheckShape for a path longer than
// v1alpha1.MaxSocketPathLength bytes.
var ErrTooLong = errors.New("socket path too long")

// tooLongError is the error of CheckShape for a path of that many bytes.
type tooLongError int

func (n tooLongError) Error() string {
	return fmt.Sprintf("is %d bytes long, more than the %d a Unix socket path may have", int(n), v1alpha1.MaxSocketPathLength)
}

func (tooLongError) Is(target error) bool { return target == ErrTooLong }
