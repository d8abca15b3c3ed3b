// The JavaScript reader (runtime/web/qfb.mjs) against a real .qfb and damaged copies of it: each
// damage must be refused with a QfbError naming the file and the field, as the C++ reader does
// (docs/format.md "Reading"); the intact file must load and its WGSL image decode. Shared by
// reader_test.mjs (Node) and browser_page.mjs (a browser): it imports nothing; `web` is the
// loader's module namespace (runtime/web/index.mjs), `original` the bytes of the kernel suite's
// .qfb (its manifest edits name saxpy), `log` takes one line per check. Returns the number of
// checks passed; throws at the first that fails.
const ok = (condition, what) => { if (!condition) throw new Error(what); };
const equal = (got, expected, what) => ok(got === expected, `${what} (got ${got}, expected ${expected})`);
const fail = (what) => { throw new Error(what); };

export function readerChecks(web, original, path, log) {
  const { FatBinary, QfbError, fnv1a64, parseWgslImage } = web;
  let passed = 0;

  function setU64(b, at, v) { for (let i = 0; i < 8; i++) b[at + i] = Number((v >> BigInt(8 * i)) & 0xffn); }
  function reseal(b) {   // recompute the manifest and header checksums after an edit
    const dv = new DataView(b.buffer, b.byteOffset);
    const off = Number(dv.getBigUint64(24, true)), size = Number(dv.getBigUint64(32, true));
    setU64(b, 40, fnv1a64(b.subarray(off, off + size)));
    const h = b.slice(0, 64);
    h.fill(0, 56, 64);
    setU64(b, 56, fnv1a64(h));
    return b;
  }
  function refused(name, bytes, field, alsoIn = '', readImage = false) {
    try {
      const fb = FatBinary.parse(bytes, 'damaged.qfb');
      if (readImage) fb.imageData(fb.findImage('wgsl'));
    } catch (e) {
      ok(e instanceof QfbError, `${name}: not a QfbError: ${e}`);
      equal(e.code, 'InvalidFatBinary', `${name}: code ${e.code}`);
      ok(e.message.startsWith(`damaged.qfb: invalid fat binary: ${field}`), `${name}: message "${e.message}" lacks field ${field}`);
      ok(e.message.includes(alsoIn), `${name}: message "${e.message}" lacks "${alsoIn}"`);
      log(`ok   ${name}: ${e.message}`);
      passed++;
      return;
    }
    fail(`${name}: the damaged file was accepted`);
  }

  // The intact file.
  const fb = FatBinary.parse(original, path);
  const wgsl = fb.findImage('wgsl');
  ok(wgsl >= 0, 'no wgsl image');
  const units = parseWgslImage(new TextDecoder().decode(fb.imageData(wgsl)), path);
  for (const sym of fb.manifest.images[wgsl].kernels) ok(units.has(sym), `no unit for ${sym}`);
  log(`ok   intact: ${fb.manifest.kernels.length} kernels, ${units.size} WGSL kernels`);
  passed++;

  const copy = () => original.slice();
  let b = copy(); b[0] ^= 1; refused('magic', b, 'header.magic');
  refused('truncated', original.slice(0, original.length - 1), 'header.file_size', 'truncated');
  refused('too short', original.slice(0, 10), 'header', 'truncated');
  b = copy(); b[10] ^= 1; refused('header byte', b, 'header.header_checksum', 'mismatch');
  b = copy(); b[8] = 2; refused('newer major', reseal(b), 'header.major', 'format version 2.0');
  b = copy(); b[48] = 1; refused('unknown flag', reseal(b), 'header.flags');
  b = copy(); b[64 + 5] ^= 1; refused('manifest byte', b, 'header.manifest_checksum', 'mismatch');

  // Manifest content: same length, resealed, so only the manifest checks can catch it.
  const text = new TextDecoder().decode(original.subarray(64, 64 + Number(fb.header.manifestSize)));
  function editManifest(name, from, to, field, alsoIn) {
    equal(from.length, to.length, `${name}: the edit changes the manifest's length`);
    const at = text.indexOf(from);
    ok(at >= 0, `${name}: "${from}" not in the manifest`);
    const bytes = copy();
    bytes.set(new TextEncoder().encode(to), 64 + at);
    refused(name, reseal(bytes), field, alsoIn);
  }
  editManifest('bool as number', '"uses_barrier":false', '"uses_barrier":0    ', "manifest field 'kernels[", 'expected true or false');
  editManifest('invalid JSON', '"shared_bytes":0', '"shared_bytes":-', "manifest field '(document)'", 'not valid JSON');
  editManifest('unknown type', '"type":"float"', '"type":"flaot"', "manifest field 'kernels[", 'unknown scalar type');
  editManifest('duplicate key', '"name":"saxpy","params"', '"name":"saxpy","name"  ', "manifest field 'kernels[",
    "].name': the key appears twice");
  editManifest('bad checksum text', text.match(/"checksum":"[0-9a-f]/)[0], '"checksum":"X', "manifest field 'images[0].checksum'", '16 lowercase hex');

  // The image: damage found only when it is read (other images stay loadable).
  const im = fb.manifest.images[wgsl];
  b = copy(); b[Number(im.offset) + Number(im.size) - 6] ^= 0x40;
  refused('image byte', b, `images[${wgsl}].checksum`, 'mismatch', true);
  // The frame's own XXH64 content checksum damaged, with the FNV checksum in the manifest updated
  // to match: only the zstd content check can catch it.
  b = copy(); b[Number(im.offset) + Number(im.size) - 1] ^= 0x40;
  {
    const sum = web.checksumHex(fnv1a64(b.subarray(Number(im.offset), Number(im.offset + im.size))));
    b.set(new TextEncoder().encode(sum), 64 + text.indexOf(web.checksumHex(im.checksum)));
    reseal(b);
  }
  refused('zstd content checksum', b, `images[${wgsl}]`, 'checksum', true);
  return passed;
}
