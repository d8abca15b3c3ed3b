// The JavaScript reader knows the image kinds the C++ one does, in the same order: its TARGETS
// against the format's target table as the C++ side prints it (target_names.cpp). A kind added
// on one side only fails here. And, as tests/format's Compatibility tests for the C++ reader, a
// kernel of a newer minor may list more targets than the reader has kinds (docs/format.md,
// "Limits": 64 a kernel).
//   node target_table_test.mjs <target_names executable>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const web = await import(pathToFileURL(join(process.env.QUIVER_WEB_DIR, 'index.mjs')).href);
const native = execFileSync(process.argv[2], { encoding: 'utf8' }).split('\n').filter((line) => line !== '');
assert.ok(native.length > 0, 'the C++ target table printed no names');
assert.deepEqual([...web.TARGETS], native, 'runtime/web/qfb.mjs TARGETS differs from runtime/format/targets.h');
// A manifest whose kernel lists every known target and `unknown` new ones, each with an image,
// read as a reader reads a newer minor's (names and images of unknown targets dropped). The
// manifest alone: its images' offsets are checked against a file by FatBinary.parse.
function manifestWith(unknown) {
  const names = [...web.TARGETS, ...Array.from({ length: unknown }, (_, i) => `future${i}`)];
  const images = names.map((target) => ({ target, arch: 'a', offset: 0, size: 1, raw_size: 1,
    checksum: '0000000000000000', kernels: ['qv_k0_k'] }));
  const text = JSON.stringify({ compiler_version: '', source_hash: '', kernels: [{ name: 'k', symbol: 'qv_k0_k',
    params: [], block: [1, 1, 1], shared_bytes: 0, targets: names, uses_barrier: false }], images });
  return () => web.parseManifest(new TextEncoder().encode(text), 'newer.qfb', true);
}
const many = manifestWith(web.TARGETS.length + 1)();
assert.deepEqual(many.kernels[0].targets, [...web.TARGETS]);
assert.equal(many.images.length, web.TARGETS.length);
assert.throws(manifestWith(web.LIMITS.maxTargetsPerKernel + 1 - web.TARGETS.length),
  (e) => e.code === 'InvalidFatBinary' && e.message.includes("'kernels[0].targets': 65 entries exceed the limit of 64"));

console.log(`target_table_test: ${native.length} targets agree (${native.join(', ')})`);
