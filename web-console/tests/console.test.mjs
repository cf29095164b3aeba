// The console in a real browser (issue 6): Debian's chromium driven by playwright-core against
// a real `ringlog serve` (RINGLOG_BIN, a free loopback port, a temporary log.dirs). Creates a
// topic from the form, produces from the form and sees the record in the browser and in the
// live tail, sees a group's lag change after it commits, sees the server's error text, and saves
// screenshots of every page (desktop and phone) to build/test-results/console-screenshots/.
// Waits poll with deadlines (Playwright's auto-waiting and waitFor); nothing sleeps and hopes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { freePort, until as untilDeadline } from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = process.env.RINGLOG_BIN || path.join(ROOT, 'build', 'src', 'app', 'ringlog');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const SHOTS = process.env.RINGLOG_SCREENSHOT_DIR || path.join(ROOT, 'build', 'test-results', 'console-screenshots');
const START_DEADLINE_MS = 20000;
/** Longest wait for something on a page: above the console's slowest poll (LAG_SAMPLE_MS 5 s). */
const UI_DEADLINE_MS = 20000;
const VIEWPORTS = { desktop: { width: 1366, height: 900 }, phone: { width: 390, height: 844 } };

let broker;
let brokerLog;
let baseUrl;
let dataDir;
let context;
let page;
const pageErrors = [];

/** Polls fn() until it returns a truthy value or deadlineMs passes. */
const until = (what, fn, deadlineMs = UI_DEADLINE_MS) => untilDeadline(what, fn, deadlineMs);

async function http(method, urlPath, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] ||= 'application/json';
  }
  const r = await fetch(baseUrl + urlPath, init);
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

async function clusterPath(p) {
  const c = await http('GET', '/v3/clusters');
  return `/v3/clusters/${c.body.data[0].cluster_id}${p}`;
}

async function produce(topic, value, partition) {
  const record = { value: { type: 'JSON', data: value } };
  if (partition !== undefined) record.partition_id = partition;
  const r = await http('POST', await clusterPath(`/topics/${topic}/records`), record);
  assert.equal(r.body.error_code, 200, JSON.stringify(r.body));
  return r.body;
}

async function go(route) {
  await page.goto(`${baseUrl}/console/#${route}`);
}

async function shot(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

/** No uncaught exception and no Content-Security-Policy violation so far. */
function assertNoPageErrors() {
  assert.deepEqual(pageErrors, [], `the page reported errors:\n${pageErrors.join('\n')}`);
}

before(async () => {
  assert.ok(fs.existsSync(BIN), `ringlog binary not found at ${BIN}: build it or set RINGLOG_BIN`);
  assert.ok(fs.existsSync(CHROMIUM), `chromium not found at ${CHROMIUM}: apt-get install chromium (scripts/install-deps.sh)`);
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ringlog-console-'));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  brokerLog = fs.openSync(path.join(dataDir, 'ringlog.log'), 'a');
  broker = spawn(BIN, ['serve', '--set', `listeners=http://127.0.0.1:${port}`, '--set', `log.dirs=${path.join(dataDir, 'data')}`,
    '--set', 'num.shards=2'], { stdio: ['ignore', brokerLog, brokerLog] });
  await until('/v1/health', async () => {
    if (broker.exitCode !== null) throw new Error(`ringlog exited with ${broker.exitCode}`);
    return (await fetch(`${baseUrl}/v1/health`)).ok;
  }, START_DEADLINE_MS);

  context = await chromium.launchPersistentContext(path.join(dataDir, 'chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: VIEWPORTS.desktop,
    acceptDownloads: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(UI_DEADLINE_MS);
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|SyntaxError|TypeError/.test(m.text())) pageErrors.push(`console: ${m.text()}`);
  });
});

