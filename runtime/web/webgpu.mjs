// Running a .qfb's kernels with WebGPU: the WGSL image (docs/abi.md "WGSL") → one compute
// pipeline per kernel, with the bind group layout the image declares; launches check their
// arguments against the manifest like the C++ runtime (quiver::Kernel::launch).
import { QfbError } from './qfb.mjs';

const IMAGE_HEADER = '// quiver WGSL image v1';
const UNIT_RE = /^\/\/@qv-kernel ([A-Za-z_][A-Za-z0-9_]*) entry=([A-Za-z_][A-Za-z0-9_]*) features=([a-z0-9_,-]+) bindings=(\S+)$/;
const BINDING_KINDS = new Set(['read', 'read_write', 'uniform']);

// The WGSL image's text → Map(symbol → [{entry, features, bindings, source}]), units in the
// image's order (the first whose features the device has is the one to use).
export function parseWgslImage(text, label) {
  const bad = (what) => { throw new QfbError('InvalidFatBinary', `${label}: invalid WGSL image: ${what}`); };
  const lines = text.split('\n');
  if (lines[0] !== IMAGE_HEADER) bad(`the first line is not "${IMAGE_HEADER}"`);
  const units = new Map();
  let current = null;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('//@qv-kernel ')) {
      const m = UNIT_RE.exec(line);
      if (!m) bad(`line ${i + 1}: malformed unit line "${line}"`);
      const features = m[3] === 'none' ? [] : m[3].split(',');
      const bindings = m[4] === '-' ? [] : m[4].split(',').map((b) => {
        const [index, kind] = b.split(':');
        if (!/^[0-9]+$/.test(index) || !BINDING_KINDS.has(kind)) bad(`line ${i + 1}: malformed binding "${b}"`);
        return { index: Number(index), kind };
      });
      current = { entry: m[2], features, bindings, lines: [] };
      if (!units.has(m[1])) units.set(m[1], []);
      units.get(m[1]).push(current);
    } else if (current) {
      current.lines.push(line);
    } else if (line.trim() !== '') {
      bad(`line ${i + 1}: text before the first unit`);
    }
  }
  for (const list of units.values()) for (const u of list) { u.source = u.lines.join('\n'); delete u.lines; }
  return units;
}

// Node: the `webgpu` package (Dawn). `options` are Dawn's create() strings; by default those of
// QUIVER_WEBGPU_OPTIONS (space-separated, e.g. "backend=opengles" for Mesa llvmpipe).
export async function nodeGpu(options) {
  let webgpu;
  try {
    webgpu = await import('webgpu');
  } catch (e) {
    throw new QfbError('NotFound', `the npm package "webgpu" is not installed (npm ci in runtime/web): ${e.message}`);
  }
  Object.assign(globalThis, webgpu.globals);
  const env = (typeof process !== 'undefined' && process.env.QUIVER_WEBGPU_OPTIONS) || '';
  return webgpu.create(options ?? env.split(' ').filter(Boolean));
}

// An adapter and a device with what quiver kernels can use: the adapter's own limits (WebGPU's
// defaults, lower still in compatibility mode, would refuse 1024-invocation blocks or kernels
// with many buffers) and the `subgroups` feature when offered.
export async function requestDevice(gpu = globalThis.navigator?.gpu, { compatibility = false } = {}) {
  if (!gpu) throw new QfbError('NotFound', 'no WebGPU implementation (navigator.gpu is missing; in Node use nodeGpu())');
  const adapter = await gpu.requestAdapter(compatibility ? { featureLevel: 'compatibility', compatibilityMode: true } : undefined);
  if (!adapter) throw new QfbError('NotFound', `no WebGPU adapter${compatibility ? ' (compatibility mode)' : ''}`);
  const wanted = ['maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY', 'maxComputeWorkgroupSizeZ',
    'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupStorageSize', 'maxStorageBuffersPerShaderStage',
    'maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupsPerDimension'];
  const requiredLimits = {};
  for (const k of wanted) if (adapter.limits[k] !== undefined) requiredLimits[k] = adapter.limits[k];
  const requiredFeatures = ['subgroups'].filter((f) => adapter.features.has(f));
  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  return { adapter, device };
}

// Storage buffers: sizes rounded up to 4 bytes (packed 8/16-bit elements are read as u32 words).
export function createBuffer(device, byteLength, extraUsage = 0) {
  return device.createBuffer({
    size: Math.max(4, Math.ceil(byteLength / 4) * 4),
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST | extraUsage,
  });
}

export function upload(device, typedArray) {
  const bytes = new Uint8Array(typedArray.buffer, typedArray.byteOffset, typedArray.byteLength);
  const buffer = createBuffer(device, bytes.length);
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  if (padded.length) device.queue.writeBuffer(buffer, 0, padded);
  return buffer;
}

