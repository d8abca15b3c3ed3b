// Reading a quiver fat binary (.qfb) in JavaScript: the same checks, in the same order and with
// the same messages, as the C++ reader (runtime/format/fatbin.cpp, manifest.cpp; the layout is
// docs/format.md). The file is treated as hostile: every offset and size is checked before
// anything is read through it, and failures are QfbError('InvalidFatBinary',
// '<file>: invalid fat binary: <field>: <what>').
import { decompress } from 'fzstd';
import { xxh64Low32 } from './xxh64.mjs';

export const MAGIC = Uint8Array.from([0x51, 0x56, 0x46, 0x42, 0x0d, 0x0a, 0x1a, 0x0a]);
export const FORMAT_MAJOR = 1;
export const FORMAT_MINOR = 0;
const HEADER_SIZE = 64, MAX_HEADER_SIZE = 4096, IMAGE_ALIGNMENT = 16n;
export const LIMITS = Object.freeze({
  maxManifestBytes: 16 << 20, maxImageRawBytes: 1 << 30, maxKernels: 4096, maxParams: 64, maxImages: 16384,
  maxTargetsPerKernel: 64, maxNameBytes: 4096, maxSymbolBytes: 512, maxArchBytes: 64, maxBlockThreads: 1024,
  maxSharedBytes: 16 << 20, maxJsonDepth: 16, maxJsonValues: 2000000, maxWindowLog: 27,
});
export const SCALAR_TYPES = Object.freeze({
  bool: 1, int8_t: 1, uint8_t: 1, int16_t: 2, uint16_t: 2, int32_t: 4, uint32_t: 4, int64_t: 8, uint64_t: 8,
  half: 2, bf16: 2, float: 4, double: 8,
});
// The image kinds this reader knows: the format's target table (runtime/format/targets.h, in its
// order; tests/web checks the two agree). A new kind is one name here; index.d.ts repeats the
// list as a type.
export const TARGETS = Object.freeze(['ptx', 'cubin', 'spirv', 'cpu', 'hsaco', 'msl', 'metallib', 'wgsl']);

export class QfbError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'QfbError';
    this.code = code;   // 'InvalidFatBinary' | 'InvalidArgument' | 'NotFound' | 'Unsupported' | 'CompileError' | 'DeviceError'
  }
}

function fail(label, field, what) {
  throw new QfbError('InvalidFatBinary', `${label}: invalid fat binary: ${field}: ${what}`);
}
const failManifest = (label, field, what) => fail(label, `manifest field '${field}'`, what);

// FNV-1a 64 (docs/format.md), on two 32-bit halves: h * 0x100000001b3 = h * 0x1b3 + (h << 40).
export function fnv1a64(bytes) {
  let lo = 0x84222325, hi = 0xcbf29ce4;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]) >>> 0;
    const l = lo * 0x1b3;
    const carry = Math.floor(l / 0x100000000);
    const newHi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) % 0x100000000;
    lo = l >>> 0;
    hi = newHi >>> 0;
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}

export const checksumHex = (v) => v.toString(16).padStart(16, '0');
const hex = (v) => '0x' + checksumHex(v);

