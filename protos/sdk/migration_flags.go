// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"math/bits"
	"strconv"
	"strings"
)

// MigrationFlags is a set of libvirt VIR_MIGRATE_* flag bits. The values are
// libvirt's (virDomainMigrateFlags in libvirt-domain.h).
type MigrationFlags uint64

// VIR_MIGRATE_* bits.
const (
	MigrateLive                       MigrationFlags = 1 << 0
	MigratePeer2Peer                  MigrationFlags = 1 << 1
	MigrateTunnelled                  MigrationFlags = 1 << 2
	MigratePersistDest                MigrationFlags = 1 << 3
	MigrateUndefineSource             MigrationFlags = 1 << 4
	MigratePaused                     MigrationFlags = 1 << 5
	MigrateNonSharedDisk              MigrationFlags = 1 << 6
	MigrateNonSharedInc               MigrationFlags = 1 << 7
	MigrateChangeProtection           MigrationFlags = 1 << 8
	MigrateUnsafe                     MigrationFlags = 1 << 9
	MigrateOffline                    MigrationFlags = 1 << 10
	MigrateCompressed                 MigrationFlags = 1 << 11
	MigrateAbortOnError               MigrationFlags = 1 << 12
	MigrateAutoConverge               MigrationFlags = 1 << 13
	MigrateRDMAPinAll                 MigrationFlags = 1 << 14
	MigratePostcopy                   MigrationFlags = 1 << 15
	MigrateTLS                        MigrationFlags = 1 << 16
	MigrateParallel                   MigrationFlags = 1 << 17
	MigrateNonSharedSynchronousWrites MigrationFlags = 1 << 18
	MigratePostcopyResume             MigrationFlags = 1 << 19
	MigrateZeroCopy                   MigrationFlags = 1 << 20
)

var migrationFlagNames = []struct {
	flag MigrationFlags
	name string
}{
	{MigrateLive, "LIVE"},
	{MigratePeer2Peer, "PEER2PEER"},
	{MigrateTunnelled, "TUNNELLED"},
	{MigratePersistDest, "PERSIST_DEST"},
	{MigrateUndefineSource, "UNDEFINE_SOURCE"},
	{MigratePaused, "PAUSED"},
	{MigrateNonSharedDisk, "NON_SHARED_DISK"},
	{MigrateNonSharedInc, "NON_SHARED_INC"},
	{MigrateChangeProtection, "CHANGE_PROTECTION"},
	{MigrateUnsafe, "UNSAFE"},
	{MigrateOffline, "OFFLINE"},
	{MigrateCompressed, "COMPRESSED"},
	{MigrateAbortOnError, "ABORT_ON_ERROR"},
	{MigrateAutoConverge, "AUTO_CONVERGE"},
	{MigrateRDMAPinAll, "RDMA_PIN_ALL"},
	{MigratePostcopy, "POSTCOPY"},
	{MigrateTLS, "TLS"},
	{MigrateParallel, "PARALLEL"},
	{MigrateNonSharedSynchronousWrites, "NON_SHARED_SYNCHRONOUS_WRITES"},
	{MigratePostcopyResume, "POSTCOPY_RESUME"},
	{MigrateZeroCopy, "ZEROCOPY"},
}

// Has reports whether every bit of want is set.
func (f MigrationFlags) Has(want MigrationFlags) bool { return f&want == want }

// With returns f with the bits of add set.
func (f MigrationFlags) With(add MigrationFlags) MigrationFlags { return f | add }

// Without returns f with the bits of drop cleared.
func (f MigrationFlags) Without(drop MigrationFlags) MigrationFlags { return f &^ drop }

// String renders the flags as libvirt's names without the VIR_MIGRATE_
// prefix, joined by "|", for example "LIVE|PEER2PEER"; unknown bits are
// shown as numbers.
func (f MigrationFlags) String() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	rest := f
	for _, n := range migrationFlagNames {
		if f&n.flag != 0 {
			parts = append(parts, n.name)
			rest &^= n.flag
		}
	}
	for rest != 0 {
		bit := MigrationFlags(1) << bits.TrailingZeros64(uint64(rest))
		parts = append(parts, "0x"+strconv.FormatUint(uint64(bit), 16))
		rest &^= bit
	}
	return strings.Join(parts, "|")
}

// ParseMigrationFlag returns the flag for a libvirt name, with or without
// the VIR_MIGRATE_ prefix ("PARALLEL", "VIR_MIGRATE_PARALLEL").
func ParseMigrationFlag(name string) (MigrationFlags, bool) {
	name = strings.TrimPrefix(strings.ToUpper(name), "VIR_MIGRATE_")
	for _, n := range migrationFlagNames {
		if n.name == name {
			return n.flag, true
		}
	}
	return 0, false
}
