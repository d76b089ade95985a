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
// most v1alpha1.MaxSocketPathLength bytes (sun_path), no "..", no "."
// component, no repeated and no trailing "/". Sockets are dialed one
// component at a time (see the package documentation), and a "." component
// would be refused there: this refuses it first. It is the one
// implementation of the rule: admission (validation.SocketPath), the SDK
// when it creates a socket, and Roots before it dials all apply it.
//
// The error reads as the end of a sentence about the path, for example
// "must not contain '..'". For a path that is too long it wraps ErrTooLong.
func CheckShape(path string) error {
	switch {
	case len(path) > v1alpha1.MaxSocketPathLength:
		return tooLongError(len(path))
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

// ErrTooLong is wrapped by the error of CheckShape for a path longer than
// v1alpha1.MaxSocketPathLength bytes.
var ErrTooLong = errors.New("socket path too long")

// tooLongError is the error of CheckShape for a path of that many bytes.
type tooLongError int

func (n tooLongError) Error() string {
	return fmt.Sprintf("is %d bytes long, more than the %d a Unix socket path may have", int(n), v1alpha1.MaxSocketPathLength)
}

func (tooLongError) Is(target error) bool { return target == ErrTooLong }