const u16 = (b, at) => b[at] | (b[at + 1] << 8);
const u32 = (b, at) => (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
const u64 = (b, at) => (BigInt(u32(b, at + 4)) << 32n) | BigInt(u32(b, at));

function headerChecksum(bytes, headerSize) {
  const copy = bytes.slice(0, headerSize);
  copy.fill(0, 56, 64);
  return fnv1a64(copy);
}

function readHeader(b, label) {
  const n = b.length;
  if (n >= 8 && !MAGIC.every((m, i) => b[i] === m))
    fail(label, 'header.magic', 'not a quiver fat binary (the file does not start with "QVFB\\r\\n\\x1a\\n")');
  if (n < 16) fail(label, 'header', `truncated: the file has ${n} bytes, the header needs ${HEADER_SIZE}`);
  const h = { major: u16(b, 8), minor: u16(b, 10) };
  const version = `${h.major}.${h.minor}`;
  const supported = `format version ${FORMAT_MAJOR} (${FORMAT_MAJOR}.${FORMAT_MINOR} and later ${FORMAT_MAJOR}.x minors)`;
  if (h.major > FORMAT_MAJOR)
    fail(label, 'header.major', `the file has format version ${version}; this reader supports ${supported}; use a newer quiver runtime`);
  if (h.major < FORMAT_MAJOR)
    fail(label, 'header.major', `the file has format version ${version}, which is not valid; this reader supports ${supported}`);
  h.headerSize = u32(b, 12);
  if (h.headerSize < HEADER_SIZE || h.headerSize > MAX_HEADER_SIZE)
    fail(label, 'header.header_size', `${h.headerSize} is outside ${HEADER_SIZE}..${MAX_HEADER_SIZE}`);
  if (n < h.headerSize) fail(label, 'header', `truncated: the file has ${n} bytes, the header needs ${h.headerSize}`);
  h.headerChecksum = u64(b, 56);
  const actual = headerChecksum(b, h.headerSize);
  if (actual !== h.headerChecksum)
    fail(label, 'header.header_checksum', `mismatch: stored ${hex(h.headerChecksum)}, computed ${hex(actual)} (the header is corrupt)`);
  h.flags = u32(b, 48);
  if (h.flags !== 0) fail(label, 'header.flags', `requires features this reader does not have (bits ${hex(BigInt(h.flags))})`);
  h.fileSize = u64(b, 16);
  if (h.fileSize !== BigInt(n))
    fail(label, 'header.file_size', `the header says ${h.fileSize} bytes but the file has ${n}${h.fileSize > BigInt(n) ? ' (truncated)' : ''}`);
  h.manifestOffset = u64(b, 24);
  h.manifestSize = u64(b, 32);
  h.manifestChecksum = u64(b, 40);
  if (h.manifestOffset < BigInt(h.headerSize))
    fail(label, 'header.manifest_offset', `${h.manifestOffset} overlaps the ${h.headerSize}-byte header`);
  if (h.manifestOffset > BigInt(n))
    fail(label, 'header.manifest_offset', `${h.manifestOffset} is past the end of the ${n}-byte file`);
  if (h.manifestSize === 0n || h.manifestSize > BigInt(LIMITS.maxManifestBytes))
    fail(label, 'header.manifest_size', `${h.manifestSize} is outside 1..${LIMITS.maxManifestBytes}`);
  if (h.manifestSize > BigInt(n) - h.manifestOffset)
    fail(label, 'header.manifest_size',
      `the manifest (${h.manifestSize} bytes at ${h.manifestOffset}) runs past the end of the ${n}-byte file`);
  const text = b.subarray(Number(h.manifestOffset), Number(h.manifestOffset + h.manifestSize));
  const sum = fnv1a64(text);
  if (sum !== h.manifestChecksum)
    fail(label, 'header.manifest_checksum', `mismatch: stored ${hex(h.manifestChecksum)}, computed ${hex(sum)} (the manifest is corrupt)`);
  return { header: h, text };
}

// --- A strict JSON reader: like nlohmann's (which the C++ reader uses) it tells non-negative
// integer literals from other numbers and keeps 64-bit integers exact (BigInt); it also reports
// a key repeated within one object, which JSON.parse would silently resolve.
class JsonNumber {
  // `integer`: the literal has neither fraction nor exponent.
  constructor(text, integer) {
    this.text = text;
    this.isUnsigned = integer && text[0] !== '-' && (text.length < 20 || BigInt(text) <= 0xffffffffffffffffn);
    this.value = this.isUnsigned ? BigInt(text) : Number(text);
  }
}

function checkShape(text, label) {
  let depth = 0, values = 1, inString = false, escaped = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      if (++depth > LIMITS.maxJsonDepth) failManifest(label, '(document)', `JSON nested deeper than ${LIMITS.maxJsonDepth} levels`);
    } else if ((c === ']' || c === '}') && depth > 0) depth--;
    else if (c === ',' || c === ':') {
      if (++values > LIMITS.maxJsonValues) failManifest(label, '(document)', `more than ${LIMITS.maxJsonValues} JSON values`);
    }
  }
}

