import { readFileSync } from 'node:fs';
import path from 'node:path';

/** Herald's version, as package.json gives it: the API reference and the guide show it. Read once, at load. */
export const HERALD_VERSION: string = (JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
