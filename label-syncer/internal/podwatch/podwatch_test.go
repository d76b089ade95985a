// SPDX-License-Identifier: Apache-2.0

package podwatch

import (
	"testing"
)

func TestFullOnlyWhenTheContextAsks(t *testing.T) {
	if Full(t.Context()) {
		t.Fatal("a plain context asks for a full Pod watch")
	}
	if !Full(WithFull(t.Context())) {
		t.Fatal("WithFull does not ask for a full Pod watch")
	}
}
