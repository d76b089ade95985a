// SPDX-License-Identifier: Apache-2.0

package cloudinitnetwork

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/kdomanski/iso9660"
)

// NoCloudLabel is the volume label cloud-init looks for.
const NoCloudLabel = "cidata"

// NoCloud file names.
const (
	FileUserData      = "user-data"
	FileMetaData      = "meta-data"
	FileNetworkConfig = "network-config"
)

// ISO is the content of a cloud-init ISO: its volume label and its files by
// path.
type ISO struct {
	Label string
	Files map[string][]byte
}

// ReadISO reads every file of the ISO at p.
func ReadISO(p string) (*ISO, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := iso9660.OpenImage(f)
	if err != nil {
		return nil, fmt.Errorf("open ISO %s: %w", p, err)
	}
	label, err := img.Label()
	if err != nil {
		return nil, fmt.Errorf("ISO %s: volume label: %w", p, err)
	}
	root, err := img.RootDir()
	if err != nil {
		return nil, fmt.Errorf("ISO %s: root directory: %w", p, err)
	}
	out := &ISO{Label: strings.TrimSpace(label), Files: map[string][]byte{}}
	if err := readDir(root, "", out.Files); err != nil {
		return nil, fmt.Errorf("ISO %s: %w", p, err)
	}
	return out, nil
}

func readDir(dir *iso9660.File, prefix string, files map[string][]byte) error {
	children, err := dir.GetChildren()
	if err != nil {
		return err
	}
	for _, c := range children {
		name := path.Join(prefix, isoName(c.Name()))
		if c.IsDir() {
			if err := readDir(c, name, files); err != nil {
				return err
			}
			continue
		}
		b, err := io.ReadAll(c.Reader())
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		files[name] = b
	}
	return nil
}

// isoName turns an ISO 9660 identifier into the name Linux shows for it
// without Rock Ridge ("USER-DATA;1" -> "user-data"); Rock Ridge names come
// through unchanged.
func isoName(n string) string {
	n, _, _ = strings.Cut(n, ";")
	n = strings.TrimSuffix(n, ".")
	if strings.ToUpper(n) == n {
		n = strings.ToLower(n)
	}
	return n
}

// Encode renders the ISO image.
func (iso *ISO) Encode() ([]byte, error) {
	w, err := iso9660.NewWriter()
	if err != nil {
		return nil, fmt.Errorf("ISO writer (needs a writable temporary directory): %w", err)
	}
	defer func() { _ = w.Cleanup() }() // removes the writer's staging files; the ISO is written or its error returned
	names := make([]string, 0, len(iso.Files))
	for n := range iso.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := w.AddFile(bytes.NewReader(iso.Files[n]), n); err != nil {
			return nil, fmt.Errorf("add %s: %w", n, err)
		}
	}
	var buf bytes.Buffer
	if err := w.WriteTo(&buf, iso.Label); err != nil {
		return nil, fmt.Errorf("write ISO: %w", err)
	}
	return buf.Bytes(), nil
}
