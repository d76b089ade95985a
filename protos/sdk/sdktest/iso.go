// SPDX-License-Identifier: Apache-2.0

package sdktest

import (
	"bytes"
	"fmt"
	"sort"
	"sync"

	"github.com/kdomanski/iso9660"
)

// StandInISOName is the file name of the stand-in cloud-init ISO the
// PreBoot checks give a sidecar when the contract names no ISO.
const StandInISOName = "noCloud.iso"

// StandInISOFiles are the files of the stand-in ISO, a NoCloud data source
// (volume label "cidata") as KubeVirt generates one for a VMI with a
// cloudInitNoCloud volume.
var StandInISOFiles = map[string]string{
	"meta-data": "instance-id: testvmi.default\nlocal-hostname: testvmi\n",
	"user-data": "#cloud-config\n",
}

var standIn struct {
	once  sync.Once
	image []byte
	err   error
}

// standInISO returns the image of the stand-in ISO, built once. The ISO
// writer stages the files in a temporary directory of its own, which it
// removes.
func standInISO() ([]byte, error) {
	standIn.once.Do(func() { standIn.image, standIn.err = noCloudImage(StandInISOFiles) })
	return standIn.image, standIn.err
}

func noCloudImage(files map[string]string) ([]byte, error) {
	w, err := iso9660.NewWriter()
	if err != nil {
		return nil, fmt.Errorf("stand-in cloud-init ISO: %w", err)
	}
	defer func() { _ = w.Cleanup() }()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := w.AddFile(bytes.NewReader([]byte(files[n])), n); err != nil {
			return nil, fmt.Errorf("stand-in cloud-init ISO: add %s: %w", n, err)
		}
	}
	var buf bytes.Buffer
	if err := w.WriteTo(&buf, "cidata"); err != nil {
		return nil, fmt.Errorf("stand-in cloud-init ISO: %w", err)
	}
	return buf.Bytes(), nil
}
