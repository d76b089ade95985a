// SPDX-License-Identifier: Apache-2.0

package sdktest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// artifactDir is a temporary ephemeral disk directory holding a cloud-init
// ISO, the only place PreBoot checks let a sidecar write to: a copy of the
// contract's ISO, or else the stand-in NoCloud ISO.
type artifactDir struct {
	dir       string
	artifacts *hooksv1alpha1.BootArtifacts
	// noISO says why PreBoot is given no cloud-init ISO; empty when it is
	// given one.
	noISO string
}

func newArtifactDir(c LauncherContract) (*artifactDir, error) {
	dir, err := os.MkdirTemp("", "kvp-conformance-")
	if err != nil {
		return nil, fmt.Errorf("temporary artifact directory: %w", err)
	}
	a := &artifactDir{dir: dir, artifacts: &hooksv1alpha1.BootArtifacts{EphemeralDiskDir: dir}}
	var data []byte
	name := StandInISOName
	switch src := c.Artifacts.GetCloudInitIso(); {
	case c.NoCloudInitISO:
		a.noISO = "NoCloudInitISO; in kvpctl, --no-iso"
		return a, nil
	case src != "":
		if data, err = os.ReadFile(src); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("cloud-init ISO to copy: %w", err)
		}
		name = filepath.Base(src)
	default:
		if data, err = standInISO(); err != nil {
			a.noISO = fmt.Sprintf("the stand-in could not be built: %v", err)
			return a, nil
		}
	}
	iso := filepath.Join(dir, name)
	if err := os.WriteFile(iso, data, 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("copy of the cloud-init ISO: %w", err)
	}
	a.artifacts.CloudInitIso = iso
	return a, nil
}

// unseen is the outcome of a file check that saw nothing wrong: a pass
// with detail, or a warning when PreBoot had no ISO to change, so that
// seeing nothing proves nothing.
func (a *artifactDir) unseen(format string, args ...any) outcome {
	if a.noISO != "" {
		return outcome{warning: fmt.Sprintf("PreBoot was given no cloud-init ISO (%s): a sidecar that changes only the ISO had nothing to change, so seeing no change proves nothing", a.noISO)}
	}
	return passed(format, args...)
}

func (a *artifactDir) remove() { _ = os.RemoveAll(a.dir) }

// fileState is what a reader of a boot artifact can observe.
type fileState struct {
	inode uint64
	size  int64
	sum   [sha256.Size]byte
}

type snapshot map[string]fileState

func (a *artifactDir) snapshot() (snapshot, error) {
	s := snapshot{}
	err := filepath.WalkDir(a.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		st := fileState{size: info.Size(), sum: sha256.Sum256(data)}
		if sys, ok := info.Sys().(*syscall.Stat_t); ok {
			st.inode = sys.Ino
		}
		rel, _ := filepath.Rel(a.dir, path)
		s[rel] = st
		return nil
	})
	return s, err
}

// changes lists the files that differ between two snapshots by content.
func changes(before, after snapshot) []string {
	var out []string
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			out = append(out, name+" removed")
		case a.sum != b.sum:
			out = append(out, fmt.Sprintf("%s rewritten (%d -> %d bytes)", name, b.size, a.size))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			out = append(out, name+" created")
		}
	}
	sort.Strings(out)
	return out
}

func preBoot(ctx context.Context, conn grpc.ClientConnInterface, c LauncherContract, a *artifactDir, timeout time.Duration) error {
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := hooksv1alpha1.NewLauncherHookServiceClient(conn).PreBoot(callCtx, &hooksv1alpha1.PreBootRequest{Vmi: c.VMI, Artifacts: a.artifacts})
	return err
}

// withArtifacts runs f with a fresh artifact directory.
func withArtifacts(c LauncherContract, f func(a *artifactDir) outcome) outcome {
	a, err := newArtifactDir(c)
	if err != nil {
		return failed(err)
	}
	defer a.remove()
	return f(a)
}

// watch snapshots the artifacts now and after c.Settle and returns the
// files that changed in between.
func watch(ctx context.Context, c LauncherContract, a *artifactDir) ([]string, error) {
	before, err := a.snapshot()
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(c.Settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, err := a.snapshot()
	if err != nil {
		return nil, err
	}
	return changes(before, after), nil
}

func checkPreBootNoChangeAfterReturn(c LauncherContract) Check {
	return Check{
		Name: "PreBoot/NoChangeAfterReturn",
		Rule: "PreBoot finishes its file changes before it answers: the VM may start as soon as it returns",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			return withArtifacts(c, func(a *artifactDir) outcome {
				if err := preBoot(ctx, conn, c, a, c.CallTimeout); err != nil {
					return failed(fmt.Errorf("PreBoot: %w", err))
				}
				changed, err := watch(ctx, c, a)
				if err != nil {
					return failed(err)
				}
				if len(changed) > 0 {
					return failed(fmt.Errorf("within %v after PreBoot returned OK: %s", c.Settle, strings.Join(changed, ", ")))
				}
				return a.unseen("no artifact changed within %v after the call returned", c.Settle)
			})
		},
	}
}

