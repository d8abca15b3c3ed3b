// The JavaScript reader (runtime/web/qfb.mjs) on valid fat binaries at the format's limits
// (docs/format.md, "Limits"), as tests/format/large_manifest_test.cpp does for the C++ reader: a
// ~16 MiB manifest whose objects carry a million unknown keys, 4096 kernels listed by each of 256
// images, multi-megabyte strings, an array of ~2 million values. Each must be read, or refused
// with the right message, in time linear in its size (a reader that scans the kernels for each
// image's symbol makes a billion string comparisons on the second). The files are built here
// from docs/format.md; parse() does not decompress, so the images are opaque 16-byte blocks.
//   node large_manifest_test.mjs
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const web = await import(pathToFileURL(join(process.env.QUIVER_WEB_DIR, 'index.mjs')).href);
const { FatBinary, QfbError, fnv1a64, checksumHex } = web;

const MANIFEST_LIMIT = 16 << 20, VALUE_LIMIT = 2000000, HEADER = 64, FRAME = 16;
// CPU seconds a read of a `bytes`-long manifest may take: about 3 times what it took on a busy
// 2-core machine (~2 s for 12 MB), and CPU time, so that other jobs there do not count.
const budgetS = (bytes) => 1 + 0.4 * bytes / (1 << 20);
const cpuSeconds = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

function setU64(b, at, v) { for (let i = 0; i < 8; i++) b[at + i] = Number((BigInt(v) >> BigInt(8 * i)) & 0xffn); }

// A file of `images` opaque frames after HEADER + MANIFEST_LIMIT bytes, and the manifest text
// that makeText(imageEntries) returns, where imageEntries are the layout fields of each image.
function buildFile(imageCount, makeText) {
  const first = HEADER + MANIFEST_LIMIT;
  const frames = [], entries = [];
  for (let i = 0; i < imageCount; i++) {
    const frame = Uint8Array.from({ length: FRAME }, () => Math.floor(Math.random() * 256));
    frames.push(frame);
    entries.push({ offset: first + i * FRAME, size: FRAME, raw_size: 64, checksum: checksumHex(fnv1a64(frame)) });
  }
  const text = new TextEncoder().encode(makeText(entries));
  assert.ok(text.length <= MANIFEST_LIMIT, `the test's manifest (${text.length} bytes) exceeds the format's limit`);
  const b = new Uint8Array(first + imageCount * FRAME);
  b.set([0x51, 0x56, 0x46, 0x42, 0x0d, 0x0a, 0x1a, 0x0a]);
  b[8] = 1;                      // major 1, minor 0
  b[12] = HEADER;                // header_size
  setU64(b, 16, b.length);       // file_size
  setU64(b, 24, HEADER);         // manifest_offset
  setU64(b, 32, text.length);    // manifest_size
  b.set(text, HEADER);
  frames.forEach((f, i) => b.set(f, first + i * FRAME));
  setU64(b, 40, fnv1a64(text));
  const h = b.slice(0, HEADER);
  h.fill(0, 56, 64);
  setU64(b, 56, fnv1a64(h));
  return { bytes: b, manifestSize: text.length };
}

// One kernel, one CPU image.
const small = (entries) => JSON.stringify({
  compiler_version: 'quiverc (test)', source_hash: '',
  kernels: [{ name: 'saxpy', symbol: 'qv_k0_saxpy', params: [{ name: 'x', type: 'float', vec_width: 1, buffer: true, access: 'read' }],
    block: [256, 1, 1], shared_bytes: 0, targets: ['cpu'], uses_barrier: false }],
  images: [{ target: 'cpu', arch: 'x86_64', ...entries[0], kernels: ['qv_k0_saxpy'] }],
});
const unknownMembers = (count, from = 0) => {
  const parts = [];
  for (let i = from; i < from + count; i++) parts.push(`"x${String(i).padStart(7, '0')}":0,`);
  return parts.join('');
};
const insertAfter = (text, opening, members) => {
  const at = text.indexOf(opening);
  assert.ok(at >= 0, opening);
  return text.slice(0, at + opening.length) + members + text.slice(at + opening.length);
};

let passed = 0;
// Reads the file; returns the FatBinary or the QfbError, after checking the time taken.
function timedRead(name, file) {
  const start = cpuSeconds();
  let result;
  try {
    result = FatBinary.parse(file.bytes, 'large.qfb');
  } catch (e) {
    assert.ok(e instanceof QfbError, `${name}: not a QfbError: ${e}`);
    assert.equal(e.code, 'InvalidFatBinary');
    result = e;
  }
  const seconds = cpuSeconds() - start;
  assert.ok(seconds < budgetS(file.manifestSize),
    `${name}: reading a file with a ${file.manifestSize}-byte manifest took ${seconds.toFixed(2)} CPU s`);
  console.log(`ok   ${name}: a ${file.manifestSize}-byte manifest ${result instanceof Error ? 'refused' : 'read'} in ${seconds.toFixed(3)} CPU s`);
  passed++;
  return result;
}
const refusedWith = (result, text) => {
  assert.ok(result instanceof QfbError, 'the file was accepted');
  assert.ok(result.message.includes(text), `"${result.message}" lacks "${text}"`);
};

