// The page side of run_browser.mjs: imports runtime/web/index.mjs as a page does and runs the
// web tests' cases (case_runner.mjs) on navigator.gpu, or the reader's checks
// (reader_checks.mjs), when the driver calls globalThis.quiverWebTest over the DevTools protocol. One device serves every case (a new one
// after a device loss); the server run_browser.mjs starts maps /loader/ to the loader with its
// node_modules, /tests/ to tests/web, /fatbins/ to the built .qfb files and /cases/ to the cases.
import * as web from '/loader/index.mjs';
import { describeResult, moduleOptions, runCase } from '/tests/case_runner.mjs';
import { readerChecks } from '/tests/reader_checks.mjs';

let current = null;
const fatbins = new Map();   // file name → Promise<FatBinary>
// Modules by device, fat binary and options: loading one decompresses and checks the WGSL
// image, and its kernels are compiled once.
let modules = new Map();

// The device, with what it reported outside error scopes since the last case and whether it was
// lost: both fail the case that was running.
async function gpu() {
  if (current && !current.lost) return current;
  const { adapter, device } = await web.requestDevice(navigator.gpu);
  const state = { adapter, device, uncaptured: [], lost: null };
  device.addEventListener('uncapturederror', (e) => state.uncaptured.push(e.error.message));
  device.lost.then((info) => { state.lost = `${info.reason}: ${info.message}`; });
  current = state;
  modules = new Map();
  return state;
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

function adapterName(adapter) {
  const info = adapter.info ?? {};
  return info.description || [info.vendor, info.architecture].filter(Boolean).join(' ') || 'adapter';
}

globalThis.quiverWebTest = {
  // The adapter and what the device was given: the log's first line.
  async describeDevice() {
    const { adapter, device } = await gpu();
    const limits = ['maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupStorageSize', 'maxStorageBuffersPerShaderStage']
      .map((k) => `${k} ${device.limits[k]}`);
    return `${adapterName(adapter)}; features: ${[...device.features].sort().join(', ') || 'none'}; ${limits.join(', ')}`;
  },

  // The reader's checks (reader_checks.mjs) on /fatbins/<file>: { ok, text }.
  async readerChecks(file) {
    const lines = [];
    try {
      const passed = readerChecks(web, await fetchBytes(`/fatbins/${file}`), file, (line) => lines.push(line));
      lines.push(`reader_checks: ${passed} checks passed`);
      return { ok: true, text: lines.join('\n') };
    } catch (e) {
      lines.push(`FAIL ${e.message}`);
      return { ok: false, text: lines.join('\n') };
    }
  },

  // One case (the JSON at /cases/<file>): { ok, text } with the same log lines as run_kernels.mjs.
  async runCase(file) {
    const c = JSON.parse(new TextDecoder().decode(await fetchBytes(`/cases/${file}`)));
    if (!fatbins.has(c.fatbin))
      fatbins.set(c.fatbin, fetchBytes(`/fatbins/${c.fatbin}`).then((bytes) => web.FatBinary.parse(bytes, c.fatbin)));
    const state = await gpu();
    let result;
    try {
      const options = moduleOptions(c), key = `${c.fatbin} ${JSON.stringify(options)}`;
      if (!modules.has(key)) modules.set(key, web.Module.load(state.device, await fatbins.get(c.fatbin), options));
      result = await runCase(web, state.device, modules.get(key), c);
    } catch (e) {
      result = { unit: '?', problems: [`  ${e.name}: ${e.message}`] };
    }
    result.problems.push(...state.uncaptured.splice(0).map((m) => `  uncaptured WebGPU error: ${m}`));
    if (state.lost) result.problems.push(`  the device was lost: ${state.lost}`);
    return { ok: result.problems.length === 0, text: describeResult(c, result, adapterName(state.adapter)) };
  },
};
