// Runs the web test's cases (make_cases.cpp) through the JavaScript loader (runtime/web) on a
// WebGPU device in Node (Dawn, npm `webgpu`): each case as case_runner.mjs runs it (inputs
// uploaded, outputs poisoned, launched, compared with the host reference). run_browser.mjs runs
// the same cases in a browser.
//
//   node run_kernels.mjs <fatbin dir> <cases dir>          every case, each in its own process
//   node run_kernels.mjs --case <fatbin dir> <case.json>   one case (its "fatbin" is in <fatbin dir>)
//
// One process per case: Dawn's Node bindings (webgpu 0.6.2) were seen to abort now and then in
// processes that create many shader modules on Mesa llvmpipe; a case per process keeps a crash
// to the case that hit it (it still fails the test). Environment: QUIVER_WEBGPU_OPTIONS (Dawn
// create() options, e.g. "backend=opengles"), QUIVER_WEBGPU_COMPAT=1 (compatibility adapter).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describeResult, moduleOptions, runCase } from './case_runner.mjs';

const args = process.argv.slice(2);
if (args[0] === '--case') await runOne(args[1], args[2]);
else runAll(args[0], args[1]);

function runAll(qfb, dir) {
  if (!qfb || !dir) {
    console.error('usage: node run_kernels.mjs <fatbin dir> <cases dir>');
    process.exit(2);
  }
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  if (!files.length) {
    console.error(`run_kernels: no cases in ${dir}`);
    process.exit(1);
  }
  let failed = 0;
  for (const f of files) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--case', qfb, join(dir, f)], {
      encoding: 'utf8', timeout: 120000,
    });
    const out = (r.stdout + r.stderr).split('\n').filter((l) => l && !l.startsWith('Warning: max')).join('\n');
    if (r.status === 0) {
      console.log(out);
    } else {
      failed++;
      console.log(`FAIL ${f} (exit ${r.status}${r.signal ? ', signal ' + r.signal : ''})\n${out}`);
    }
  }
  console.log(`run_kernels: ${files.length - failed} of ${files.length} cases passed`);
  process.exit(failed ? 1 : 0);
}


async function runOne(fatbinDir, casePath) {
  // The loader: the build directory's copy of runtime/web, where `npm ci` installed its packages.
  const webDir = process.env.QUIVER_WEB_DIR;
  if (!webDir) throw new Error('QUIVER_WEB_DIR must name the directory of runtime/web with its node_modules');
  const web = await import(pathToFileURL(join(webDir, 'index.mjs')).href);
  const c = JSON.parse(readFileSync(casePath, 'utf8'));
  const gpu = await web.nodeGpu();
  const { adapter, device } = await web.requestDevice(gpu, { compatibility: process.env.QUIVER_WEBGPU_COMPAT === '1' });
  const fatbin = await web.FatBinary.readFile(join(fatbinDir, c.fatbin));
  const result = await runCase(web, device, web.Module.load(device, fatbin, moduleOptions(c)), c);
  const info = adapter.info ?? {};
  console.log(describeResult(c, result, info.description || info.vendor || 'adapter'));
  process.exit(result.problems.length ? 1 : 0);
}
