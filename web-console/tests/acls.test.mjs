// The console's ACL page (issue 30) in a real browser: Debian's chromium driven by playwright-core
// against a real `ringlog serve` with the StandardAuthorizer and Basic authentication. The super
// user adds an ACL from the form, finds it by the filters and deletes it; a principal that may
// DESCRIBE but not ALTER the cluster sees the list with the add and delete buttons disabled, their
// title naming the missing permission. /metrics needs credentials (http.metrics.authentication):
// a principal without DESCRIBE on the cluster sees its figures as "-" with a quiet note.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UI_DEADLINE_MS, until as untilDeadline, useSecuredConsole } from './harness.mjs';

const ADMIN = 'Basic ' + Buffer.from('admin:admin-secret').toString('base64');
const until = (what, fn) => untilDeadline(what, fn, UI_DEADLINE_MS);
const consoleUnderTest = useSecuredConsole('ringlog-console-acls-', 'acls', 'acl-form',
  { sets: ['http.metrics.authentication=true'] });
const logIn = (user, password) => consoleUnderTest.logIn(user, password);

test('the ACL page adds, filters and deletes; without ALTER its buttons are disabled and say why', async () => {
  const { page, pageErrors, baseUrl } = consoleUnderTest;
  await logIn('admin', 'admin-secret');
  await page.getByTestId('acl-resource-type').selectOption('CLUSTER');
  await page.getByTestId('acl-principal').fill('User:viewer');
  await page.getByTestId('acl-operation').selectOption('DESCRIBE');
  await page.getByTestId('acl-add').click();
  await page.getByText('added ALLOW DESCRIBE on CLUSTER kafka-cluster for User:viewer').waitFor();
  await page.getByTestId('acl-resource-type').selectOption('TOPIC');
  await page.getByTestId('acl-resource-name').fill('orders-');
  await page.getByTestId('acl-pattern-type').selectOption('PREFIXED');
  await page.getByTestId('acl-principal').fill('User:alice');
  await page.getByTestId('acl-operation').selectOption('READ');
  await page.getByTestId('acl-add').click();
  const rows = page.getByTestId('acls-table').locator('tbody tr');
  await until('two ACLs listed', async () => (await rows.count()) === 2);
  await page.getByTestId('acl-filter-principal').fill('alice');
  await until('the filter shows one', async () => (await rows.count()) === 1);
  assert.match(await rows.first().textContent(), /User:alice.*READ.*ALLOW.*TOPIC orders-.*PREFIXED/);
  await rows.first().getByTestId('acl-delete').click();
  await page.getByTestId('acl-filter-principal').fill('');
  await until('one ACL left', async () => (await rows.count()) === 1 &&
    (await rows.first().textContent()).includes('User:viewer'));
  const cid = (await (await fetch(`${baseUrl}/v3/clusters`, { headers: { Authorization: ADMIN } })).json()).data[0].cluster_id;
  const left = (await (await fetch(`${baseUrl}/v3/clusters/${cid}/acls`, { headers: { Authorization: ADMIN } })).json()).data;
  assert.deepEqual(left.map((a) => a.principal), ['User:viewer']);

  await page.getByTestId('logout').click();
  await logIn('viewer', 'viewer-secret');
  await until('the viewer sees the list', async () => (await rows.count()) === 1);
  const add = page.getByTestId('acl-add');
  assert.equal(await add.isDisabled(), true);
  assert.match(await add.getAttribute('title'), /needs ALTER on the cluster/);
  assert.equal(await rows.first().getByTestId('acl-delete').isDisabled(), true);
  assert.deepEqual(pageErrors, []);
});