export async function download(device, buffer, byteLength) {
  const size = Math.ceil(byteLength / 4) * 4;
  const staging = device.createBuffer({ size: Math.max(4, size), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(buffer, 0, staging, 0, size);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = new Uint8Array(staging.getMappedRange(0, size)).slice(0, byteLength);
  staging.unmap();
  staging.destroy();
  return out;
}

// float → IEEE half / bfloat16 bits, rounding to nearest even (after rounding to float).
export function f32ToF16Bits(x) {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0];
  const sign = (u >>> 16) & 0x8000, exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  let shift = 13, h;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    shift = 14 - e;
    h = mant >>> shift;
  } else {
    h = (e << 10) | (mant >>> 13);
  }
  const rem = mant & ((1 << shift) - 1), half = 1 << (shift - 1);
  if (rem > half || (rem === half && (h & 1))) h++;   // a carry into the exponent is right
  return sign | h;
}
export function f32ToBf16Bits(x) {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0];
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 0x40) & 0xffff;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

const INT_RANGES = {
  bool: [0, 1], int8_t: [-128, 127], uint8_t: [0, 255], int16_t: [-32768, 32767], uint16_t: [0, 65535],
  int32_t: [-2147483648, 2147483647], uint32_t: [0, 4294967295],
};

// One scalar argument → its 32-bit word(s) of the uniform struct (docs/abi.md "WGSL").
function scalarWord(param, value, where) {
  const bad = (what) => { throw new QfbError('InvalidArgument', `${where}: ${what}`); };
  const t = param.type;
  if (t === 'half' || t === 'bf16') {
    if (value !== null && typeof value === 'object' && Number.isInteger(value.bits) && value.bits >= 0 && value.bits <= 0xffff)
      return value.bits;
    if (typeof value !== 'number') bad(`expected a number or {bits} for a ${t} scalar, got ${typeof value}`);
    return t === 'half' ? f32ToF16Bits(value) : f32ToBf16Bits(value);
  }
  if (t === 'float') {
    if (typeof value !== 'number') bad(`expected a number for a float scalar, got ${typeof value}`);
    return new Uint32Array(new Float32Array([value]).buffer)[0];
  }
  if (t === 'bool' && typeof value === 'boolean') return value ? 1 : 0;
  if (t === 'int64_t' || t === 'uint64_t') {
    // Two words, low then high (two's complement): a BigInt, or a number that is a safe integer.
    if (typeof value === 'number' && Number.isSafeInteger(value)) value = BigInt(value);
    if (typeof value !== 'bigint') bad(`expected a BigInt or a safe integer for a ${t} scalar, got ${value}`);
    const [lo, hi] = t === 'int64_t' ? [-(1n << 63n), (1n << 63n) - 1n] : [0n, (1n << 64n) - 1n];
    if (value < lo || value > hi) bad(`${value} is out of range for ${t}`);
    const bits = BigInt.asUintN(64, value);
    return [Number(bits & 0xffffffffn), Number(bits >> 32n)];
  }
  const range = INT_RANGES[t];
  if (!range) throw new QfbError('Unsupported', `${where}: ${t} scalars are not expressible in WGSL`);
  if (typeof value !== 'number' || !Number.isInteger(value)) bad(`expected an integer for a ${t} scalar, got ${value}`);
  if (value < range[0] || value > range[1]) bad(`${value} is out of range for ${t}`);
  return value >>> 0;
}

export class Kernel {
  constructor(module, kernel, unit, pipeline) {
    this.module = module;
    this.manifest = kernel;
    this.unit = unit;
    this.pipeline = pipeline;
  }

