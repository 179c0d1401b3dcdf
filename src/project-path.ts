import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** Absolute path of a file in the project, found from the compiled or source location alike. */
export function projectPath(relative: string): string {
  if (!root) {
    let dir = dirname(fileURLToPath(import.meta.url));
    while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
    root = dir;
  }
  return join(root, relative);
}