after(async () => {
  if (context) await context.close();
  if (broker && broker.exitCode === null) {
    const exited = new Promise((r) => broker.once('exit', r));
    broker.kill('SIGTERM');
    await exited;
  }
  if (process.exitCode && dataDir) {
    process.stderr.write(fs.readFileSync(path.join(dataDir, 'ringlog.log'), 'utf8').slice(-3000));
  }
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

test('creating a topic from the form lists it, and its page shows partitions and configs', async () => {
  await go('/topics');
  await page.locator('summary', { hasText: 'Create a topic' }).click();
  const form = page.getByTestId('create-topic');
  await form.locator('input[name=topic_name]').fill('orders');
  await form.locator('input[name=partitions_count]').fill('3');
  await form.locator('input[name="retention.ms"]').fill('3600000');
  await form.getByRole('button', { name: 'Create topic' }).click();
  await page.getByText('created topic orders').waitFor();
  const row = page.getByTestId('topics-table').locator('tr', { hasText: 'orders' });
  await row.waitFor();
  await until('retention shown as 1 h', async () => (await row.textContent()).includes('1 h'));
  assert.equal(await row.getByTestId('compacted').count(), 0, 'a delete-policy topic is not marked compacted');

  // A compacted topic (issue 17) is marked, with the cleaner's figures (the form is still open).
  await form.locator('input[name=topic_name]').fill('profiles');
  await form.locator('input[name=partitions_count]').fill('1');
  await form.locator('input[name="retention.ms"]').fill('');
  await form.locator('textarea[name=configs]').fill('cleanup.policy=compact');
  await form.getByRole('button', { name: 'Create topic' }).click();
  await page.getByText('created topic profiles').waitFor();
  const compacted = page.getByTestId('topics-table').locator('tr', { hasText: 'profiles' }).getByTestId('compacted');
  await until('profiles marked compacted with its dirty ratio, cleaner time and last clean', async () =>
    (await compacted.count()) === 1 && /dirty .* in [0-9.]+ s · last clean never/.test(await compacted.textContent()));

  await row.getByRole('link', { name: 'orders' }).click();
  await page.getByTestId('topic-name').filter({ hasText: 'orders' }).waitFor();
  await until('3 partition rows', async () => (await page.getByTestId('partitions-table').locator('tbody tr').count()) === 3);
  const header = await page.getByTestId('partitions-table').locator('thead').textContent();
  for (const col of ['leader', 'replicas', 'in_sync_replicas', 'log_start_offset', 'high_watermark', 'size']) {
    assert.ok(header.includes(col), `partitions table lacks ${col}: ${header}`);
  }
  // Edit a config and add a partition, as an operator would.
  await page.locator('input[data-config="retention.ms"]').fill('7200000');
  await page.getByTestId('save-retention.ms').click();
  await page.getByText('retention.ms set to 7200000').waitFor();
  await page.getByTestId('partitions-count').fill('4');
  await page.getByRole('button', { name: 'Add partitions' }).click();
  await page.getByText('orders now has 4 partitions').waitFor();
  await until('4 partition rows', async () => (await page.getByTestId('partitions-table').locator('tbody tr').count()) === 4);

  // A compacted topic's own page shows the cleaner's figures, for the topic and each partition.
  await go('/topics/profiles');
  await page.getByTestId('tile-cleanup-policy').filter({ hasText: 'compact' }).waitFor();
  for (const id of ['tile-dirty', 'tile-cleaned', 'tile-cleaner-time', 'tile-last-clean']) await page.getByTestId(id).waitFor();
  assert.equal(await page.getByTestId('tile-last-clean').locator('.tile-value').textContent(), 'never');
  const cleanerHeader = await page.getByTestId('partitions-table').locator('thead').textContent();
  for (const col of ['dirty', 'cleaned', 'last clean']) assert.ok(cleanerHeader.includes(col), `no ${col} column: ${cleanerHeader}`);
  await go('/topics/orders');
  await page.getByTestId('tile-partitions').waitFor();
  assert.equal(await page.getByTestId('tile-cleanup-policy').count(), 0, 'a delete-policy topic has no cleaner tiles');
  assertNoPageErrors();
});

test('a topic page tells its own overrides from values inherited from the brokers', async () => {
  // A new user (session 29): after a per-broker and a cluster-wide broker config, both showed as
  // "topic" overrides with a Reset button that changed nothing.
  const brokerConfig = await clusterPath('/brokers/0/configs/log.retention.ms');
  const clusterConfig = await clusterPath('/broker-configs/log.roll.ms');
  try {
    assert.equal((await http('PUT', brokerConfig, { value: '3600000' })).status, 204);
    assert.equal((await http('PUT', clusterConfig, { value: '86400000' })).status, 204);
    await go('/topics');   // the first test left the browser on orders' page: load it anew
    await go('/topics/orders');
    await page.getByTestId('configs-table').waitFor();
    const source = (name) => page.getByTestId(`source-${name}`);
    await until('retention.ms labelled as the topic\'s own', async () => (await source('retention.ms').textContent()) === 'topic');
    assert.equal(await page.getByTestId('reset-retention.ms').count(), 1, 'an override has Reset');
    await until('segment.ms labelled as inherited', async () => (await source('segment.ms').textContent()) === 'cluster-wide broker default');
    assert.match(await source('segment.ms').getAttribute('title'), /log\.roll\.ms=86400000 \(DYNAMIC_DEFAULT_BROKER_CONFIG\)/);
    assert.equal(await page.getByTestId('reset-segment.ms').count(), 0, 'an inherited value has no Reset');
    // profiles does not override retention.ms: broker 0's value is inherited, labelled "broker".
    await go('/topics/profiles');
    await page.getByTestId('configs-table').waitFor();
    await until('retention.ms labelled broker', async () => (await source('retention.ms').textContent()) === 'broker');
    assert.match(await source('retention.ms').getAttribute('title'), /log\.retention\.ms=3600000 \(DYNAMIC_BROKER_CONFIG\)/);
    assert.equal(await page.getByTestId('reset-retention.ms').count(), 0);
    assert.equal(await source('cleanup.policy').textContent(), 'topic');
    assert.equal(await source('max.message.bytes').textContent(), 'default');

    // Reset removes the override: the value is inherited again, labelled so.
    await go('/topics/orders');
    await page.getByTestId('reset-retention.ms').click();
    await page.getByText('retention.ms: the topic override is removed').waitFor();
    await until('orders\' retention.ms inherited from broker 0', async () => (await source('retention.ms').textContent()) === 'broker');
    assert.equal(await page.locator('input[data-config="retention.ms"]').inputValue(), '3600000');
  } finally {
    await http('DELETE', brokerConfig);
    await http('DELETE', clusterConfig);
    await http('PUT', await clusterPath('/topics/orders/configs/retention.ms'), { value: '7200000' });
  }
  assertNoPageErrors();
});

test('a record produced from the form is shown decoded, filtered and exported', async () => {
  await go('/messages?topic=orders&partition=1');
  await page.locator('summary', { hasText: 'Produce a record' }).click();
  const form = page.getByTestId('produce-form');
  await form.locator('input[name=partition]').fill('1');
  await form.locator('input[name=key]').fill('user-7');
  await form.locator('textarea[name=value]').fill('{"amount": 42, "currency": "EUR"}');
  await form.locator('textarea[name=headers]').fill('source=console-test');
  await form.getByRole('button', { name: 'Produce' }).click();
  await page.getByText(/produced to orders partition 1 at offset 0/).waitFor();
  // The form says how to send a tombstone; the partition picker counts offsets, not records.
  assert.ok((await page.getByTestId('tombstone-hint').textContent()).includes('null'));
  await until('partition 1 counted in offsets', async () =>
    (await page.getByTestId('partition').locator('option[value="1"]').textContent()) === '1 (1 offset)');

  const record = page.getByTestId('record').first();
  await record.waitFor();
  assert.equal(await record.getByTestId('record-key').textContent(), 'user-7');
  assert.equal(await record.getByTestId('record-value').textContent(), '{\n  "amount": 42,\n  "currency": "EUR"\n}');
  assert.ok((await record.textContent()).includes('source'), 'headers shown');

  await page.getByTestId('filter-value').fill('no such text');
  await page.getByText('no record matches the filter').waitFor();
  await page.getByTestId('filter-value').fill('EUR');
  await page.getByTestId('record').first().waitFor();

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export').click()]);
  const exported = JSON.parse(fs.readFileSync(await download.path(), 'utf8'));
  assert.equal(exported.length, 1);
  assert.deepEqual(exported[0].value, { json: { amount: 42, currency: 'EUR' } });
  assert.deepEqual(exported[0].key, { text: 'user-7' });
  assert.equal(exported[0].partition, 1);
  assert.equal(exported[0].offset, 0);

  // Paging: two records at a time from offset 0, then later and earlier.
  for (let i = 1; i <= 3; i++) await produce('orders', { page: i }, 1);
  await page.getByTestId('filter-value').fill('');
  await page.getByTestId('from').selectOption('offset');
  await page.locator('input[name=offset]').fill('0');
  await page.locator('input[name=limit]').fill('2');
  await page.getByTestId('browse-form').getByRole('button', { name: 'Load' }).click();
  const shownOffsets = () => page.getByTestId('record-offset').allTextContents();
  await until('offsets 0 and 1', async () => (await shownOffsets()).join() === '0,1');
  await page.getByTestId('later').click();
  await until('offsets 2 and 3', async () => (await shownOffsets()).join() === '2,3');
  await page.getByTestId('earlier').click();
  await until('offsets 0 and 1 again', async () => (await shownOffsets()).join() === '0,1');
  assertNoPageErrors();
});

test('the live tail shows new records over the WebSocket, holds them while paused, and shows them on resume', async () => {
  await go('/tail?topic=orders&partition=all');
  await until('the tail is live', async () => (await page.getByTestId('tail-state').textContent()) === 'live');
  await produce('orders', { tail: 1 }, 2);
  await page.getByTestId('tail-value').filter({ hasText: '"tail": 1' }).waitFor();

  await page.getByTestId('tail-pause').click();
  await until('the tail is paused', async () => (await page.getByTestId('tail-state').textContent()) === 'paused');
  await produce('orders', { tail: 2 }, 0);
  await until('the record waits while paused', async () => (await page.getByTestId('tail-count').textContent()).includes('1 waiting'));
  assert.equal(await page.getByTestId('tail-value').filter({ hasText: '"tail": 2' }).count(), 0);

  await page.getByTestId('tail-pause').click();   // resume
  await page.getByTestId('tail-value').filter({ hasText: '"tail": 2' }).waitFor();
  assert.equal(await page.getByTestId('tail-record').count(), 2);
  assertNoPageErrors();
});

test('a consumer group shows members and lag, and lag changes after the group commits', async () => {
  const created = await http('POST', await clusterPath('/topics'), { topic_name: 'billing', partitions_count: 1 });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  for (let i = 0; i < 5; i++) await produce('billing', { n: i }, 0);
  const v2 = { 'Content-Type': 'application/vnd.kafka.v2+json' };
  const c = await http('POST', '/consumers/payers', { name: 'worker-1', format: 'binary', 'auto.offset.reset': 'earliest' }, v2);
  assert.equal(c.status, 200, JSON.stringify(c.body));
  const instance = '/consumers/payers/instances/worker-1';
  assert.equal((await http('POST', `${instance}/subscription`, { topics: ['billing'] }, v2)).status, 204);
  const got = [];
  await until('the consumer reads 5 records', async () => {
    const r = await http('GET', `${instance}/records?timeout=500`, undefined, { Accept: 'application/vnd.kafka.binary.v2+json' });
    got.push(...r.body);
    return got.length >= 5;
  });
  // Commit the first two records (the group stores offset 2): lag 3.
  const commit = (offset) => http('POST', `${instance}/offsets`, { offsets: [{ topic: 'billing', partition: 0, offset }] }, v2);
  assert.equal((await commit(1)).status, 204);

  await go('/groups');
  await page.getByTestId('groups-table').locator('tr', { hasText: 'payers' }).getByRole('link', { name: 'payers' }).click();
  await page.getByTestId('group-name').filter({ hasText: 'payers' }).waitFor();
  const totalLag = page.getByTestId('tile-total-lag').locator('.tile-value');
  await until('total lag 3', async () => (await totalLag.textContent()) === '3');
  assert.ok((await page.getByTestId('members-table').textContent()).includes('billing-0'), 'the member owns billing-0');

  // A reset while the member is there is refused: the server's error text is shown.
  await page.getByTestId('reset-dry-run').click();
  await page.getByTestId('error').filter({ hasText: 'error_code 40904' }).waitFor();

  assert.equal((await commit(4)).status, 204);
  await until('total lag 0 after the commit', async () => (await totalLag.textContent()) === '0', UI_DEADLINE_MS);
  // The chart is the broker's lag history (sampled every 5 s): it shows a line once sampled.
  await until('the lag chart has the broker\'s samples',
    async () => (await page.locator('[data-testid=lag-chart] polyline').count()) === 1, UI_DEADLINE_MS);

  // Without members the dry run answers what the reset would commit, and changes nothing.
  assert.equal((await http('DELETE', instance, undefined, v2)).status, 204);
  await page.getByTestId('reset-to').selectOption('earliest');
  await page.getByTestId('reset-dry-run').click();
  await page.getByText('Dry run: nothing was changed').waitFor();
  assert.ok((await page.getByTestId('reset-table').textContent()).includes('billing'));
  const lags = await http('GET', await clusterPath('/consumer-groups/payers/lag-summary'));
  assert.equal(lags.body.total_lag, 0, 'a dry run commits nothing');
  assertNoPageErrors();
});

test('a refused call shows the server\'s error_code and message', async () => {
  const bad = { topic_name: 'bad name!', partitions_count: 3, replication_factor: 1, configs: [] };
  const direct = await http('POST', await clusterPath('/topics'), bad);
  assert.ok(direct.status >= 400 && direct.body.message, JSON.stringify(direct.body));
  await go('/topics');
  await page.locator('summary', { hasText: 'Create a topic' }).click();
  await page.locator('input[name=topic_name]').fill('bad name!');
  await page.getByRole('button', { name: 'Create topic' }).click();
  const error = page.getByTestId('error').first();
  await error.waitFor();
  const text = await error.textContent();
  assert.ok(text.includes(`error_code ${direct.body.error_code}`), text);
  assert.ok(text.includes(direct.body.message), text);

  await go('/messages?topic=orders&partition=0&offset=999999');
  const outOfRange = await page.getByTestId('error').first().textContent();
  assert.match(outOfRange, /error_code 42202: offset 999999 is outside the log/);
  // Nothing from an earlier load stays listed under the error.
  assert.equal(await page.getByTestId('record-offset').count(), 0);
  assert.equal(await page.getByTestId('browse-summary').textContent(), 'nothing loaded: see the error above');
  assertNoPageErrors();
});

test('the delayed-delivery view shows pending delayed records by due time, the next due and the moves', async () => {
  const created = await http('POST', await clusterPath('/topics'), { topic_name: 'reminders', partitions_count: 2 });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const delayed = async (fields, partition) => {
    const r = await http('POST', await clusterPath('/topics/reminders/records'),
      { partition_id: partition, value: { type: 'JSON', data: fields }, ...fields });
    assert.equal(r.body.error_code, 200, JSON.stringify(r.body));
    assert.equal(r.body.offset, -1, 'a delayed record has no offset until it is delivered');
  };
  const now = Date.now();
  const dues = [now + 90_000, now + 100_000, now + 2 * 3600_000];   // 1 to 10 min (two), 1 h to 1 d (one)
  for (const [i, due] of dues.entries()) await delayed({ deliver_at: due }, i % 2);
  // Due after the page has surely read it (8 s): at 1.5 s a loaded CI machine delivered it before
  // the page showed 4 pending, and the wait for 4 never ended.
  const soonDue = Date.now() + 8000;
  await delayed({ deliver_at: soonDue }, 0);

  await go('/delayed');
  const tileValue = (id) => page.getByTestId(id).locator('.tile-value').textContent();
  await until('4 pending records read into the windows', async () =>
    (await tileValue('tile-delayed-pending')) === '4' && (await tileValue('tile-delayed-window')) === '4');
  assert.equal(await page.locator('nav a.active').textContent(), 'Delayed');
  const nextDueText = (ms) => `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')} UTC`;
  assert.equal(await tileValue('tile-delayed-next-due'), nextDueText(soonDue));

  // Once the soon one is delivered: 3 pending, histogram by due time, the next due moves on.
  await until('the soon record moved', async () =>
    (await tileValue('tile-delayed-pending')) === '3' && (await tileValue('tile-delayed-moved')) === '1');
  const rows = await page.getByTestId('delayed-histogram-row').evaluateAll(
    (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  const counts = Object.fromEntries(rows.map(([label, , count]) => [label, count]));
  assert.deepEqual(counts, {
    'due now': '0', 'within 1 s': '0', 'in 1 s to 10 s': '0', 'in 10 s to 1 min': '0',
    'in 1 min to 10 min': '2', 'in 10 min to 1 h': '0', 'in 1 h to 1 d': '1', 'in more than 1 d': '0',
  }, JSON.stringify(rows));
  assert.equal(await tileValue('tile-delayed-next-due'), nextDueText(dues[0]));
  assert.equal(await tileValue('tile-delayed-lag'), '0 ms');
  const schedulers = await page.getByTestId('delayed-schedulers').textContent();
  assert.ok(schedulers.includes('__delay-5m') && schedulers.includes('__delay-1d'), schedulers);
  // The delivered record is in its topic, and the view's figures are the API's.
  const moved = await http('GET', '/topics/reminders/partitions/0/records?offset=0&timeout=0', undefined,
    { Accept: 'application/vnd.kafka.binary.v2+json' });
  assert.equal(moved.body.length, 1, JSON.stringify(moved.body));
  assert.ok(moved.body[0].timestamp >= soonDue, 'delivered at or after its time');
  const api = await http('GET', await clusterPath('/delayed-records'));
  assert.equal(api.body.pending_records, 3);
  assert.equal(api.body.next_due_ms, dues[0]);
  assertNoPageErrors();
});

test('without an active controller the overview says broker states are as last known', async () => {
  // A one-node cluster always has its controller: the browser is shown the answers of a cluster
  // whose quorum lost its leader (no controller link, quorum leader_id null), as during a quorum loss.
  const isCluster = (url) => /^\/v3\/clusters\/[^/]+$/.test(url.pathname);
  const isQuorum = (url) => /^\/v3\/clusters\/[^/]+\/quorum$/.test(url.pathname);
  const rewrite = (change) => async (route) => {
    const response = await route.fetch();
    const body = await response.json();
    change(body);
    await route.fulfill({ response, json: body });
  };
  await page.route(isCluster, rewrite((body) => { delete body.controller; }));
  await page.route(isQuorum, rewrite((body) => { body.leader_id = null; }));
  try {
    await go('/overview');
    await page.reload();
    await page.getByTestId('brokers-stale').waitFor();
    assert.equal(await page.getByTestId('brokers-stale').textContent(), 'no active controller: broker states are as last known');
  } finally {
    await page.unroute(isCluster);
    await page.unroute(isQuorum);
  }
  // With the controller back, the caveat goes.
  await page.reload();
  await until('the broker state', async () => (await page.getByTestId('broker-state-0').textContent()) === 'unfenced');
  assert.equal(await page.getByTestId('brokers-stale').count(), 0);
  assertNoPageErrors();
});

test('every page renders on a desktop and a phone screen (screenshots saved)', async () => {
  const pages = [
    ['overview', '/overview', async () => until('overview tiles', async () => (await page.getByTestId('tile-topics').count()) === 1)],
    ['topics', '/topics', () => page.getByTestId('topics-table').locator('tr', { hasText: 'orders' }).waitFor()],
    ['topic', '/topics/orders', () => page.getByTestId('partitions-table').waitFor()],
    ['messages', '/messages?topic=orders&partition=1', () => page.getByTestId('record').first().waitFor()],
    ['tail', '/tail?topic=orders&partition=all', () => until('tail live', async () => (await page.getByTestId('tail-state').textContent()) === 'live')],
    ['groups', '/groups', () => page.getByTestId('groups-table').locator('tr', { hasText: 'payers' }).waitFor()],
    ['group', '/groups/payers', () => page.getByTestId('lags-table').waitFor()],
    ['delayed', '/delayed', () => page.getByTestId('delayed-histogram').waitFor()],
    ['brokers', '/brokers', () => page.getByTestId('plan-summary').waitFor()],
  ];
  for (const [viewport, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    for (const [name, route, ready] of pages) {
      await go(route);
      await ready();
      if (name === 'tail') {
        const { offset } = await produce('orders', { screenshot: viewport }, 3);
        await page.getByTestId('tail-record').filter({ hasText: `offset ${offset}` }).waitFor();
      }
      if (name === 'overview') {
        // Two metrics samples make a rate: wait for the charts to have a line.
        await produce('orders', { chart: viewport });
        await until('a throughput line', async () => (await page.locator('[data-testid=chart-records] polyline').count()) > 0);
        // The broker's registration state and the metadata quorum (one voter, leading).
        await until('the broker state', async () => (await page.getByTestId('broker-state-0').textContent()) === 'unfenced');
        assert.match(await page.getByTestId('quorum-summary').textContent(), /^leader 0 · epoch \d+ · high watermark \d+/);
        assert.match(await page.getByTestId('tile-controller').textContent(), /broker 0/);
        assert.equal(await page.getByTestId('quorum-member-0').textContent(), 'voter');
        // Every role of the active controller, not only "controller" (newcomer finding 16).
        assert.equal(await page.getByTestId('broker-role-0').textContent(), 'broker, voter, active controller');
      }
      assert.equal(await page.getByTestId('error').count(), 0, `${name} shows an error: ${await page.locator('main').textContent()}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 1, `${name} on ${viewport} is ${overflow}px wider than the screen`);
      await shot(`${name}-${viewport}`);
    }
  }
  assertNoPageErrors();
});
