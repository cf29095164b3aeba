// What the console's browser tests share (not a test file itself: node --test runs *.test.mjs):
// a free loopback port, a deadline poll, a `ringlog serve` of their own and Debian's chromium.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = process.env.RINGLOG_BIN || path.join(ROOT, 'build', 'src', 'app', 'ringlog');
export const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
export const START_DEADLINE_MS = 20000;

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Polls fn() until it returns a truthy value or deadlineMs passes. */
export async function until(what, fn, deadlineMs) {
  const end = Date.now() + deadlineMs;
  let delay = 20;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what} (last: ${last})`);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 250);
  }
}

/** Starts `ringlog serve` on a free port with its data and log in dataDir; resolves to
 *  {broker, baseUrl} once /v1/health answers. `sets` are more --set KEY=VALUE, `env` more variables. */
export async function startBroker(dataDir, { sets = [], env = {}, extraArgs = [] } = {}) {
  assert.ok(fs.existsSync(BIN), `ringlog binary not found at ${BIN}: build it or set RINGLOG_BIN`);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const log = fs.openSync(path.join(dataDir, 'ringlog.log'), 'a');
  const args = ['serve', '--set', `listeners=http://127.0.0.1:${port}`, '--set', `log.dirs=${path.join(dataDir, 'data')}`,
    '--set', 'num.shards=2', ...sets.flatMap((s) => ['--set', s]), ...extraArgs];
  const broker = spawn(BIN, args, { stdio: ['ignore', log, log], env: { ...process.env, ...env } });
  await until('/v1/health', async () => {
    if (broker.exitCode !== null) throw new Error(`ringlog exited with ${broker.exitCode}`);
    return (await fetch(`${baseUrl}/v1/health`)).ok;
  }, START_DEADLINE_MS);
  return { broker, baseUrl };
}

/** Debian's chromium, headless, with a profile in dataDir. */
export async function launchChromium(dataDir, options = {}) {
  assert.ok(fs.existsSync(CHROMIUM), `chromium not found at ${CHROMIUM}: apt-get install chromium (scripts/install-deps.sh)`);
  return chromium.launchPersistentContext(path.join(dataDir, 'chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    ...options,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

/** SIGTERM and wait for the exit. */
export async function stopBroker(broker) {
  if (!broker || broker.exitCode !== null) return;
  const exited = new Promise((r) => broker.once('exit', r));
  broker.kill('SIGTERM');
  await exited;
}

/** Longest wait for one step of a console page in the browser tests, ms. */
export const UI_DEADLINE_MS = 20000;

/**
 * A broker with Basic authentication, the StandardAuthorizer, super user admin (admin-secret)
 * and user viewer (viewer-secret), and a chromium page on it whose page errors are collected.
 * `prefix` names the temporary directory; `sets` are more --set KEY=VALUE. Close it with
 * closeSecuredConsole.
 */
export async function openSecuredConsole(prefix, { sets = [] } = {}) {
  const s = { pageErrors: [] };
  s.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  ({ broker: s.broker, baseUrl: s.baseUrl } = await startBroker(s.dataDir, {
    sets: ['http.authentication.method=BASIC', 'super.users=User:admin',
      'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer', ...sets],
    extraArgs: ['--add-scram', 'SCRAM-SHA-512=[name=admin,password=admin-secret]',
      '--add-scram', 'SCRAM-SHA-512=[name=viewer,password=viewer-secret]'],
  }));
  s.context = await launchChromium(s.dataDir);
  s.page = s.context.pages()[0] || await s.context.newPage();
  s.page.setDefaultTimeout(UI_DEADLINE_MS);
  s.page.on('pageerror', (e) => s.pageErrors.push(`pageerror: ${e.message}`));
  return s;
}

/** Closes chromium and the broker; prints the broker's log tail when a test failed. */
export async function closeSecuredConsole(s) {
  if (!s) return;
  if (s.context) await s.context.close();
  await stopBroker(s.broker);
  if (process.exitCode && s.dataDir) process.stderr.write(fs.readFileSync(path.join(s.dataDir, 'ringlog.log'), 'utf8').slice(-3000));
  if (s.dataDir) fs.rmSync(s.dataDir, { recursive: true, force: true });
}

/** Opens console page `route` (e.g. "acls"), logs in as `user` and waits for `readyTestId`. */
export async function logInTo(s, route, user, password, readyTestId) {
  await s.page.goto(`${s.baseUrl}/console/#/${route}`);
  await s.page.getByTestId('login-form').waitFor();
  await s.page.getByTestId('login-user').fill(user);
  await s.page.getByTestId('login-password').fill(password);
  await s.page.getByTestId('login-submit').click();
  await s.page.getByTestId('principal').filter({ hasText: `User:${user}` }).waitFor();
  await s.page.getByTestId(readyTestId).waitFor();
}

/**
 * Registers before/after hooks of a secured console (openSecuredConsole) for the calling test file;
 * the state it answers is filled once the hooks ran, and its logIn(user, password) opens `route`.
 * `options` go to openSecuredConsole.
 */
export function useSecuredConsole(prefix, route, readyTestId, options = {}) {
  const s = { pageErrors: [] };
  before(async () => Object.assign(s, await openSecuredConsole(prefix, options)));
  after(async () => closeSecuredConsole(s));
  s.logIn = (user, password) => logInTo(s, route, user, password, readyTestId);
  return s;
}
