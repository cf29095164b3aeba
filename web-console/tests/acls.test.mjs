// The console's ACL page (issue 30) in a real browser: Debian's chromium driven by playwright-core
// against a real `ringlog serve` with the StandardAuthorizer and Basic authentication. The super
// user adds an ACL from the form, finds it by the filters and deletes it; a principal that may
// DESCRIBE but not ALTER the cluster sees the list with the add and delete buttons disabled, their
// title naming the missing permission.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UI_DEADLINE_MS, until as untilDeadline, useSecuredConsole } from './harness.mjs';

const ADMIN = 'Basic ' + Buffer.from('admin:admin-secret').toString('base64');
const until = (what, fn) => untilDeadline(what, fn, UI_DEADLINE_MS);
const consoleUnderTest = useSecuredConsole('ringlog-console-acls-', 'acls', 'acl-form');
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