  // Encodes and submits one dispatch of `grid` blocks ([x, y, z] or a number); `args` in
  // manifest order: GPUBuffers for buffers, numbers (or {bits} for half/bf16) for scalars.
  launch(grid, args) {
    const { device } = this.module;
    const k = this.manifest;
    const where = `kernel '${k.name}'`;
    const g = typeof grid === 'number' ? [grid, 1, 1] : [...grid, 1, 1, 1].slice(0, 3);
    const maxGroups = device.limits.maxComputeWorkgroupsPerDimension;
    g.forEach((n, d) => {
      if (!Number.isInteger(n) || n < 0 || n > maxGroups)
        throw new QfbError('InvalidArgument', `${where}: grid dimension ${d} is ${n} (the device allows 0..${maxGroups})`);
    });
    if (!Array.isArray(args) || args.length !== k.params.length)
      throw new QfbError('InvalidArgument', `${where}: expected ${k.params.length} arguments, got ${Array.isArray(args) ? args.length : typeof args}`);
    const scalarWords = [];
    const entries = [];
    k.params.forEach((p, i) => {
      const at = `${where}: argument ${i} ('${p.name}')`;
      if (p.buffer) {
        const buffer = args[i];
        if (!buffer || typeof buffer.size !== 'number' || typeof buffer.usage !== 'number')
          throw new QfbError('InvalidArgument', `${at}: expected a GPUBuffer for a ${p.type} buffer`);
        if (!(buffer.usage & GPUBufferUsage.STORAGE))
          throw new QfbError('InvalidArgument', `${at}: the buffer lacks GPUBufferUsage.STORAGE`);
        if (this.unit.bindings.some((b) => b.index === i)) entries.push({ binding: i, resource: { buffer } });
      } else {
        scalarWords.push(...[scalarWord(p, args[i], at)].flat());
      }
    });
    let uniform = null;
    const uniformBinding = this.unit.bindings.find((b) => b.kind === 'uniform');
    if (uniformBinding) {
      const size = Math.max(16, Math.ceil((scalarWords.length * 4) / 16) * 16);
      uniform = device.createBuffer({ size, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      const words = new Uint32Array(size / 4);
      words.set(scalarWords);
      device.queue.writeBuffer(uniform, 0, words);
      entries.push({ binding: uniformBinding.index, resource: { buffer: uniform } });
    }
    const bindGroup = device.createBindGroup({ layout: this.module.layouts.get(k.symbol), entries });
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(this.pipeline);
    pass.setBindGroup(0, bindGroup);
    if (g[0] && g[1] && g[2]) pass.dispatchWorkgroups(g[0], g[1], g[2]);
    pass.end();
    device.queue.submit([enc.finish()]);
    uniform?.destroy();   // WebGPU keeps it alive for the submitted work
  }
}

export class Module {
  // `fatbin` is a FatBinary (qfb.mjs); its WGSL image is decompressed and checked here.
  // `options.features`: the WebGPU features units may rely on (default: the device's); [] picks
  // the portable units (subgroup operations over subgroups of one invocation).
  static load(device, fatbin, options = {}) {
    const index = fatbin.findImage('wgsl');
    if (index < 0) throw new QfbError('NotFound', `${fatbin.label}: the fat binary has no wgsl image`);
    const text = new TextDecoder('utf-8', { fatal: true }).decode(fatbin.imageData(index));
    const units = parseWgslImage(text, `${fatbin.label}: images[${index}]`);
    for (const sym of fatbin.manifest.images[index].kernels)
      if (!units.has(sym)) throw new QfbError('InvalidFatBinary', `${fatbin.label}: images[${index}]: no WGSL unit for kernel symbol '${sym}'`);
    return new Module(device, fatbin, units, fatbin.manifest.images[index].kernels, options.features);
  }

  constructor(device, fatbin, units, symbols, features) {
    this.device = device;
    this.features = new Set(features ?? device.features);
    this.fatbin = fatbin;
    this.units = units;
    this.symbols = symbols;
    this.layouts = new Map();
    this.kernels = new Map();
  }

  // The unit of `symbol` this device can run: the first whose features it has.
  unitFor(symbol) {
    return this.units.get(symbol).find((u) => u.features.every((f) => this.features.has(f) && this.device.features.has(f))) ?? null;
  }

  // Compiles (once) and returns the kernel named `name` (its canonical C++ spelling).
  async kernel(name) {
    if (this.kernels.has(name)) return this.kernels.get(name);
    const k = this.fatbin.findKernel(name);
    if (!k) throw new QfbError('NotFound', `${this.fatbin.label}: no kernel named '${name}'`);
    if (!this.symbols.includes(k.symbol))
      throw new QfbError('NotFound', `${this.fatbin.label}: kernel '${name}' has no wgsl image (built without wgsl)`);
    const unit = this.unitFor(k.symbol);
    if (!unit) throw new QfbError('Unsupported', `kernel '${name}': no WGSL unit runs on this device (needs ${this.units.get(k.symbol)[0].features.join(', ')})`);
    const { device } = this;
    device.pushErrorScope('validation');
    const shader = device.createShaderModule({ code: unit.source, label: k.symbol });
    const info = await shader.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length)
      throw new QfbError('CompileError', `kernel '${name}' (${k.symbol}): the WGSL does not compile:\n` +
        errors.map((m) => `  ${m.lineNum}:${m.linePos}: ${m.message}`).join('\n'));
    const layout = device.createBindGroupLayout({
      label: k.symbol,
      entries: unit.bindings.map((b) => ({
        binding: b.index, visibility: GPUShaderStage.COMPUTE,
        buffer: { type: b.kind === 'read' ? 'read-only-storage' : b.kind === 'uniform' ? 'uniform' : 'storage' },
      })),
    });
    const pipeline = await device.createComputePipelineAsync({
      label: k.symbol, layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module: shader, entryPoint: unit.entry },
    }).catch((e) => e);
    const scopeError = await device.popErrorScope();
    if (pipeline instanceof Error || scopeError)
      throw new QfbError('CompileError', `kernel '${name}' (${k.symbol}): cannot create the pipeline: ${(scopeError ?? pipeline).message}`);
    this.layouts.set(k.symbol, layout);
    const kernel = new Kernel(this, k, unit, pipeline);
    this.kernels.set(name, kernel);
    return kernel;
  }
}
