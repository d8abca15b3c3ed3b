// One case of the web tests (make_cases.cpp, op_cases.cpp: a kernel, its inputs, its grid and
// the host reference of each output) through the JavaScript loader on a WebGPU device, and the
// comparison of its outputs with the references. Shared by the Node runner (run_kernels.mjs,
// Dawn) and the browser page (browser_page.mjs): it imports nothing, so it loads in both; the
// loader's module namespace (runtime/web/index.mjs) is handed in.

export const fromHex = (s) => Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));

// The options of the Module (web.Module.load) a case runs in: a case named *_size1 checks the
// subgroup-free unit (subgroups of one invocation).
export const moduleOptions = (c) => (c.name.endsWith('_size1') ? { features: [] } : {});

// Uploads the case's inputs, poisons every output that has no initial contents (0xA5 bytes),
// launches, downloads and compares. `module` is the Module of the case's "fatbin" loaded with
// moduleOptions(c). Returns { unit, ms, problems, errors }: no problems means the case passed;
// errors are the measured errors of the gate's metrics, for the log.
export async function runCase(web, device, module, c) {
  const { upload, download, createBuffer } = web;
  const kernel = await module.kernel(c.kernel);
  const buffers = c.buffers.map((b) => {
    const init = fromHex(b.init);
    if (init.length) return upload(device, init);
    const buf = createBuffer(device, b.bytes);
    device.queue.writeBuffer(buf, 0, new Uint8Array(Math.ceil(b.bytes / 4) * 4).fill(0xa5));
    return buf;
  });
  const launchArgs = c.args.map((a) => ('buffer' in a ? buffers[a.buffer] : 'bits' in a ? { bits: a.bits } : 'bigint' in a ? BigInt(a.bigint) : a.value));
  const t0 = performance.now();
  kernel.launch(c.grid, launchArgs);
  await device.queue.onSubmittedWorkDone();
  const ms = performance.now() - t0;
  const problems = [], errors = [];
  for (let i = 0; i < c.buffers.length; i++) {
    const b = c.buffers[i];
    if (!b.check) continue;
    const got = await download(device, buffers[i], b.bytes);
    const why = compare(b.check, got, fromHex(b.check.expect), (e) => errors.push(`${b.name} ${e.toExponential(2)} <= ${b.check.bound.toExponential(2)}`));
    if (why) problems.push(`  output '${b.name}': ${why}`);
  }
  for (const buf of buffers) buf.destroy();
  return { unit: kernel.unit.features.length ? 'subgroups' : 'portable', ms, problems, errors };
}

// The log line(s) of a case's result: "ok   <case> (...)" or "FAIL <case> (...)" and its problems.
export function describeResult(c, result, adapterName) {
  const { unit, ms, problems, errors } = result;
  if (problems.length) return `FAIL ${c.name} (${c.kernel}, ${unit} unit) on ${adapterName}\n${problems.join('\n')}`;
  return `ok   ${c.name} (${c.kernel}, ${unit} unit, ${ms.toFixed(1)} ms)${errors.length ? ' error ' + errors.join(', ') : ''}`;
}

