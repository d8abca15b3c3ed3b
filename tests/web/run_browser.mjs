// Runs the web tests' cases (make_cases.cpp, op_cases.cpp) in a browser: headless Chromium with
// WebGPU (SwiftShader where there is no GPU) opens browser_page.html from a static HTTP server
// on 127.0.0.1 that this script starts and stops, and runs each case there through
// case_runner.mjs, the code run_kernels.mjs runs in Node, against the same references. With
// --reader, the reader's checks of reader_test.mjs (reader_checks.mjs) on one .qfb instead.
//
//   node run_browser.mjs <fatbin dir> <cases dir>
//   node run_browser.mjs --reader <fatbin dir> <kernel suite .qfb file name>
//
// Environment: QUIVER_WEB_DIR (runtime/web with its node_modules: web.npm_ci's copy),
// QUIVER_CHROMIUM (the browser; default: chromium on PATH). Without a browser the run prints
// QUIVER_WEB_SKIP (ctest reports it skipped); a browser that fails to start or has no WebGPU
// adapter fails the run. The DevTools protocol goes over --remote-debugging-pipe (file
// descriptors 3 and 4, messages ended by NUL): no port to find, and the browser quits when this
// process goes away.
import { spawn } from 'node:child_process';
import { accessSync, constants, createReadStream, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const CASE_TIMEOUT_MS = 120000, START_TIMEOUT_MS = 60000;
const reader = process.argv[2] === '--reader';
const [fatbinDir, second] = process.argv.slice(reader ? 3 : 2);
const casesDir = reader ? null : second, qfbName = reader ? second : null;
if (!fatbinDir || !second) {
  console.error('usage: node run_browser.mjs [--reader] <fatbin dir> <cases dir | .qfb file name>');
  process.exit(2);
}
const webDir = process.env.QUIVER_WEB_DIR;
if (!webDir) throw new Error('QUIVER_WEB_DIR must name the directory of runtime/web with its node_modules');
const chromium = process.env.QUIVER_CHROMIUM || findOnPath('chromium');
if (!chromium) {
  console.log('QUIVER_WEB_SKIP: no chromium on PATH (Debian package chromium; scripts/bootstrap.sh installs it), '
    + 'so the loader is not run in a browser');
  process.exit(0);
}
const files = reader ? [] : readdirSync(casesDir).filter((f) => f.endsWith('.json')).sort();
if (!reader && !files.length) {
  console.error(`run_browser: no cases in ${casesDir}`);
  process.exit(1);
}

const server = await serve({
  '/loader/': webDir, '/tests/': dirname(fileURLToPath(import.meta.url)), '/fatbins/': fatbinDir,
  ...(reader ? {} : { '/cases/': casesDir }),
});
const browser = launch(chromium);
let exitCode = 1;
try {
  const page = await browser.openPage(`http://127.0.0.1:${server.address().port}/tests/browser_page.html`);
  // A module that cannot be fetched stops the page's scripts without an exception to report.
  const missing = () => (server.missing.length ? `not found on the test server: ${server.missing.join(', ')}` : null);
  await page.waitFor('globalThis.quiverWebTest !== undefined', START_TIMEOUT_MS, 'runtime/web/index.mjs to load', missing);
  if (reader) {
    console.log(`run_browser: ${await browser.version()}`);
    const r = await page.call('readerChecks', [qfbName], CASE_TIMEOUT_MS);
    console.log(r.text);
    exitCode = r.ok ? 0 : 1;
  } else {
    console.log(`run_browser: ${await browser.version()}; adapter ${await page.call('describeDevice', [], START_TIMEOUT_MS)}`);
    let failed = 0;
    for (const f of files) {
      let r;
      try {
        r = await page.call('runCase', [f], CASE_TIMEOUT_MS);
      } catch (e) {
        r = { ok: false, text: `FAIL ${f}: ${e.message}` };
      }
      if (!r.ok) failed++;
      console.log(r.text);
    }
    console.log(`run_browser: ${files.length - failed} of ${files.length} cases passed`);
    exitCode = failed ? 1 : 0;
  }
} catch (e) {
  console.log(`FAIL run_browser: ${e.message}`);
  // Without the D-Bus complaints of a machine that has no session bus.
  const log = browser.log().split('\n').filter((l) => l.trim() && !/dbus/i.test(l)).slice(-20);
  if (log.length) console.log(`  the browser's last messages:\n${log.map((l) => '    ' + l).join('\n')}`);
} finally {
  await browser.close();
  server.close();
}
process.exit(exitCode);

function findOnPath(name) {
  for (const d of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    try {
      accessSync(join(d, name), constants.X_OK);
      return join(d, name);
    } catch {}
  }
  return null;
}

// A static file server for the URL prefixes of `roots`, GET only, nothing outside each root.
function serve(roots) {
  const types = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.json': 'application/json' };
  const missing = [];
  const srv = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    const prefix = Object.keys(roots).find((p) => path.startsWith(p));
    const root = prefix && resolve(roots[prefix]);
    const file = root && resolve(root, '.' + path.slice(prefix.length - 1));
    let ok = req.method === 'GET' && file && file.startsWith(root + sep);
    try { ok = ok && statSync(file).isFile(); } catch { ok = false; }
    if (!ok) {
      if (path !== '/favicon.ico') missing.push(path);
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
    createReadStream(file).pipe(res);
  });
  srv.missing = missing;
  return new Promise((done, fail) => srv.once('error', fail).listen(0, '127.0.0.1', () => done(srv)));
}

