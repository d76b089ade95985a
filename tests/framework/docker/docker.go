// SPDX-License-Identifier: Apache-2.0

// Package docker holds what every test starting containers through
// testcontainers-go needs on these machines.
package docker

import "os"

// reaperEnv turns off the testcontainers reaper.
const reaperEnv = "TESTCONTAINERS_RYUK_DISABLED"

// NoReaper turns off the testcontainers reaper unless the environment says
// otherwise: its image cannot be pulled here (no registry is reachable), so
// the tests terminate every container they start themselves. Call it before
// the first container starts.
func NoReaper() {
	if _, ok := os.LookupEnv(reaperEnv); !ok {
		_ = os.Setenv(reaperEnv, "true")
	}
}
