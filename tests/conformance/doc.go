// SPDX-License-Identifier: Apache-2.0

// Package conformance runs `kvpctl conformance`, as a built binary, against
// every sample hook server started as a process the way its image starts
// it: each Go sample, the Python sample on Debian's /usr/bin/python3, and a
// Python sidecar that breaks the contract. The samples must pass every
// check; the broken sidecar must make the command exit non-zero.
package conformance
