// Package migrationparams applies the change-only answer of a
// PreMigrationSource hook to the migration flags and parameters.
package migrationparams
