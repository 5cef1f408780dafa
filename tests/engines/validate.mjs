// SPDX-License-Identifier: GPL-3.0-or-later
// Test-only: run the Khronos glTF-Validator (npm gltf-validator) on a .gltf/.glb and print its
// report's issues as JSON: {"validator": version, "messages": [{code, severity, pointer, message}]}.
//   node validate.mjs FILE
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import validator from 'gltf-validator';

const file = process.argv[2];
if (!file) throw new Error('usage: validate.mjs FILE');
const report = await validator.validateBytes(new Uint8Array(readFileSync(file)), {
  uri: basename(file),
  maxIssues: 0, // no limit: counts are compared with ours
  externalResourceFunction: (uri) =>
    Promise.resolve(new Uint8Array(readFileSync(join(dirname(file), decodeURIComponent(uri))))),
});
const severity = ['ERROR', 'WARNING', 'INFO', 'HINT'];
process.stdout.write(JSON.stringify({
  validator: report.validatorVersion,
  messages: report.issues.messages.map((m) => ({
    code: m.code, severity: severity[m.severity], pointer: m.pointer ?? null, message: m.message,
  })),
}));
