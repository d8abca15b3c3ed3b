// The JavaScript reader knows the image kinds the C++ one does, in the same order: its TARGETS
// against the format's target table as the C++ side prints it (target_names.cpp). A kind added
// on one side only fails here.
//   node target_table_test.mjs <target_names executable>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const web = await import(pathToFileURL(join(process.env.QUIVER_WEB_DIR, 'index.mjs')).href);
const native = execFileSync(process.argv[2], { encoding: 'utf8' }).split('\n').filter((line) => line !== '');
assert.ok(native.length > 0, 'the C++ target table printed no names');
assert.deepEqual([...web.TARGETS], native, 'runtime/web/qfb.mjs TARGETS differs from runtime/format/targets.h');
console.log(`target_table_test: ${native.length} targets agree (${native.join(', ')})`);