// Every step is linear in the text: strings are sliced, not built a character at a time, and a
// repeated key is found through the object's Map (unknown keys are legal, so a hostile file may
// give one object a million of them). `path` holds the JSON path of the value being read, as
// segments, so that a repeated key is reported with its full path (as manifest.cpp does).
function parseJson(text, label) {
  let i = 0, duplicate = null;
  const path = [];
  const pathText = () => path.reduce((s, seg) => (typeof seg === 'number' ? `${s}[${seg}]` : s ? `${s}.${seg}` : seg), '');
  const bad = (what) => failManifest(label, '(document)', `not valid JSON: ${what} at offset ${i}`);
  const ws = () => { while (i < text.length && ' \t\n\r'.includes(text[i])) i++; };
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const obj = new Map();
      ws();
      if (text[i] === '}') { i++; return obj; }
      for (;;) {
        ws();
        if (text[i] !== '"') bad('expected a string key');
        const key = string();
        path.push(key);
        if (duplicate === null && obj.has(key)) duplicate = pathText();
        ws();
        if (text[i++] !== ':') bad("expected ':'");
        obj.set(key, value());
        path.pop();
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return obj; }
        bad("expected ',' or '}'");
      }
    }
    if (c === '[') {
      i++;
      const arr = [];
      ws();
      if (text[i] === ']') { i++; return arr; }
      for (;;) {
        path.push(arr.length);
        arr.push(value());
        path.pop();
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return arr; }
        bad("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]])
      if (text.startsWith(word, i)) { i += word.length; return v; }
    number.lastIndex = i;
    const m = number.exec(text);
    if (!m) bad('unexpected character');
    i += m[0].length;
    return new JsonNumber(m[0], m[2] === undefined && m[3] === undefined);
  };
  const number = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
  const plain = /[^"\\\x00-\x1f]*/y;   // a run of characters that stand for themselves
  const string = () => {
    i++;   // opening quote
    const parts = [];
    for (;;) {
      plain.lastIndex = i;
      plain.exec(text);
      if (plain.lastIndex > i) parts.push(text.slice(i, plain.lastIndex));
      i = plain.lastIndex;
      if (i >= text.length) bad('unterminated string');
      const c = text[i++];
      if (c === '"') return parts.join('');
      if (c < ' ') bad('control character in a string');
      const e = text[i++];
      const simple = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }[e];
      if (simple !== undefined) { parts.push(simple); continue; }
      if (e !== 'u' || !/^[0-9a-fA-F]{4}$/.test(text.slice(i, i + 4))) bad('bad escape');
      parts.push(String.fromCharCode(parseInt(text.slice(i, i + 4), 16)));
      i += 4;
    }
  };
  const doc = value();
  ws();
  if (i !== text.length) bad('trailing characters');
  if (duplicate !== null) failManifest(label, duplicate, 'the key appears twice in one object');
  return doc;
}

function typeName(v) {
  if (v === null) return 'null';
  if (v instanceof Map) return 'object';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'boolean';
  return 'number';
}

const utf8 = new TextEncoder();

