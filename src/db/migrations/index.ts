import type { MigrationObject } from '@mikro-orm/core';
import { sqliteMigrations } from './sqlite/index.js';
import { postgresqlMigrations } from './postgresql/index.js';

/**
 * One migration set per dialect (SQLite and PostgreSQL types differ), both generated from the same
 * entities by `npm run migration:create` and listed explicitly so the compiled app needs no file globbing.
 */
export function migrationsFor(dialect: 'sqlite' | 'postgresql'): MigrationObject[] {
  return dialect === 'sqlite' ? sqliteMigrations : postgresqlMigrations;
}