// Comparison kinds (make_cases.cpp's Check): exact bytes; f32 / f16 / bf16 bit-exact with any NaN
// matching any NaN; near (|got - ref| <= rel |ref| + abs); ulp (error in units of the
// reference's last place, or of expect_flushed's, the reference for the inputs with subnormal
// values flushed; zero for a subnormal reference); permutation (u32 values 0..n-1 each once);
// pair_slots (u32 slot p is 2p or 2p + 1). max_mismatch_fraction lets that fraction of exact u32
// elements differ.
// row_scaled (the op gate's metric: per group of elements, max |got - ref| / max |ref|) and scaled
// (|got - ref| / scale[i], the scale given per element: the gate's input-scaled, dot-weighted and
// v-scaled metrics) hand their worst error to `measured`, then check the guard after the output.
export function compare(check, got, expect, measured = () => {}) {
  const f32 = (b) => new Float32Array(b.buffer, b.byteOffset, b.length / 4);
  const u32 = (b) => new Uint32Array(b.buffer, b.byteOffset, b.length / 4);
  const u16 = (b) => new Uint16Array(b.buffer, b.byteOffset, b.length / 2);
  const g = got.slice(), e = expect.slice();   // aligned copies
  const report = (bad, total, first) => (bad ? `${bad} of ${total} elements differ; first: ${first}` : null);
  let bad = 0, first = '';
  const mismatch = (i, a, b) => { if (!bad++) first = `[${i}] got ${a}, expected ${b}`; };
  switch (check.kind) {
    case 'exact': {
      if (check.max_mismatch_fraction > 0) {
        const G = u32(g), E = u32(e);
        for (let i = 0; i < E.length; i++) if (G[i] !== E[i]) mismatch(i, G[i], E[i]);
        return bad > check.max_mismatch_fraction * E.length ? report(bad, E.length, first) : null;
      }
      if (g.length !== e.length) return `got ${g.length} bytes, expected ${e.length}`;
      for (let i = 0; i < e.length; i++) if (g[i] !== e[i]) mismatch(i, g[i], e[i]);
      return report(bad, e.length, first);
    }
    case 'f32': case 'near': case 'ulp': {
      const G = f32(g), E = f32(e), GB = u32(g), EB = u32(e);
      const F = check.expect_flushed ? f32(fromHex(check.expect_flushed)) : null;
      // WGSL lets an implementation flush subnormal inputs and results to zero (SwiftShader does).
      const withinUlp = (a, r) => a === r || ulpError(a, r) <= check.ulp || (a === 0 && Math.abs(r) < 2 ** -126);
      for (let i = 0; i < E.length; i++) {
        const a = G[i], r = E[i];
        if (Number.isNaN(a) && Number.isNaN(r)) continue;
        let ok;
        if (check.kind === 'f32') ok = GB[i] === EB[i];
        else if (check.kind === 'near') ok = Math.abs(a - r) <= check.rel * Math.abs(r) + check.abs;
        else ok = withinUlp(a, r) || (F !== null && withinUlp(a, F[i]));
        if (!ok) mismatch(i, a, r);
      }
      return report(bad, E.length, first);
    }
    case 'f16': case 'bf16': {
      const G = u16(g), E = u16(e);
      const isNan = check.kind === 'f16' ? (h) => (h & 0x7c00) === 0x7c00 && (h & 0x3ff) : (h) => (h & 0x7f80) === 0x7f80 && (h & 0x7f);
      for (let i = 0; i < E.length; i++) if (G[i] !== E[i] && !(isNan(G[i]) && isNan(E[i]))) mismatch(i, '0x' + G[i].toString(16), '0x' + E[i].toString(16));
      return report(bad, E.length, first);
    }
    case 'row_scaled': case 'scaled': {
      const n = e.length / 8, size = check.elem === 'f32' ? 4 : 2;
      const R = new Float64Array(e.buffer, e.byteOffset, n);
      const S = check.kind === 'scaled' ? new Float64Array(fromHex(check.scale).buffer) : null;
      if (S && S.length !== n) return `${S.length} scales for ${n} elements`;
      const value = (i) => {
        if (size === 4) return new DataView(g.buffer).getFloat32(g.byteOffset + 4 * i, true);
        const bits = new DataView(g.buffer).getUint16(g.byteOffset + 2 * i, true);
        if (check.elem === 'bf16') return new Float32Array(new Uint32Array([bits << 16]).buffer)[0];
        const exp = (bits >> 10) & 31, man = bits & 1023, sign = bits & 0x8000 ? -1 : 1;
        if (exp === 31) return man ? NaN : sign * Infinity;
        return sign * (exp ? (1 + man / 1024) * 2 ** (exp - 15) : man * 2 ** -24);
      };
      let worst = 0, at = -1;
      for (let start = 0; start < n; start += check.group) {
        const end = Math.min(n, start + check.group);
        let scale = 0;
        for (let i = start; i < end; i++) scale = Math.max(scale, Math.abs(R[i]));
        if (scale === 0) scale = 1;
        for (let i = start; i < end; i++) {
          const err = Math.abs(value(i) - R[i]) / (S ? S[i] : scale);
          if (!(err <= worst)) { worst = Number.isNaN(err) ? Infinity : err; at = i; }
        }
      }
      for (let i = n * size; i < g.length; i++)
        if (g[i] !== 0xa5) return `the guard after the output was overwritten (byte ${i})`;
      measured(worst);
      if (worst > check.bound) return `${check.kind.replace('_', '-')} error ${worst.toExponential(3)} > bound ${check.bound} (worst at [${at}]: got ${value(at)}, reference ${R[at]}${S ? ', scale ' + S[at] : ''})`;
      return null;
    }
    case 'permutation': {
      const G = u32(g), seen = new Uint8Array(G.length);
      for (let i = 0; i < G.length; i++) {
        if (G[i] >= G.length || seen[G[i]]) mismatch(i, G[i], `a value below ${G.length} seen once`);
        else seen[G[i]] = 1;
      }
      return report(bad, G.length, first);
    }
    case 'pair_slots': {
      const G = u32(g);
      for (let p = 0; p < G.length; p++) if (G[p] !== 2 * p && G[p] !== 2 * p + 1) mismatch(p, G[p], `${2 * p} or ${2 * p + 1}`);
      return report(bad, G.length, first);
    }
    default:
      return `unknown check kind '${check.kind}'`;
  }
}

function ulpError(got, ref) {
  const r = Math.abs(ref);
  const bits = new Uint32Array(new Float32Array([r]).buffer)[0];
  const next = new Float32Array(new Uint32Array([bits + 1]).buffer)[0];
  const ulp = r === 0 ? 2 ** -149 : next - r;
  return Math.abs(got - ref) / ulp;
}