// Typed accessors naming the JSON path of the field they refuse (as manifest.cpp's Reader).
class Reader {
  constructor(label) { this.label = label; }
  fail(field, what) {
    throw new QfbError('InvalidFatBinary', `${this.label}: invalid fat binary: manifest field '${field}': ${what}`);
  }
  member(obj, path, key) {
    if (!obj.has(key)) this.fail(path + key, 'missing');
    return obj.get(key);
  }
  string(obj, path, key, maxLen, allowEmpty) {
    const v = this.member(obj, path, key);
    if (typeof v !== 'string') this.fail(path + key, `expected a string, got ${typeName(v)}`);
    if (!allowEmpty && v.length === 0) this.fail(path + key, 'must not be empty');
    if (utf8.encode(v).length > maxLen) this.fail(path + key, `longer than the limit of ${maxLen} bytes`);
    return v;
  }
  unsignedInt(obj, path, key, max) {
    const v = this.member(obj, path, key);
    if (!(v instanceof JsonNumber) || !v.isUnsigned)
      this.fail(path + key, 'expected a non-negative integer, got ' + (v instanceof JsonNumber ? `number ${v.text}` : typeName(v)));
    if (v.value > BigInt(max)) this.fail(path + key, `${v.value} exceeds the limit of ${max}`);
    return v.value;
  }
  boolean(obj, path, key) {
    const v = this.member(obj, path, key);
    if (typeof v !== 'boolean') this.fail(path + key, `expected true or false, got ${typeName(v)}`);
    return v;
  }
  array(obj, path, key, maxCount) {
    const v = this.member(obj, path, key);
    if (!Array.isArray(v)) this.fail(path + key, `expected an array, got ${typeName(v)}`);
    if (v.length > maxCount) this.fail(path + key, `${v.length} entries exceed the limit of ${maxCount}`);
    return v;
  }
  object(v, path) {
    if (!(v instanceof Map)) this.fail(path, `expected an object, got ${typeName(v)}`);
  }
}

const isSymbol = (s) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s);
const isPrintableAscii = (s) => /^[\x21-\x7e]*$/.test(s);

function readParam(r, j, path) {
  r.object(j, path);
  const p = path + '.';
  const param = { name: r.string(j, p, 'name', LIMITS.maxNameBytes, true) };
  const type = r.string(j, p, 'type', 64, false);
  if (!(type in SCALAR_TYPES)) r.fail(p + 'type', `unknown scalar type "${type}"`);
  param.type = type;
  param.vecWidth = Number(r.unsignedInt(j, p, 'vec_width', 1 << 16));
  if (![1, 2, 4, 8].includes(param.vecWidth)) r.fail(p + 'vec_width', `must be 1, 2, 4 or 8 (got ${param.vecWidth})`);
  param.buffer = r.boolean(j, p, 'buffer');
  const access = r.string(j, p, 'access', 64, false);
  if (access !== 'read' && access !== 'read_write') r.fail(p + 'access', `unknown access "${access}" (expected read or read_write)`);
  param.access = access;
  if (!param.buffer && access !== 'read') r.fail(p + 'access', 'a scalar parameter is always read-only');
  return param;
}

