// The JavaScript reader (runtime/web/qfb.mjs) in Node against a real .qfb and damaged copies of it
// (reader_checks.mjs; run_browser.mjs --reader runs the same checks in a browser).
//   node reader_test.mjs kernels.qfb
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readerChecks } from './reader_checks.mjs';

const web = await import(pathToFileURL(join(process.env.QUIVER_WEB_DIR, 'index.mjs')).href);
const path = process.argv[2];
const passed = readerChecks(web, new Uint8Array(readFileSync(path)), path, console.log);
console.log(`reader_test: ${passed} checks passed`);
