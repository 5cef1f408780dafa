// SPDX-License-Identifier: GPL-3.0-or-later
// Test-only: the Khronos glTF-Validator (npm gltf-validator) on a .gltf whose uris may be absolute
// paths or file: URLs, resolved as a loader on this machine would (validate.mjs joins every uri to
// the file's folder).  Prints {"validator": version, "messages": [{code, severity, pointer, message}]}.
//   node validate_resolving.mjs FILE
import { readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import validator from 'gltf-validator';

const file = process.argv[2];
if (!file) throw new Error('usage: validate_resolving.mjs FILE');
const resolve = (uri) => {
  if (uri.startsWith('file:')) return fileURLToPath(uri);
  const path = decodeURIComponent(uri);
  return isAbsolute(path) ? path : join(dirname(file), path);
};
const report = await validator.validateBytes(new Uint8Array(readFileSync(file)), {
  uri: basename(file),
  maxIssues: 0,
  externalResourceFunction: (uri) => Promise.resolve(new Uint8Array(readFileSync(resolve(uri)))),
});
const severity = ['ERROR', 'WARNING', 'INFO', 'HINT'];
process.stdout.write(JSON.stringify({
  validator: report.validatorVersion,
  messages: report.issues.messages.map((m) => ({
    code: m.code, severity: severity[m.severity], pointer: m.pointer ?? null, message: m.message,
  })),
}));