// Up to a million unknown keys in the document's object, growing so that a reader slower than
// linear fails early.
for (const count of [30000, 120000, 990000]) {
  const fb = timedRead(`${count} unknown keys`, buildFile(1, (e) => insertAfter(small(e), '{', unknownMembers(count))));
  assert.ok(fb instanceof FatBinary, `${count} unknown keys: ${fb.message}`);
  assert.equal(fb.manifest.kernels[0].name, 'saxpy');
  assert.equal(fb.manifest.images.length, 1);
}

// A repeated key among a million is named with its path; the earliest repeat in the text wins.
refusedWith(timedRead('repeated key', buildFile(1, (e) => insertAfter(small(e), '{', unknownMembers(980000) + '"x0000007":1,'))),
  "manifest field 'x0000007': the key appears twice in one object");
refusedWith(timedRead('repeated nested key', buildFile(1, (e) => {
  let s = insertAfter(small(e), '{"name":"x","type":"float"', ',' + unknownMembers(490000) + '"x0000003":1');
  s = insertAfter(s, '{', unknownMembers(490000, 1));
  return s.slice(0, -1) + ',"x0000002":1}';
})), "manifest field 'kernels[0].params[0].x0000003': the key appears twice");

// Over the value limit: refused.
refusedWith(timedRead('over the value limit', buildFile(1, (e) => insertAfter(small(e), '{', unknownMembers(VALUE_LIMIT / 2 + 10)))),
  'more than 2000000 JSON values');

// The most kernels and images, every image listing every kernel: a million cross references.
{
  const targets = ['ptx', 'cubin', 'spirv', 'cpu', 'hsaco', 'msl', 'metallib', 'wgsl'];
  // Symbols of one length with a common prefix: each comparison a scan would make costs the most.
  const symbols = Array.from({ length: 4096 }, (_, k) => `kernel_${String(k).padStart(4, '0')}`);
  const fb = timedRead('256 images x 4096 kernels', buildFile(256, (entries) => JSON.stringify({
    compiler_version: '', source_hash: '',
    kernels: symbols.map((s) => ({ name: s, symbol: s, params: [], block: [1, 1, 1], shared_bytes: 0, targets, uses_barrier: false })),
    images: entries.map((e, i) => ({ target: targets[i >> 5], arch: `a${i & 31}`, ...e, kernels: symbols })),
  })));
  assert.ok(fb instanceof FatBinary, fb.message);
  assert.equal(fb.manifest.kernels.length, 4096);
  assert.equal(fb.manifest.images.length, 256);
  assert.equal(fb.manifest.images[255].kernels[4095], 'kernel_4095');
}

// The SPIR-V target's layout at the kernel limit: an image per kernel and arch (4096 kernels, two
// archs, 8192 images sharing two (target, arch) pairs); a kernel in two images of one pair is refused.
{
  const symbols = Array.from({ length: 4096 }, (_, k) => `kernel_${String(k).padStart(4, '0')}`);
  const perKernel = (twice) => (entries) => JSON.stringify({
    compiler_version: '', source_hash: '',
    kernels: symbols.map((s) => ({ name: s, symbol: s, params: [], block: [1, 1, 1], shared_bytes: 0, targets: ['spirv'], uses_barrier: false })),
    images: entries.map((e, i) => ({ target: 'spirv', arch: i < 4096 ? 'vulkan1.2' : 'vulkan1.3_coopmat', ...e,
      kernels: [symbols[twice && i === 4103 ? 5 : i & 4095]] })),
  });
  const fb = timedRead('an image per kernel and arch', buildFile(8192, perKernel(false)));
  assert.ok(fb instanceof FatBinary, fb.message);
  assert.equal(fb.manifest.images.length, 8192);
  assert.deepEqual(fb.manifest.images[8191].kernels, ['kernel_4095']);
  refusedWith(timedRead('a kernel in two images of one target and arch', buildFile(8192, perKernel(true))),
    "manifest field 'images[4103].kernels[0]': kernel \"kernel_0005\" is in a second image for spirv vulkan1.3_coopmat");
}

// Long strings (an 8 MiB key, a 7 MiB value, one with escapes) and a wide array.
{
  const fb = timedRead('long strings', buildFile(1, (e) =>
    insertAfter(small(e), '{', `"${'k'.repeat(8 << 20)}":"${'v'.repeat(7 << 20)}","esc":"${'\\n\\u0041'.repeat(100000)}",`)));
  assert.ok(fb instanceof FatBinary, fb.message);
  const wide = timedRead('wide array', buildFile(1, (e) => insertAfter(small(e), '{', `"wide":[0${',0'.repeat(1900000 - 1)}],`)));
  assert.ok(wide instanceof FatBinary, wide.message);
}
console.log(`large_manifest_test: ${passed} checks passed`);
