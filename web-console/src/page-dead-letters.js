// A consumer group's dead letters (issue 18, docs/retries.md): per dead-letter topic the counts,
// a filterable list with each letter's original coordinates, attempts and reasons, and redrive
// of the selected letters or of all of them (after a confirmation), with the redrive's result.
// Loaded when opened and on "Refresh", not on the group page's timer: listing reads the topic.
import { api } from './api.js';
import { field, fill, h, statusLine, table } from './dom.js';
import { formatCount } from './format.js';

/** Rows a list shows at most (the broker answers up to 1,000). */
const LETTERS_SHOWN_MAX = 200;

function lettersView(group, topic, onChanged) {
  const status = statusLine();
  const filter = h('input', { name: 'filter', placeholder: 'text in a reason, key or value', 'data-testid': 'dlq-filter' });
  const to = h('select', { name: 'to', 'data-testid': 'dlq-to' },
    [['original', 'original topic'], ['retry', 'retry path']].map(([v, t]) => h('option', { value: v }, t)));
  const list = h('div');
  const result = h('div', { 'data-testid': 'dlq-result' });
  const selected = new Set();
  let shown = [];

  const load = async () => {
    status.clear();
    try {
      shown = await api.deadLetters(group, topic, { limit: LETTERS_SHOWN_MAX, filter: filter.value.trim() });
      selected.clear();
      fill(list, table([
        { title: '', cell: (d) => h('input', {
          type: 'checkbox', disabled: d.redriven, 'data-testid': 'dlq-select',
          onchange: (e) => (e.target.checked ? selected.add(d) : selected.delete(d)) }) },
        { title: 'partition', num: true, cell: (d) => String(d.partition_id) },
        { title: 'offset', num: true, cell: (d) => formatCount(d.offset) },
        { title: 'original', cell: (d) => `${d.original_topic}-${d.original_partition}@${d.original_offset}` },
        { title: 'attempts', num: true, cell: (d) => String(d.attempts) },
        { title: 'reasons', cell: (d) => h('ol', { class: 'reasons' }, d.reasons.map((r) => h('li', {}, r))) },
        { title: 'key', cell: (d) => d.key_text ?? (d.key === null ? 'null' : '(binary)') },
        { title: 'value', cell: (d) => d.value_text ?? (d.value === null ? 'null' : '(binary)') },
        { title: 'redriven', cell: (d) => (d.redriven ? 'yes' : 'no') },
      ], shown, { testid: 'dlq-table', empty: 'no dead letters match' }));
    } catch (e) {
      status.show(e);
    }
  };

  const redrive = async (all) => {
    const body = { to: to.value };
    if (!all) {
      if (!selected.size) return status.show('select dead letters first');
      body.offsets = [...selected].map((d) => ({ partition: d.partition_id, offset: d.offset }));
    }
    const what = all ? `every dead letter of ${topic} not redriven yet` : `${selected.size} dead letter(s)`;
    // eslint-disable-next-line no-alert
    if (!window.confirm(`Redrive ${what} to the ${to.value === 'retry' ? 'retry path' : 'original topic'}? Each is redriven once.`)) return;
    fill(result, h('p', { class: 'muted' }, 'Redriving...'));
    try {
      const r = await api.redrive(group, topic, body);
      fill(result, h('p', { 'data-testid': 'dlq-redrive-counts' },
        `Selected ${formatCount(r.selected)}: redriven ${formatCount(r.redriven)}, already redriven before `
        + `${formatCount(r.already_redriven)}, failed ${formatCount(r.failures.length)}.`),
      r.failures.length ? h('ul', {}, r.failures.map((f) => h('li', {}, f))) : null);
      await load();
      onChanged();
    } catch (e) {
      fill(result);
      status.show(e);
    }
  };

  load();
  return h('div', { class: 'panel', 'data-testid': 'dlq-letters' },
    h('h3', {}, topic),
    h('div', { class: 'form' }, field('filter', filter), field('redrive to', to),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'secondary', onclick: load }, 'Apply filter'),
        h('button', { type: 'button', class: 'secondary', 'data-testid': 'dlq-redrive-selected', onclick: () => redrive(false) }, 'Redrive selected'),
        h('button', { type: 'button', class: 'danger', 'data-testid': 'dlq-redrive-all', onclick: () => redrive(true) }, 'Redrive all'))),
    status.el, result, list);
}

/** The dead-letter section of a group page. */
export function deadLettersPanel(group) {
  const status = statusLine();
  const topics = h('div');
  const letters = h('div');
  const load = async () => {
    status.clear();
    try {
      const list = await api.deadLetterTopics(group);
      fill(topics, table([
        { title: 'dead-letter topic', cell: (t) => h('button', { type: 'button', class: 'link', 'data-testid': 'dlq-open',
          onclick: () => fill(letters, lettersView(group, t.topic_name, load)) }, t.topic_name) },
        { title: 'original topic', cell: (t) => t.original_topic_name },
        { title: 'dead letters', num: true, cell: (t) => formatCount(t.dead_letters) },
        { title: 'redriven', num: true, cell: (t) => formatCount(t.redriven) },
        { title: 'pending', num: true, cell: (t) => formatCount(t.pending) },
      ], list, { testid: 'dlq-topics', empty: 'no dead letters: nothing was nacked past max.delivery.attempts' }));
    } catch (e) {
      status.show(e);
    }
  };
  load();
  return h('div', { 'data-testid': 'dead-letters' },
    h('p', { class: 'muted' }, 'Records this group nacked max.delivery.attempts times (topics named by dead.letter.topic.template: '
      + '<topic>.<group>.dlq unless the broker or the group\'s consumer instances set another).'),
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'secondary', onclick: load }, 'Refresh')),
    status.el, topics, letters);
}
