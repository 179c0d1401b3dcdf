/** `npm run schema:graphql`: writes schema/schema.graphql from the code (a test fails when it is stale). */
import { writeFileSync } from 'node:fs';
import { projectPath } from '../project-path.js';
import { buildGraphQLSchema, printGraphQLSchema, SCHEMA_FILE } from '../graphql/schema/schema.builder.js';

const path = projectPath(SCHEMA_FILE);
writeFileSync(path, printGraphQLSchema(await buildGraphQLSchema()));
process.stdout.write(`Wrote ${SCHEMA_FILE}\n`);
