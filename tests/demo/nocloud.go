package demo

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/kdomanski/iso9660"
)

// noCloud is the content of a cloud-init NoCloud ISO.
type noCloud struct {
	label string
	files map[string][]byte
}

func (n *noCloud) names() []string {
	var out []string
	for k := range n.files {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// readNoCloud reads the files at the root of the ISO at path.
func readNoCloud(path string) (*noCloud, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := iso9660.OpenImage(f)
	if err != nil {
		return nil, fmt.Errorf("open ISO %s: %w", path, err)
	}
	label, err := img.Label()
	if err != nil {
		return nil, fmt.Errorf("ISO %s: %w", path, err)
	}
	root, err := img.RootDir()
	if err != nil {
		return nil, fmt.Errorf("ISO %s: %w", path, err)
	}
	children, err := root.GetChildren()
	if err != nil {
		return nil, fmt.Errorf("ISO %s: %w", path, err)
	}
	out := &noCloud{label: strings.TrimSpace(label), files: map[string][]byte{}}
	for _, c := range children {
		if c.IsDir() {
			continue
		}
		b, err := io.ReadAll(c.Reader())
		if err != nil {
			return nil, fmt.Errorf("ISO %s: %s: %w", path, c.Name(), err)
		}
		out.files[plainName(c.Name())] = b
	}
	return out, nil
}

// plainName is the name Linux shows for an ISO 9660 identifier when the
// image has no Rock Ridge name for it ("USER-DATA;1" -> "user-data").
func plainName(n string) string {
	n, _, _ = strings.Cut(n, ";")
	n = strings.TrimSuffix(n, ".")
	if strings.ToUpper(n) == n {
		n = strings.ToLower(n)
	}
	return n
}
