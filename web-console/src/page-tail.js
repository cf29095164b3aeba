// Live tail over the /v1/ws WebSocket (http-api/ws-protocol.md): one subscription per
// partition, credit-based flow control. Pause stops granting credit, so the server stops
// sending; records already granted wait in the page and show on resume, in order.
import { api, webSocketUrl } from './api.js';
import { errorBox, field, fill, h, statusLine } from './dom.js';
import { formatCount, formatTimestamp, parseJsonExact } from './format.js';
import { TAIL_CREDIT_RECORDS, TAIL_RECORDS_MAX, TAIL_SOCKETS_MAX } from './limits.js';
import { decodeRecord } from './records.js';

/** One partition's subscription on its own WebSocket. */
class PartitionTail {
  constructor(topic, partition, position, handlers) {
    this.topic = topic;
    this.partition = partition;
    this.handlers = handlers;
    this.credit = 0;
    this.paused = false;
    this.closedByUs = false;
    this.ws = new WebSocket(webSocketUrl());
    this.ws.addEventListener('open', () => {
      this.send({ type: 'subscribe', id: `tail-${partition}`, topic, partition, position });
      this.grant();
    });
    this.ws.addEventListener('message', (ev) => this.onMessage(parseJsonExact(ev.data)));
    this.ws.addEventListener('close', (ev) => {
      if (!this.closedByUs) handlers.onError(new Error(`partition ${partition}: the WebSocket closed (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''})`));
    });
  }
  send(msg) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }
  /** Tops the credit back up to TAIL_CREDIT_RECORDS (ws-protocol.md: credit adds up). */
  grant() {
    if (this.paused) return;
    const more = TAIL_CREDIT_RECORDS - this.credit;
    if (more <= 0) return;
    this.credit += more;
    this.send({ type: 'credit', records: more });
  }
  onMessage(msg) {
    if (msg.type === 'record') {
      this.credit -= 1;
      this.handlers.onRecord(msg);
      if (this.credit <= TAIL_CREDIT_RECORDS / 2) this.grant();
    } else if (msg.type === 'subscribed') {
      this.handlers.onSubscribed(this.partition, msg.offset);
    } else if (msg.type === 'error') {
      this.handlers.onError(new Error(`partition ${this.partition}: error_code ${msg.error_code}: ${msg.message}`));
    }
  }
  setPaused(paused) {
    this.paused = paused;
    if (!paused) this.grant();
  }
  close() {
    this.closedByUs = true;
    this.ws.close(1000, 'tail stopped');
  }
}

