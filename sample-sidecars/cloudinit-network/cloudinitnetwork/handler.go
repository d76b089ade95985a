// SPDX-License-Identifier: Apache-2.0

package cloudinitnetwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// Options configure a Handler. The network status is taken from the first
// source that has one: StatusFile, StatusJSON, the VMI's annotation.
type Options struct {
	// StatusFile is a file holding the annotation's value, typically a
	// downward API volume item. Default: none.
	StatusFile string
	// StatusJSON is the annotation's value, typically from a downward API
	// environment variable. Default: none.
	StatusJSON string
	// Prefixes apply to addresses given without a prefix length.
	Prefixes Prefixes
	// Logger: default logr.Discard().
	Logger logr.Logger
}

// Handler implements sdk.PreBootHandler.
type Handler struct {
	opts Options
}

var _ sdk.PreBootHandler = (*Handler)(nil)

// New returns a Handler.
func New(opts Options) *Handler {
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	return &Handler{opts: opts}
}

// PreBoot rewrites the network-config of req.CloudInitISO.
func (h *Handler) PreBoot(ctx context.Context, req *sdk.PreBootRequest) error {
	log := h.opts.Logger.WithValues("vmi", req.VMI.Namespace+"/"+req.VMI.Name, "iso", req.CloudInitISO)
	if req.CloudInitISO == "" {
		log.Info("VMI has no cloud-init ISO, nothing to do")
		return nil
	}
	raw, source, err := h.networkStatus(req)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "network status: %v", err)
	}
	if raw == nil {
		log.Info("no network status available, nothing to do")
		return nil
	}
	statuses, err := ParseNetworkStatus(raw)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "network status from %s: %v", source, err)
	}
	ethernets, err := EthernetsFor(req.VMI, statuses, h.opts.Prefixes)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "network status from %s: %v", source, err)
	}
	if len(ethernets) == 0 {
		log.Info("no secondary network with addresses in the network status, nothing to do", "source", source)
		return nil
	}
	iso, err := ReadISO(req.CloudInitISO)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "%v", err)
	}
	if !strings.EqualFold(iso.Label, NoCloudLabel) {
		log.Info("not a NoCloud ISO, left alone", "label", iso.Label)
		return nil
	}
	merged, err := MergeNetworkConfig(iso.Files[FileNetworkConfig], ethernets)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "%s in %s: %v", FileNetworkConfig, req.CloudInitISO, err)
	}
	if bytes.Equal(merged, iso.Files[FileNetworkConfig]) {
		log.Info("network-config already up to date")
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err // the caller gave up: do not replace the ISO now
	}
	iso.Files[FileNetworkConfig] = merged
	image, err := iso.Encode()
	if err != nil {
		return err
	}
	fi, err := os.Stat(req.CloudInitISO)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sdk.AtomicWriteFile(req.CloudInitISO, image, fi.Mode().Perm()); err != nil {
		return err
	}
	log.Info("wrote network-config", "source", source, "networks", len(ethernets))
	return nil
}

func (h *Handler) networkStatus(req *sdk.PreBootRequest) ([]byte, string, error) {
	if h.opts.StatusFile != "" {
		b, err := os.ReadFile(h.opts.StatusFile)
		switch {
		case err == nil && len(bytes.TrimSpace(b)) > 0:
			return b, h.opts.StatusFile, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, "", fmt.Errorf("read %s: %w", h.opts.StatusFile, err)
		}
	}
	if strings.TrimSpace(h.opts.StatusJSON) != "" {
		return []byte(h.opts.StatusJSON), "environment", nil
	}
	if v := req.VMI.Annotations[NetworkStatusAnnotation]; v != "" {
		return []byte(v), "VMI annotation", nil
	}
	return nil, "", nil
}
