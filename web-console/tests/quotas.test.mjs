// The console's Quotas page (issue 31) in a real browser: Debian's chromium driven by
// playwright-core against a real `ringlog serve` with the StandardAuthorizer and Basic
// authentication. The super user sets a quota for a user and the default client id, and one for
// a client id alone, from the form; both are listed and stored (GET /client-quotas agrees); one is
// removed. A principal that may DESCRIBE_CONFIGS but not ALTER_CONFIGS the cluster sees the list
// with the set and remove buttons disabled, their title naming the missing permission.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UI_DEADLINE_MS, until as untilDeadline, useSecuredConsole } from './harness.mjs';

const ADMIN = 'Basic ' + Buffer.from('admin:admin-secret').toString('base64');
const until = (what, fn) => untilDeadline(what, fn, UI_DEADLINE_MS);
const consoleUnderTest = useSecuredConsole('ringlog-console-quotas-', 'quotas', 'quota-form');
const logIn = (user, password) => consoleUnderTest.logIn(user, password);

async function v3(route, init = {}) {
  const { baseUrl } = consoleUnderTest;
  const cid = (await (await fetch(`${baseUrl}/v3/clusters`, { headers: { Authorization: ADMIN } })).json()).data[0].cluster_id;
  return fetch(`${baseUrl}/v3/clusters/${cid}${route}`, { ...init, headers: { Authorization: ADMIN, ...(init.headers || {}) } });
}

test('the Quotas page sets, lists and removes; without ALTER_CONFIGS its buttons are disabled and say why', async () => {
  const { page, pageErrors } = consoleUnderTest;
  await logIn('admin', 'admin-secret');
  await page.getByTestId('quota-user').fill('alice');
  await page.getByTestId('quota-client-id-default').check();
  await page.getByTestId('quota-key').selectOption('producer_byte_rate');
  await page.getByTestId('quota-value').fill('1048576');
  await page.getByTestId('quota-set').click();
  await page.getByText('set producer_byte_rate=1048576 for user=alice,client-id=<default>').waitFor();
  await page.getByTestId('quota-user').fill('');
  await page.getByTestId('quota-client-id-default').uncheck();
  await page.getByTestId('quota-client-id').fill('slow-app');
  await page.getByTestId('quota-key').selectOption('consumer_byte_rate');
  await page.getByTestId('quota-value').fill('2048');
  await page.getByTestId('quota-set').click();
  const rows = page.getByTestId('quotas-table').locator('tbody tr');
  await until('two quotas listed', async () => (await rows.count()) === 2);
  assert.match(await rows.nth(0).textContent(), /client-id=slow-app.*consumer_byte_rate.*2048/);
  assert.match(await rows.nth(1).textContent(), /user=alice,client-id=<default>.*producer_byte_rate.*1048576/);
  const stored = (await (await v3('/client-quotas')).json()).data;
  assert.deepEqual(stored.map((q) => [q.entity, q.quotas]).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))), [
    [{ user: 'alice', 'client-id': '<default>' }, { producer_byte_rate: 1048576 }],
    [{ 'client-id': 'slow-app' }, { consumer_byte_rate: 2048 }],
  ]);
  // A bad value is refused in the page, naming the key; nothing is sent.
  await page.getByTestId('quota-value').fill('-1');
  await page.getByTestId('quota-set').click();
  await page.getByText('consumer_byte_rate must be a number above 0, got "-1"').waitFor();
  await rows.nth(0).getByTestId('quota-remove').click();
  await until('one quota left', async () => (await rows.count()) === 1 &&
    (await rows.first().textContent()).includes('user=alice'));

  // The viewer may DESCRIBE_CONFIGS the cluster, not ALTER_CONFIGS it.
  const granted = await v3('/acls', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ resource_type: 'CLUSTER', resource_name: 'kafka-cluster', pattern_type: 'LITERAL',
      principal: 'User:viewer', host: '*', operation: 'DESCRIBE_CONFIGS', permission: 'ALLOW' }) });
  assert.equal(granted.status, 201);
  await page.getByTestId('logout').click();
  await logIn('viewer', 'viewer-secret');
  await until('the viewer sees the list', async () => (await rows.count()) === 1);
  const set = page.getByTestId('quota-set');
  assert.equal(await set.isDisabled(), true);
  assert.match(await set.getAttribute('title'), /needs ALTER_CONFIGS on the cluster/);
  assert.equal(await rows.first().getByTestId('quota-remove').isDisabled(), true);
  assert.deepEqual(pageErrors, []);
});
