package podwatch

import (
	"context"
	"testing"
)

func TestFullOnlyWhenTheContextAsks(t *testing.T) {
	if Full(context.Background()) {
		t.Fatal("a plain context asks for a full Pod watch")
	}
	if !Full(WithFull(context.Background())) {
		t.Fatal("WithFull does not ask for a full Pod watch")
	}
}
