// Small DOM helpers: element building, tables, error boxes, forms. No innerHTML anywhere:
// every text from the broker goes in through textContent, so record data cannot inject markup.
import { linkPieces } from './format.js';

/** h('div', {class: 'x', onclick: fn}, child, 'text', [more]) -> HTMLElement. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/**
 * A table in a horizontally scrolling wrapper (phones): columns [{title, cell: row => node|text,
 * num: true for right-aligned numbers}], rows any array. `empty` is shown when there are none.
 */
export function table(columns, rows, { empty = 'nothing yet', testid } = {}) {
  const head = h('tr', {}, columns.map((c) => h('th', { class: c.num ? 'num' : null }, c.title)));
  const body = rows.length
    ? rows.map((r) => h('tr', {}, columns.map((c) => h('td', { class: c.num ? 'num' : null, 'data-label': c.title }, c.cell(r)))))
    : [h('tr', {}, h('td', { colspan: columns.length, class: 'empty' }, empty))];
  return h('div', { class: 'table-wrap' }, h('table', { 'data-testid': testid }, h('thead', {}, head), h('tbody', {}, body)));
}

/**
 * A box with the error text (the server's error_code and message for API errors); URLs in it are
 * links, a node's bare address to that node's console on the same page (linkPieces).
 */
export function errorBox(err) {
  const message = err && err.message ? err.message : String(err);
  const pieces = linkPieces(message, typeof location === 'undefined' ? '' : location.hash);
  return h('div', { class: 'error', role: 'alert', 'data-testid': 'error' },
    pieces.map((p) => (p.url ? h('a', { href: p.url, 'data-testid': 'error-link' }, p.text) : p.text)));
}

/** A place on a page for the outcome of an action: .show(err) / .ok(text) / .clear(). */
export function statusLine() {
  const el = h('div', { class: 'status', 'aria-live': 'polite' });
  return {
    el,
    show(err) { fill(el, errorBox(err)); },
    ok(text) { fill(el, h('div', { class: 'ok', 'data-testid': 'ok' }, text)); },
    clear() { el.replaceChildren(); },
  };
}

/** A labelled form field. */
export function field(label, input, hint) {
  return h('label', { class: 'field' }, h('span', { class: 'label' }, label), input, hint ? h('small', {}, hint) : null);
}

/** A link inside the console (hash route). */
export function link(route, text) {
  return h('a', { href: `#${route}` }, text);
}

/** A "stat" tile: a label and a big number (`text` for words: smaller, so they fit). */
export function tile(label, value, { testid, warn = false, text = false } = {}) {
  return h('div', { class: `tile${warn ? ' warn' : ''}`, 'data-testid': testid }, h('div', { class: `tile-value${text ? ' text' : ''}` }, value),
    h('div', { class: 'tile-label' }, label));
}

/** A button that asks again before doing something destructive: first click arms it (marked
 *  data-armed while it waits, so a refreshing page can leave it alone). */
export function confirmButton(label, confirmLabel, action, attrs = {}) {
  let armed = false;
  let timer = null;
  const button = h('button', {
    ...attrs,
    type: 'button',
    class: `danger ${attrs.class || ''}`,
    onclick: async () => {
      if (!armed) {
        armed = true;
        button.textContent = confirmLabel;
        button.dataset.armed = '';
        timer = setTimeout(() => { armed = false; button.textContent = label; delete button.dataset.armed; }, 5000);
        return;
      }
      clearTimeout(timer);
      armed = false;
      button.textContent = label;
      delete button.dataset.armed;
      await action();
    },
  }, label);
  return button;
}

/** Offers `text` as a file download (export). */
export function download(filename, text, type = 'application/json') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: filename });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