// manifest.cpp's manifest_from_json.
export function parseManifest(bytes, label, skipUnknownTargets = false) {
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    failManifest(label, '(document)', 'not valid JSON: the text is not UTF-8');
  }
  checkShape(text, label);
  const doc = parseJson(text, label);
  const r = new Reader(label);
  r.object(doc, '(document)');
  const m = {
    compilerVersion: r.string(doc, '', 'compiler_version', LIMITS.maxNameBytes, true),
    sourceHash: r.string(doc, '', 'source_hash', LIMITS.maxNameBytes, true),
    kernels: [], images: [],
  };
  const kernels = r.array(doc, '', 'kernels', LIMITS.maxKernels);
  // Sets and maps (not scans of the kernels read so far): 4096 kernels listed by each of 256
  // images must not cost 4096 x 4096 x 256 string comparisons.
  const names = new Set(), symbols = new Map();   // symbol -> kernel
  const covered = new Map();   // symbol -> the targets whose images list that kernel
  const archsOf = new Map();   // symbol -> the "target arch" of the images that list it
  kernels.forEach((kj, i) => {
    const path = `kernels[${i}]`, p = path + '.';
    r.object(kj, path);
    const k = { name: r.string(kj, p, 'name', LIMITS.maxNameBytes, false) };
    if (names.has(k.name)) r.fail(p + 'name', `duplicate kernel name "${k.name}"`);
    names.add(k.name);
    k.symbol = r.string(kj, p, 'symbol', LIMITS.maxSymbolBytes, false);
    if (!isSymbol(k.symbol)) r.fail(p + 'symbol', `"${k.symbol}" is not an identifier ([A-Za-z_][A-Za-z0-9_]*)`);
    if (symbols.has(k.symbol)) r.fail(p + 'symbol', `duplicate kernel symbol "${k.symbol}"`);
    symbols.set(k.symbol, k);
    covered.set(k.symbol, new Set());
    archsOf.set(k.symbol, new Set());
    k.params = r.array(kj, p, 'params', LIMITS.maxParams).map((pj, a) => readParam(r, pj, `${p}params[${a}]`));
    const block = r.array(kj, p, 'block', 3);
    if (block.length !== 3) r.fail(p + 'block', `expected 3 dimensions, got ${block.length}`);
    let threads = 1;
    k.block = block.map((v, d) => {
      const field = `${p}block[${d}]`;
      if (!(v instanceof JsonNumber) || !v.isUnsigned) r.fail(field, `expected a positive integer, got ${v instanceof JsonNumber ? v.text : JSON.stringify(v)}`);
      if (v.value === 0n || v.value > BigInt(LIMITS.maxBlockThreads))
        r.fail(field, `must be between 1 and ${LIMITS.maxBlockThreads} (got ${v.value})`);
      threads *= Number(v.value);
      return Number(v.value);
    });
    if (threads > LIMITS.maxBlockThreads)
      r.fail(p + 'block', `block of ${threads} threads exceeds the limit of ${LIMITS.maxBlockThreads}`);
    k.sharedBytes = Number(r.unsignedInt(kj, p, 'shared_bytes', LIMITS.maxSharedBytes));
    k.targets = [];
    r.array(kj, p, 'targets', LIMITS.maxTargetsPerKernel).forEach((t, ti) => {
      const field = `${p}targets[${ti}]`;
      if (typeof t !== 'string') r.fail(field, `expected a string, got ${typeName(t)}`);
      if (!TARGETS.includes(t)) {
        if (skipUnknownTargets) return;
        r.fail(field, `unknown target "${t}"`);
      }
      if (k.targets.includes(t)) r.fail(field, `target "${t}" listed twice`);
      k.targets.push(t);
    });
    k.usesBarrier = r.boolean(kj, p, 'uses_barrier');
    m.kernels.push(k);
  });

  r.array(doc, '', 'images', LIMITS.maxImages).forEach((ij, i) => {
    const path = `images[${i}]`, p = path + '.';
    r.object(ij, path);
    const target = r.string(ij, p, 'target', 64, false);
    if (!TARGETS.includes(target)) {
      if (skipUnknownTargets) return;
      r.fail(p + 'target', `unknown target "${target}"`);
    }
    const im = { target, arch: r.string(ij, p, 'arch', LIMITS.maxArchBytes, false) };
    if (!isPrintableAscii(im.arch)) r.fail(p + 'arch', 'must be printable ASCII without spaces');
    im.offset = r.unsignedInt(ij, p, 'offset', 0xffffffffffffffffn);
    im.size = r.unsignedInt(ij, p, 'size', 0xffffffffffffffffn);
    im.rawSize = r.unsignedInt(ij, p, 'raw_size', LIMITS.maxImageRawBytes);
    if (im.rawSize === 0n) r.fail(p + 'raw_size', 'an image cannot be empty');
    const checksum = r.string(ij, p, 'checksum', 16, false);
    if (!/^[0-9a-f]{16}$/.test(checksum)) r.fail(p + 'checksum', `expected 16 lowercase hex digits, got "${checksum}"`);
    im.checksum = BigInt('0x' + checksum);
    im.kernels = [];
    const listed = new Set();
    r.array(ij, p, 'kernels', LIMITS.maxKernels).forEach((sym, s) => {
      const field = `${p}kernels[${s}]`;
      if (typeof sym !== 'string') r.fail(field, `expected a string, got ${typeName(sym)}`);
      const kernel = symbols.get(sym);
      if (!kernel) r.fail(field, `no kernel has the symbol "${sym}"`);
      if (!kernel.targets.includes(im.target)) r.fail(field, `kernel "${kernel.name}" does not list target ${target}`);
      if (listed.has(sym)) r.fail(field, `symbol "${sym}" listed twice`);
      // Several images may share a target and arch (SPIR-V: one image per kernel), not a kernel.
      const where = `${target} ${im.arch}`;
      if (archsOf.get(sym).has(where)) r.fail(field, `kernel "${kernel.name}" is in a second image for ${where}`);
      archsOf.get(sym).add(where);
      listed.add(sym);
      im.kernels.push(sym);
      covered.get(sym).add(im.target);
    });
    m.images.push(im);
  });

  m.kernels.forEach((k, i) => {
    for (const t of k.targets)
      if (!covered.get(k.symbol).has(t))
        r.fail(`kernels[${i}].targets`, `kernel "${k.name}" lists target ${t} but no ${t} image contains it`);
  });
  return m;
}

