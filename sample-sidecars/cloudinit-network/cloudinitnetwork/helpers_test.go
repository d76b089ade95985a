// SPDX-License-Identifier: Apache-2.0

package cloudinitnetwork

import (
	"os"

	"github.com/kdomanski/iso9660"
)

// readISOFrom reads an image through an already open descriptor.
func readISOFrom(f *os.File) (*ISO, error) {
	img, err := iso9660.OpenImage(f)
	if err != nil {
		return nil, err
	}
	root, err := img.RootDir()
	if err != nil {
		return nil, err
	}
	out := &ISO{Files: map[string][]byte{}}
	return out, readDir(root, "", out.Files)
}