func checkPreBootContextHonoured(c LauncherContract) Check {
	return Check{
		Name: "PreBoot/ContextHonoured",
		Rule: "hooks that modify files honour the request context: nothing changes after a call ended at its deadline",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			return withArtifacts(c, func(a *artifactDir) outcome {
				err := preBoot(ctx, conn, c, a, c.ShortDeadline)
				code := status.Code(err)
				changed, werr := watch(ctx, c, a)
				if werr != nil {
					return failed(werr)
				}
				if len(changed) > 0 {
					return failed(fmt.Errorf("a call with a %v deadline ended %v; within %v after that: %s", c.ShortDeadline, code, c.Settle, strings.Join(changed, ", ")))
				}
				if code == codes.DeadlineExceeded || code == codes.Canceled {
					return a.unseen("a call ended at its %v deadline and no artifact changed within %v after it", c.ShortDeadline, c.Settle)
				}
				return a.unseen("answered %v within the %v deadline and no artifact changed within %v after it", code, c.ShortDeadline, c.Settle)
			})
		},
	}
}

func checkPreBootAtomicWrites(c LauncherContract) Check {
	return Check{
		Name: "PreBoot/AtomicWrites",
		Rule: "hooks replace files atomically (a temporary file renamed over the old one), so no reader sees a partial file",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			return withArtifacts(c, func(a *artifactDir) outcome {
				before, err := a.snapshot()
				if err != nil {
					return failed(err)
				}
				if err := preBoot(ctx, conn, c, a, c.CallTimeout); err != nil {
					return failed(fmt.Errorf("PreBoot: %w", err))
				}
				after, err := a.snapshot()
				if err != nil {
					return failed(err)
				}
				var inPlace, leftovers []string
				for name, b := range before {
					if n, ok := after[name]; ok && n.sum != b.sum && n.inode == b.inode {
						inPlace = append(inPlace, name)
					}
				}
				for name := range after {
					if _, ok := before[name]; !ok && looksTemporary(name, before) {
						leftovers = append(leftovers, name)
					}
				}
				var errs []error
				if len(inPlace) > 0 {
					sort.Strings(inPlace)
					errs = append(errs, fmt.Errorf("rewritten in place (same inode, new content): %s", strings.Join(inPlace, ", ")))
				}
				if len(leftovers) > 0 {
					sort.Strings(leftovers)
					errs = append(errs, fmt.Errorf("temporary files left behind: %s", strings.Join(leftovers, ", ")))
				}
				if len(errs) > 0 {
					return failed(errors.Join(errs...))
				}
				if changed := changes(before, after); len(changed) > 0 {
					return passed("replaced by rename: %s", strings.Join(changed, ", "))
				}
				return a.unseen("no artifact changed")
			})
		},
	}
}

// looksTemporary tells whether a file a PreBoot call created is the
// leftover of a write: its name says tmp, temp or ends in ~, or it carries
// the name of an artifact that was there before (".noCloud.iso.new").
// A new file of another name, such as an extra disk image, is not one.
func looksTemporary(name string, before snapshot) bool {
	base := strings.ToLower(filepath.Base(name))
	if strings.Contains(base, "tmp") || strings.Contains(base, "temp") || strings.HasSuffix(base, "~") {
		return true
	}
	for old := range before {
		if filepath.Dir(old) == filepath.Dir(name) && strings.Contains(base, strings.ToLower(filepath.Base(old))) {
			return true
		}
	}
	return false
}

func checkPreBootRepeatable(c LauncherContract) Check {
	return Check{
		Name: "PreBoot/Repeatable",
		Rule: "PreBoot may be called again after a failed start and is idempotent: a second call leaves the artifacts as the first left them",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			return withArtifacts(c, func(a *artifactDir) outcome {
				if err := preBoot(ctx, conn, c, a, c.CallTimeout); err != nil {
					return failed(fmt.Errorf("first call: %w", err))
				}
				first, err := a.snapshot()
				if err != nil {
					return failed(err)
				}
				if err := preBoot(ctx, conn, c, a, c.CallTimeout); err != nil {
					return failed(fmt.Errorf("second call: %w", err))
				}
				second, err := a.snapshot()
				if err != nil {
					return failed(err)
				}
				if changed := changes(first, second); len(changed) > 0 {
					return failed(fmt.Errorf("the second call changed the artifacts again: %s", strings.Join(changed, ", ")))
				}
				return a.unseen("the second call left the artifacts as the first did")
			})
		},
	}
}