function checkImageLayout(h, m, label) {
  const ranges = [
    { begin: 0n, end: BigInt(h.headerSize), what: 'the header' },
    { begin: h.manifestOffset, end: h.manifestOffset + h.manifestSize, what: 'the manifest' },
  ];
  m.images.forEach((im, i) => {
    if (im.offset % IMAGE_ALIGNMENT !== 0n) fail(label, `images[${i}].offset`, `${im.offset} is not a multiple of ${IMAGE_ALIGNMENT}`);
    if (im.offset >= h.fileSize) fail(label, `images[${i}].offset`, `${im.offset} is past the end of the ${h.fileSize}-byte file`);
    if (im.size === 0n) fail(label, `images[${i}].size`, 'an image cannot be empty');
    if (im.size > h.fileSize - im.offset)
      fail(label, `images[${i}].size`, `the image (${im.size} bytes at ${im.offset}) runs past the end of the ${h.fileSize}-byte file`);
    ranges.push({ begin: im.offset, end: im.offset + im.size, what: `images[${i}]` });
  });
  ranges.sort((a, b) => (a.begin < b.begin ? -1 : a.begin > b.begin ? 1 : 0));
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i].begin < ranges[i - 1].end) {
      const a = ranges[i - 1].what.startsWith('images[') ? ranges[i - 1] : ranges[i];
      const b = a === ranges[i] ? ranges[i - 1] : ranges[i];
      fail(label, `${a.what}.offset`, `bytes ${a.begin}..${a.end} overlap ${b.what} (bytes ${b.begin}..${b.end})`);
    }
  }
}

// The zstd frame header (RFC 8878 3.1.1): content size, window size, checksum flag, and the
// frame's total compressed size (walking the block headers), or a reason it is not one frame.
function inspectZstdFrame(f) {
  if (f.length < 6 || u32(f, 0) !== 0xfd2fb528) return { error: 'not a zstd frame: Unknown frame descriptor' };
  const fhd = f[4];
  const fcsFlag = fhd >> 6, singleSegment = (fhd >> 5) & 1, reserved = (fhd >> 3) & 1, checksumFlag = (fhd >> 2) & 1;
  const dictFlag = fhd & 3;
  if (reserved) return { error: 'not a zstd frame: Unsupported frame parameter' };
  let at = 5, window = null;
  if (!singleSegment) {
    const wd = f[at++];
    const log = 10 + (wd >> 3);
    const base = 2 ** log;
    window = base + (base / 8) * (wd & 7);
  }
  at += [0, 1, 2, 4][dictFlag];
  const fcsBytes = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag];
  if (at + fcsBytes > f.length) return { error: 'not a zstd frame: Src size is incorrect' };
  let contentSize = null;
  if (fcsBytes === 1) contentSize = BigInt(f[at]);
  else if (fcsBytes === 2) contentSize = BigInt(u16(f, at) + 256);
  else if (fcsBytes === 4) contentSize = BigInt(u32(f, at));
  else if (fcsBytes === 8) contentSize = u64(f, at);
  at += fcsBytes;
  if (singleSegment) window = Number(contentSize);
  for (;;) {
    if (at + 3 > f.length) return { error: 'not a zstd frame: Src size is incorrect' };
    const bh = f[at] | (f[at + 1] << 8) | (f[at + 2] << 16);
    const last = bh & 1, type = (bh >> 1) & 3, size = bh >>> 3;
    if (type === 3) return { error: 'not a zstd frame: Data corruption detected' };
    at += 3 + (type === 1 ? 1 : size);
    if (at > f.length) return { error: 'not a zstd frame: Src size is incorrect' };
    if (last) break;
  }
  if (checksumFlag) at += 4;
  if (at > f.length) return { error: 'not a zstd frame: Src size is incorrect' };
  return { frameSize: at, contentSize, window, checksumFlag };
}

