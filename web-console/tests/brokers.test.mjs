// The console's Brokers page (issue 33) in a real browser: Debian's chromium driven by
// playwright-core against a real one-node `ringlog serve` with the StandardAuthorizer and Basic
// authentication. The super user sees the broker running with the replicas and leaders the server
// lists and the bytes on disk the dry run counts; the rebalance dry run says the one broker is balanced
// and "Start rebalance" is disabled saying why; decommissioning the only broker (a controller
// quorum voter) is refused with the server's message shown as it came. A principal that may
// DESCRIBE but not ALTER the cluster sees the same page with Start rebalance, Decommission and
// Cancel all reassignments disabled, their titles naming the missing permission. A
// leader.replication.throttled.rate set on the broker is then shown, exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UI_DEADLINE_MS, until as untilDeadline, useSecuredConsole } from './harness.mjs';

const ADMIN = 'Basic ' + Buffer.from('admin:admin-secret').toString('base64');
const until = (what, fn) => untilDeadline(what, fn, UI_DEADLINE_MS);
const consoleUnderTest = useSecuredConsole('ringlog-console-brokers-', 'brokers', 'brokers-table');
const logIn = (user, password) => consoleUnderTest.logIn(user, password);

async function v3(route, init = {}) {
  const { baseUrl } = consoleUnderTest;
  const cid = (await (await fetch(`${baseUrl}/v3/clusters`, { headers: { Authorization: ADMIN } })).json()).data[0].cluster_id;
  return fetch(`${baseUrl}/v3/clusters/${cid}${route}`, { ...init, headers: { Authorization: ADMIN, ...(init.headers || {}) } });
}

const json = (body) => ({ method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

test('the Brokers page shows the broker, a balanced dry run and the server refusing to decommission the only broker', async () => {
  const { page, pageErrors } = consoleUnderTest;
  assert.equal((await v3('/topics', json({ topic_name: 'orders', partitions_count: 3, replication_factor: 1 }))).status, 201);
  await logIn('admin', 'admin-secret');

  // The broker, its state, and the replicas and leaders the server lists for it.
  await until('broker 0 running', async () => (await page.getByTestId('broker-state-0').textContent()) === 'running');
  const replicas = (await (await v3('/brokers/0/partition-replicas')).json()).data;
  assert.ok(replicas.length >= 3, `orders' 3 partitions are on broker 0: ${JSON.stringify(replicas)}`);
  await until('the replica and leader counts the server lists', async () =>
    (await page.getByTestId('broker-replicas-0').textContent()) === String(replicas.length) &&
    (await page.getByTestId('broker-leaders-0').textContent()) === String(replicas.filter((r) => r.is_leader).length));
  assert.equal(await page.getByTestId('broker-throttles-0').count(), 0, 'no throttle set yet: "none"');
  // Bytes on disk: the planner's figure for the broker (its replicas' sizes), exactly.
  for (const partition of [0, 1, 2]) {
    const produced = await v3('/topics/orders/records', json({ partition_id: partition, value: { type: 'JSON', data: { partition } } }));
    assert.equal((await produced.json()).error_code, 200);
  }
  let plan;
  await until('the bytes on disk the dry run counts', async () => {
    plan = await (await v3('/rebalance')).json();
    const bytes = plan.brokers[0].size_bytes.before;
    return bytes > 0 && (await page.getByTestId('broker-bytes-0').textContent()).startsWith(`${bytes.toLocaleString('en-US')} bytes`);
  });
  assert.equal(plan.balanced, true, JSON.stringify(plan));

  // The dry run: one broker is balanced; nothing to start.
  await until('a balanced dry run', async () => (await page.getByTestId('plan-summary').textContent()).startsWith('balanced: nothing to move'));
  assert.equal(await page.getByTestId('plan-moves-table').count(), 0);
  const start = page.getByTestId('start-rebalance');
  assert.equal(await start.isDisabled(), true);
  assert.equal(await start.getAttribute('title'), 'nothing to move');
  assert.equal(await page.getByTestId('start-rebalance-reason').textContent(), 'Start rebalance is disabled: nothing to move');
  assert.match(await page.getByTestId('tasks-table').textContent(), /no broker is being decommissioned/);
  assert.match(await page.getByTestId('reassignments-table').textContent(), /no partition is being moved/);
  assert.equal(await page.getByTestId('cancel-reassignments').isDisabled(), true);

  // Decommissioning the only broker: the confirm, then the server's refusal shown as it came.
  const decommission = page.getByTestId('decommission-0');
  await decommission.click();
  assert.equal(await decommission.textContent(), 'Really decommission broker 0?');
  await decommission.click();
  const shown = await page.getByTestId('error').first().textContent();
  const refused = await v3('/brokers/0', { method: 'DELETE' });
  assert.equal(refused.status, 400);
  const { error_code: code, message } = await refused.json();
  assert.equal(code, 40002);
  assert.ok(message.length > 0);
  assert.equal(shown, `DELETE /v3/clusters/${plan.cluster_id}/brokers/0: error_code 40002: ${message}`);
  // Still there, still running.
  await until('broker 0 still running', async () => (await page.getByTestId('broker-state-0').textContent()) === 'running');
  assert.equal((await (await v3('/brokers')).json()).data.length, 1);

  // The viewer may DESCRIBE the cluster (and its configs), not ALTER it.
  for (const operation of ['DESCRIBE', 'DESCRIBE_CONFIGS']) {
    const granted = await v3('/acls', json({ resource_type: 'CLUSTER', resource_name: 'kafka-cluster', pattern_type: 'LITERAL',
      principal: 'User:viewer', host: '*', operation, permission: 'ALLOW' }));
    assert.equal(granted.status, 201);
  }
  await page.getByTestId('logout').click();
  await logIn('viewer', 'viewer-secret');
  await until('the viewer sees the broker', async () => (await page.getByTestId('broker-state-0').textContent()) === 'running');
  await until('the viewer sees the dry run', async () => (await page.getByTestId('plan-summary').textContent()).startsWith('balanced'));
  const needsAlter = 'needs ALTER on the cluster (an ACL ALLOW ALTER on CLUSTER kafka-cluster)';
  await until('Start rebalance disabled for want of ALTER', async () => (await start.getAttribute('title')) === needsAlter);
  assert.equal(await start.isDisabled(), true);
  assert.equal(await page.getByTestId('decommission-0').isDisabled(), true);
  assert.equal(await page.getByTestId('decommission-0').getAttribute('title'), needsAlter);
  assert.equal(await page.getByTestId('cancel-reassignments').getAttribute('title'), needsAlter);
  assert.equal(await page.getByTestId('brokers-note').count(), 0, 'the viewer reads every part of the page');
  assert.deepEqual(pageErrors, []);
});

test('a throttled replication rate set on the broker is shown exactly', async () => {
  const { page, pageErrors } = consoleUnderTest;   // still on the Brokers page, as the viewer (DESCRIBE_CONFIGS)
  const throttled = await v3('/brokers/0/configs/leader.replication.throttled.rate',
    { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ value: '10485760' }) });
  assert.equal(throttled.status, 204, await throttled.text());
  await until('the throttle shown', async () => (await page.getByTestId('broker-throttles-0').count()) === 1);
  assert.equal(await page.getByTestId('broker-throttles-0').textContent(),
    'leader.replication.throttled.rate = 10,485,760 bytes/s (10.0 MiB/s)');
  assert.deepEqual(pageErrors, []);
});
