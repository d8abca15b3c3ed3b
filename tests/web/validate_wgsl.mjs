// Every WGSL unit of the given fat binaries through Dawn (npm `webgpu`): Tint's validation at
// createShaderModule and a compute pipeline with the unit's declared bind group layout.
// - units that need `subgroups`: Dawn's Null backend (it offers the feature; nothing runs);
// - the portable units: the OpenGL ES backend on the compatibility adapter (Mesa llvmpipe in
//   CI), where the WGSL is also translated to GLSL and compiled by the driver.
//   node validate_wgsl.mjs a.qfb [b.qfb ...]
// Kernels are checked a few per process (see run_kernels.mjs on Dawn's occasional aborts).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const webDir = process.env.QUIVER_WEB_DIR;
if (!webDir) throw new Error('QUIVER_WEB_DIR must name the directory of runtime/web with its node_modules');
const web = await import(pathToFileURL(join(webDir, 'index.mjs')).href);
const args = process.argv.slice(2);
const PER_PROCESS = 5;

if (args[0] === '--chunk') {
  const [, mode, qfb, names] = args;
  const gpu = await web.nodeGpu(mode === 'null' ? ['backend=null'] : undefined);
  const { device } = await web.requestDevice(gpu, { compatibility: mode !== 'null' });
  const fatbin = await web.FatBinary.readFile(qfb);
  const module = web.Module.load(device, fatbin, mode === 'null' ? undefined : { features: [] });
  let bad = 0;
  for (const name of JSON.parse(names)) {
    const sym = fatbin.findKernel(name).symbol;
    try {
      if (mode === 'null') {
        // Tint's validation only: the Null adapter's limits (8 storage buffers) are no device's.
        const unit = module.unitFor(sym);
        const info = await device.createShaderModule({ code: unit.source }).getCompilationInfo();
        const errors = info.messages.filter((m) => m.type === 'error');
        if (errors.length) throw new Error(errors.map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`).join('\n'));
        console.log(`ok   null ${sym} (${unit.features.join(',') || 'portable'}; WGSL validated)`);
        continue;
      }
      const k = await module.kernel(name);
      console.log(`ok   ${mode.padEnd(4)} ${sym} (${k.unit.features.join(',') || 'portable'}; pipeline created)`);
    } catch (e) {
      bad++;
      console.log(`FAIL ${mode.padEnd(4)} ${sym}: ${e.message}`);
    }
  }
  process.exit(bad ? 1 : 0);
}

let failed = 0, chunks = 0, checked = 0;
for (const qfb of args) {
  const fatbin = await web.FatBinary.readFile(qfb);
  const index = fatbin.findImage('wgsl');
  if (index < 0) { console.log(`FAIL ${qfb}: no wgsl image`); failed++; continue; }
  const units = web.parseWgslImage(new TextDecoder().decode(fatbin.imageData(index)), qfb);
  const names = fatbin.manifest.kernels.filter((k) => units.has(k.symbol)).map((k) => k.name);
  for (const mode of ['null', 'gl']) {
    // Null: the subgroup units only (the portable ones run on GL); GL: every kernel's portable unit.
    const list = mode === 'null'
      ? names.filter((n) => units.get(fatbin.findKernel(n).symbol).some((u) => u.features.includes('subgroups')))
      : names;
    for (let i = 0; i < list.length; i += PER_PROCESS) {
      const chunk = list.slice(i, i + PER_PROCESS);
      const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--chunk', mode, qfb, JSON.stringify(chunk)],
        { encoding: 'utf8', timeout: 300000 });
      const out = (r.stdout + r.stderr).split('\n').filter((l) => l && !l.startsWith('Warning: max')).join('\n');
      console.log(out);
      chunks++;
      checked += chunk.length;
      if (r.status !== 0) { failed++; console.log(`FAIL chunk of ${qfb} (${mode}): exit ${r.status}${r.signal ? ', signal ' + r.signal : ''}`); }
    }
  }
}
console.log(`validate_wgsl: ${checked} units in ${chunks} processes, ${failed} failed`);
process.exit(failed || !checked ? 1 : 0);