export class FatBinary {
  // Parses and checks `bytes` (a Uint8Array or ArrayBuffer); `label` names the file in errors.
  static parse(bytes, label = '<memory>') {
    const b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    if (b.length > 4 * 2 ** 30) fail(label, 'header.file_size', `${b.length} bytes exceeds the ${4 * 2 ** 30}-byte limit`);
    const { header, text } = readHeader(b, label);
    const manifest = parseManifest(text, label, header.minor > FORMAT_MINOR);
    checkImageLayout(header, manifest, label);
    return new FatBinary(b, label, header, manifest);
  }

  // Node: reads and parses a file. NotFound when it cannot be opened.
  static async readFile(path) {
    const { readFile } = await import('node:fs/promises');
    let data;
    try {
      data = await readFile(path);
    } catch (e) {
      throw new QfbError('NotFound', `${path}: cannot open fat binary: ${e.message}`);
    }
    return FatBinary.parse(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), path);
  }

  constructor(bytes, label, header, manifest) {
    this.bytes = bytes;
    this.label = label;
    this.header = header;
    this.manifest = manifest;
  }

  findKernel(name) { return this.manifest.kernels.find((k) => k.name === name) ?? null; }
  findImage(target, arch) {
    return this.manifest.images.findIndex((im) => im.target === target && (arch === undefined || im.arch === arch));
  }

  // The decompressed bytes of image `index`, after the checks of FatBinary::image_data.
  imageData(index) {
    const { label } = this;
    const images = this.manifest.images;
    if (!Number.isInteger(index) || index < 0 || index >= images.length)
      throw new QfbError('InvalidArgument', `${label}: image index ${index} out of range (the file has ${images.length} images)`);
    const im = images[index];
    const field = (name) => `images[${index}]${name ? '.' + name : ''}`;
    const frame = this.bytes.subarray(Number(im.offset), Number(im.offset + im.size));
    const sum = fnv1a64(frame);
    if (sum !== im.checksum)
      fail(label, field('checksum'), `mismatch: the manifest says ${checksumHex(im.checksum)}, the image bytes hash to ${checksumHex(sum)} (the image is corrupt)`);
    const info = inspectZstdFrame(frame);
    if (info.error) fail(label, field(''), info.error);
    if (info.frameSize !== frame.length)
      fail(label, field('size'), `the zstd frame is ${info.frameSize} bytes but the image is ${frame.length}`);
    if (info.contentSize === null) fail(label, field('raw_size'), 'the zstd frame does not record its content size');
    if (info.contentSize > BigInt(LIMITS.maxImageRawBytes))
      fail(label, field('raw_size'), `the zstd frame declares ${info.contentSize} bytes, over the ${LIMITS.maxImageRawBytes}-byte limit`);
    if (info.contentSize !== im.rawSize)
      fail(label, field('raw_size'), `the manifest says ${im.rawSize} bytes, the zstd frame declares ${info.contentSize}`);
    if (info.window > 2 ** LIMITS.maxWindowLog && info.window > Number(im.rawSize))
      fail(label, field(''), 'corrupt zstd data: Frame requires too much memory for decoding');
    const raw = Number(im.rawSize);
    let out;
    try {
      out = decompress(frame, new Uint8Array(raw));
    } catch (e) {
      fail(label, field(''), `corrupt zstd data: ${e.message}`);
    }
    if (out.length !== raw) fail(label, field('raw_size'), `decompressed to ${out.length} bytes, the manifest says ${raw}`);
    if (info.checksumFlag) {
      const stored = u32(frame, frame.length - 4);
      if (xxh64Low32(out) !== stored) fail(label, field(''), 'corrupt zstd data: Restored data doesn\'t match checksum');
    }
    return out;
  }
}