// Headless Chromium with WebGPU, driven over the DevTools protocol. The flags keep it off the
// network (this machine reaches none) and its profile in a fresh directory removed at close.
function launch(executable) {
  const profile = mkdtempSync(join(tmpdir(), 'quiver-chromium-'));
  const flags = ['--headless=new', '--enable-unsafe-webgpu', '--remote-debugging-pipe', `--user-data-dir=${profile}`,
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
    '--no-default-browser-check', 'about:blank'];
  // Chromium's sandbox refuses to run as root.
  if (process.getuid?.() === 0) flags.unshift('--no-sandbox');
  const child = spawn(executable, flags, { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
  let log = '', nextId = 1, buffered = '', exited = null;
  const pending = new Map(), listeners = new Set();
  const onOutput = (d) => { log = (log + d).slice(-20000); };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);
  const exitedPromise = new Promise((done) => child.once('exit', (code, signal) => {
    exited = `the browser exited (${signal ? 'signal ' + signal : 'status ' + code})`;
    for (const { fail } of pending.values()) fail(new Error(exited));
    pending.clear();
    done();
  }));
  child.once('error', (e) => { exited = `cannot start ${executable}: ${e.message}`; for (const { fail } of pending.values()) fail(new Error(exited)); });
  const [toBrowser, fromBrowser] = [child.stdio[3], child.stdio[4]];
  toBrowser.on('error', () => {});
  fromBrowser.setEncoding('utf8');
  fromBrowser.on('data', (chunk) => {
    buffered += chunk;
    for (let end; (end = buffered.indexOf('\0')) >= 0; buffered = buffered.slice(end + 1)) {
      const message = JSON.parse(buffered.slice(0, end));
      const waiter = pending.get(message.id);
      if (waiter) {
        pending.delete(message.id);
        if (message.error) waiter.fail(new Error(`${waiter.method}: ${message.error.message}`));
        else waiter.done(message.result);
      } else if (message.method) {
        for (const l of listeners) l(message);
      }
    }
  });
  const send = (method, params = {}, sessionId = undefined) => new Promise((done, fail) => {
    if (exited) return fail(new Error(exited));
    const id = nextId++;
    pending.set(id, { done, fail, method });
    toBrowser.write(JSON.stringify({ id, method, params, sessionId }) + '\0');
  });
  const withTimeout = (promise, ms, what) => {
    let timer;
    const late = new Promise((_, fail) => { timer = setTimeout(() => fail(new Error(`timed out after ${ms / 1000} s waiting for ${what}`)), ms); });
    return Promise.race([promise, late]).finally(() => clearTimeout(timer));
  };

  return {
    log: () => log,
    version: async () => (await send('Browser.getVersion')).product,
    async openPage(url) {
      const { targetId } = await withTimeout(send('Target.createTarget', { url: 'about:blank' }), START_TIMEOUT_MS, 'the browser to start');
      const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
      // The page's uncaught exceptions and console errors (a module that fails to load) go to the log.
      const pageErrors = [];
      listeners.add((m) => {
        if (m.sessionId !== sessionId) return;
        if (m.method === 'Runtime.exceptionThrown') pageErrors.push(m.params.exceptionDetails.exception?.description ?? m.params.exceptionDetails.text);
        if (m.method === 'Runtime.consoleAPICalled' && m.params.type === 'error') log += `\n[page] ${m.params.args.map((a) => a.value ?? a.description).join(' ')}`;
      });
      await send('Runtime.enable', {}, sessionId);
      await send('Page.navigate', { url }, sessionId);
      const evaluate = async (expression, ms, what) => {
        const r = await withTimeout(send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true }, sessionId), ms, what);
        if (r.exceptionDetails) throw new Error(`${what}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
        return r.result.value;
      };
      return {
        // Polls `condition` in the page until it holds, or until the page or `failure()` says why not.
        async waitFor(condition, ms, what, failure = () => null) {
          const deadline = Date.now() + ms;
          while (!(await evaluate(condition, ms, what))) {
            if (pageErrors.length) throw new Error(`the page failed while waiting for ${what}: ${pageErrors.join('; ')}`);
            if (failure()) throw new Error(`the page failed while waiting for ${what}: ${failure()}`);
            if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
            await new Promise((r) => setTimeout(r, 100));
          }
        },
        call: (name, args, ms) => evaluate(`globalThis.quiverWebTest.${name}(...${JSON.stringify(args)})`, ms, `${name}(${args.join(', ')})`),
      };
    },
    async close() {
      if (!exited) await withTimeout(send('Browser.close'), 10000, 'the browser to close').catch(() => child.kill('SIGKILL'));
      await withTimeout(exitedPromise, 10000, 'the browser to exit').catch(() => child.kill('SIGKILL'));
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
