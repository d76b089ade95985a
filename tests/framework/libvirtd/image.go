// SPDX-License-Identifier: Apache-2.0

package libvirtd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/testcontainers/testcontainers-go"
)

// requireLocalImage fails when image is not in the local Docker engine:
// testcontainers would otherwise try to pull it, which cannot work here and
// hides the real fix (run hack/build-libvirtd-image.sh).
func requireLocalImage(ctx context.Context, image string) error {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("libvirtd image %s is not available locally (build it with hack/build-libvirtd-image.sh or `make setup`): %w", image, err)
	}
	return nil
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
