// The console's login (issue 29) in a real browser: Debian's chromium driven by playwright-core
// against a real `ringlog serve` with http.authentication.method=BASIC (a user of
// the SCRAM store, added with --add-scram). A wrong password is refused on the
// page, the right one opens the console on an HttpOnly session cookie, a topic is created from
// the form (a state-changing call: it carries the CSRF token), the live tail's WebSocket
// authenticates by the cookie, and logging out brings the login page back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchChromium, startBroker, stopBroker, until as untilDeadline } from './harness.mjs';

const UI_DEADLINE_MS = 20000;
const AUTH = 'Basic ' + Buffer.from('operator:op-secret').toString('base64');
const until = (what, fn) => untilDeadline(what, fn, UI_DEADLINE_MS);

let broker;
let baseUrl;
let dataDir;
let context;
let page;
const pageErrors = [];

before(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ringlog-console-login-'));
  ({ broker, baseUrl } = await startBroker(dataDir, { sets: ['http.authentication.method=BASIC'],
    extraArgs: ['--add-scram', 'SCRAM-SHA-512=[name=operator,password=op-secret]'] }));
  context = await launchChromium(dataDir);
  page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(UI_DEADLINE_MS);
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
});

after(async () => {
  if (context) await context.close();
  await stopBroker(broker);
  if (process.exitCode && dataDir) process.stderr.write(fs.readFileSync(path.join(dataDir, 'ringlog.log'), 'utf8').slice(-3000));
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

test('the console asks for a login, refuses a wrong password, works on its session and logs out', async () => {
  await page.goto(`${baseUrl}/console/#/topics`);
  const form = page.getByTestId('login-form');
  await form.waitFor();
  // A first visit had no session to end (it said "the session ended": new user, session 24).
  assert.equal(await form.getByText('the session ended').count(), 0);
  await page.getByTestId('login-user').fill('operator');
  await page.getByTestId('login-password').fill('wrong');
  await page.getByTestId('login-submit').click();
  await form.getByText('wrong user name or password').waitFor();

  await page.getByTestId('login-password').fill('op-secret');
  await page.getByTestId('login-submit').click();
  await page.getByTestId('principal').filter({ hasText: 'User:operator' }).waitFor();
  const cookies = await context.cookies(baseUrl);
  const session = cookies.find((c) => c.name === 'ringlog_session');
  assert.ok(session, JSON.stringify(cookies));
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Strict');

  // A state-changing call from the page (it carries X-CSRF-Token).
  await page.locator('summary', { hasText: 'Create a topic' }).click();
  const create = page.getByTestId('create-topic');
  await create.locator('input[name=topic_name]').fill('audited');
  await create.locator('input[name=partitions_count]').fill('1');
  await create.getByRole('button', { name: 'Create topic' }).click();
  await page.getByText('created topic audited').waitFor();

  // The live tail's WebSocket authenticates by the cookie: a record produced now shows up.
  await page.goto(`${baseUrl}/console/#/tail?topic=audited&partition=0`);
  await until('the tail is live', async () => (await page.getByTestId('tail-state').textContent()) === 'live');
  const cid = (await (await fetch(`${baseUrl}/v3/clusters`, { headers: { Authorization: AUTH } })).json()).data[0].cluster_id;
  const produced = await fetch(`${baseUrl}/v3/clusters/${cid}/topics/audited/records`, {
    method: 'POST', headers: { Authorization: AUTH, 'Content-Type': 'application/json' },
    body: JSON.stringify({ value: { type: 'JSON', data: { seen: 'in the tail' } } }) });
  assert.equal(produced.status, 200);
  await page.getByTestId('tail-value').filter({ hasText: 'in the tail' }).waitFor();

  await page.getByTestId('logout').click();
  await page.getByTestId('login-form').waitFor();
  const after = await context.cookies(baseUrl);
  assert.ok(!after.some((c) => c.name === 'ringlog_session' && c.value), JSON.stringify(after));
  assert.deepEqual(pageErrors, []);
});