test('the topic page disables delete, add partitions and config edits the principal may not do', async () => {
  const { page, pageErrors, baseUrl } = consoleUnderTest;
  const cid = (await (await fetch(`${baseUrl}/v3/clusters`, { headers: { Authorization: ADMIN } })).json()).data[0].cluster_id;
  const post = (url, body) => fetch(`${baseUrl}/v3/clusters/${cid}/${url}`, {
    method: 'POST', headers: { Authorization: ADMIN, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal((await post('topics', { topic_name: 'ledger', partitions_count: 1 })).status, 201);
  // The viewer may DESCRIBE the topic and its configs, nothing more.
  for (const operation of ['DESCRIBE', 'DESCRIBE_CONFIGS']) {
    assert.equal((await post('acls', { resource_type: 'TOPIC', resource_name: 'ledger', pattern_type: 'LITERAL',
      principal: 'User:viewer', host: '*', operation, permission: 'ALLOW' })).status, 201);
  }
  const open = async (user, password) => {
    await page.getByTestId('logout').click();
    await page.goto(`${baseUrl}/console/#/topics/ledger`);
    await page.getByTestId('login-form').waitFor();
    await page.getByTestId('login-user').fill(user);
    await page.getByTestId('login-password').fill(password);
    await page.getByTestId('login-submit').click();
    await page.getByTestId('principal').filter({ hasText: `User:${user}` }).waitFor();
    await page.getByTestId('configs-table').waitFor();
    await page.getByTestId('partitions-table').waitFor();
  };
  const save = () => page.getByTestId('save-retention.ms');
  await open('viewer', 'viewer-secret');
  await until('the viewer\'s controls are disabled', async () => await page.getByTestId('delete-topic').isDisabled() &&
    await page.getByTestId('add-partitions').isDisabled() && await save().isDisabled());
  assert.match(await page.getByTestId('delete-topic').getAttribute('title'), /needs DELETE on the topic .*TOPIC ledger/);
  assert.match(await page.getByTestId('add-partitions').getAttribute('title'), /needs ALTER on the topic/);
  assert.match(await save().getAttribute('title'), /needs ALTER_CONFIGS on the topic/);
  // The Topics list too (the new user of session 31 found its Delete enabled for such a user).
  await page.goto(`${baseUrl}/console/#/topics`);
  await page.getByTestId('topics-table').waitFor();
  await until('the list\'s delete is disabled for the viewer', async () => await page.getByTestId('delete-ledger').isDisabled());
  assert.match(await page.getByTestId('delete-ledger').getAttribute('title'), /needs DELETE on the topic .*TOPIC ledger/);
  // Create too (session 32): Kafka's CreateTopics needs CREATE on the cluster, else on the topic.
  const create = page.getByTestId('create-topic-submit');
  await until('the viewer\'s create is disabled', async () => await create.isDisabled());
  assert.match(await create.getAttribute('title'), /needs CREATE on the cluster \(an ACL ALLOW CREATE on CLUSTER kafka-cluster\)/);
  assert.equal((await post('acls', { resource_type: 'TOPIC', resource_name: 'own-', pattern_type: 'PREFIXED',
    principal: 'User:viewer', host: '*', operation: 'CREATE', permission: 'ALLOW' })).status, 201);
  await page.getByText('Create a topic').click();
  await page.locator('input[name="topic_name"]').fill('own-1');
  await until('CREATE on the topic enables create', async () => !(await create.isDisabled()));
  await page.locator('input[name="topic_name"]').fill('other');
  await until('another name disables it again', async () => await create.isDisabled() &&
    /or CREATE on the topic other/.test(await create.getAttribute('title')));
  await open('admin', 'admin-secret');
  await until('the super user\'s controls are enabled', async () => !(await page.getByTestId('delete-topic').isDisabled()) &&
    !(await page.getByTestId('add-partitions').isDisabled()) && !(await save().isDisabled()));
  await page.goto(`${baseUrl}/console/#/topics`);
  await until('the list\'s delete is enabled for the super user', async () => !(await page.getByTestId('delete-ledger').isDisabled()));
  await until('the super user\'s create is enabled', async () => !(await page.getByTestId('create-topic-submit').isDisabled()));
  assert.deepEqual(pageErrors, []);
});

test('without DESCRIBE on the cluster, /metrics figures show "-" with a note, not an error', async () => {
  const { page, pageErrors, baseUrl } = consoleUnderTest;
  const cid = (await (await fetch(`${baseUrl}/v3/clusters`, { headers: { Authorization: ADMIN } })).json()).data[0].cluster_id;
  const removed = await fetch(`${baseUrl}/v3/clusters/${cid}/acls?${new URLSearchParams({ resource_type: 'CLUSTER',
    resource_name: 'kafka-cluster', pattern_type: 'LITERAL', principal: 'User:viewer', host: '*', operation: 'DESCRIBE',
    permission: 'ALLOW' })}`, { method: 'DELETE', headers: { Authorization: ADMIN } });
  assert.equal(removed.status, 200);
  const viewer = 'Basic ' + Buffer.from('viewer:viewer-secret').toString('base64');
  assert.equal((await fetch(`${baseUrl}/metrics`, { headers: { Authorization: viewer } })).status, 403);
  await page.getByTestId('logout').click();
  await page.goto(`${baseUrl}/console/#/overview`);
  await page.getByTestId('login-form').waitFor();
  await page.getByTestId('login-user').fill('viewer');
  await page.getByTestId('login-password').fill('viewer-secret');
  await page.getByTestId('login-submit').click();
  await page.getByTestId('metrics-unavailable').waitFor();
  await until('the stored tile is unknown', async () => (await page.getByTestId('tile-size').textContent()).includes('-'));
  assert.equal(await page.getByTestId('tile-topics').count(), 1);
  assert.equal(await page.getByTestId('error').count(), 0);
  await page.goto(`${baseUrl}/console/#/topics`);
  await page.getByTestId('topics-table').waitFor();
  await page.getByTestId('metrics-unavailable').waitFor();
  assert.equal(await page.getByTestId('error').count(), 0);
  assert.deepEqual(pageErrors, []);
});