export async function render(view, route, ctx) {
  const q = route.query;
  const status = statusLine();
  const topicSel = h('select', { name: 'topic', 'data-testid': 'tail-topic' });
  const partSel = h('select', { name: 'partition', 'data-testid': 'tail-partition' });
  const position = h('select', { name: 'position' }, h('option', { value: 'latest' }, 'new records only'),
    h('option', { value: 'earliest' }, 'from the log start'));
  const state = h('span', { class: 'badge', 'data-testid': 'tail-state' }, 'stopped');
  const counts = h('span', { class: 'muted', 'data-testid': 'tail-count' });
  const list = h('div', { class: 'records', 'data-testid': 'tail-records' });
  const waitingNote = h('p', { class: 'muted', hidden: true }, 'Waiting for new records…');
  const startBtn = h('button', { type: 'submit', 'data-testid': 'tail-start' }, 'Start');
  const pauseBtn = h('button', { type: 'button', class: 'secondary', disabled: true, 'data-testid': 'tail-pause' }, 'Pause');

  let tails = [];
  let paused = false;
  let received = 0;
  let waiting = [];    // records that arrived while paused (at most the granted credit)
  let subscribed = 0;

  const showCount = () => {
    counts.textContent = `${formatCount(received)} received, ${formatCount(list.children.length)} shown` +
      (waiting.length ? `, ${waiting.length} waiting` : '');
  };
  const showRecord = (msg) => {
    const r = decodeRecord(msg);
    waitingNote.hidden = true;
    list.prepend(h('article', { class: 'record', 'data-testid': 'tail-record' },
      h('div', { class: 'meta' }, 'partition ', h('b', {}, String(r.partition)), ' offset ', h('b', {}, String(r.offset)),
        h('div', {}, formatTimestamp(r.timestamp), ' UTC')),
      h('div', {}, h('span', { class: 'kind' }, 'key'), h('pre', {}, r.key.text)),
      h('div', {}, h('span', { class: 'kind' }, `value, ${r.value.kind}`), h('pre', { 'data-testid': 'tail-value' }, r.value.text))));
    while (list.children.length > TAIL_RECORDS_MAX) list.lastElementChild.remove();
  };
  const stop = () => {
    for (const t of tails) t.close();
    tails = [];
    waiting = [];
    paused = false;
    pauseBtn.disabled = true;
    pauseBtn.textContent = 'Pause';
    startBtn.textContent = 'Start';
    state.textContent = 'stopped';
    state.className = 'badge';
  };
  ctx.onLeave(stop);

  const start = () => {
    stop();
    status.clear();
    fill(list);
    waitingNote.hidden = position.value !== 'latest';
    received = 0;
    subscribed = 0;
    const topic = topicSel.value;
    const partitions = partSel.value === 'all'
      ? Array.from(partSel.options).map((o) => o.value).filter((v) => v !== 'all').map(Number)
      : [Number(partSel.value)];
    history.replaceState(null, '', `#/tail?topic=${encodeURIComponent(topic)}&partition=${partSel.value}`);
    state.textContent = 'connecting';
    const handlers = {
      onRecord: (msg) => {
        received += 1;
        if (paused) waiting.push(msg);
        else showRecord(msg);
        showCount();
      },
      onSubscribed: () => {
        subscribed += 1;
        if (subscribed === tails.length) {
          state.textContent = paused ? 'paused' : 'live';
          state.className = 'badge good';
        }
      },
      onError: (e) => status.el.append(errorBox(e)),
    };
    tails = partitions.slice(0, TAIL_SOCKETS_MAX).map((p) => new PartitionTail(topic, p, position.value, handlers));
    if (partitions.length > TAIL_SOCKETS_MAX) {
      status.show(`tailing the first ${TAIL_SOCKETS_MAX} of ${partitions.length} partitions (TAIL_SOCKETS_MAX): choose one partition to see the others`);
    }
    pauseBtn.disabled = false;
    startBtn.textContent = 'Restart';
    showCount();
  };

  pauseBtn.addEventListener('click', () => {
    paused = !paused;
    for (const t of tails) t.setPaused(paused);
    pauseBtn.textContent = paused ? 'Resume' : 'Pause';
    state.textContent = paused ? 'paused' : 'live';
    if (!paused) {
      for (const msg of waiting.splice(0)) showRecord(msg);
    }
    showCount();
  });

  const fillPartitions = async () => {
    const parts = await api.partitions(topicSel.value);
    fill(partSel, h('option', { value: 'all' }, `all ${parts.length} partitions`),
      parts.map((p) => h('option', { value: p.partition_id }, String(p.partition_id))));
  };

  fill(view, h('h1', {}, 'Live tail'),
    h('form', { class: 'panel form', onsubmit: (ev) => { ev.preventDefault(); start(); } },
      field('topic', topicSel), field('partition', partSel), field('start with', position),
      h('div', { class: 'actions' }, startBtn, pauseBtn)),
    status.el,
    h('div', { class: 'toolbar' }, state, counts),
    waitingNote, list);

  try {
    const topics = (await api.topics()).filter((t) => !t.is_internal);
    if (topics.length === 0) {
      list.append(h('p', { class: 'muted' }, 'No topics you may see: create one on the Topics page (a topic is listed only to those with DESCRIBE on it).'));
      return;
    }
    fill(topicSel, topics.map((t) => h('option', { value: t.topic_name }, t.topic_name)));
    if (q.get('topic')) topicSel.value = q.get('topic');
    topicSel.addEventListener('change', () => fillPartitions().catch((e) => status.show(e)));
    await fillPartitions();
    if (q.get('partition') !== null) partSel.value = q.get('partition');
    if (!partSel.value) partSel.value = 'all';
    if (q.get('topic')) start();
  } catch (e) {
    status.show(e);
  }
}
