// Client quotas (issue 31): every stored quota by entity; set one key of an entity; remove one.
// The list needs DESCRIBE_CONFIGS on the cluster, set and remove ALTER_CONFIGS: without it their
// buttons are disabled, with a title naming the permission (the v3 cluster's
// authorized_operations), as on the ACL page.
import { api } from './api.js';
import { fill, h, statusLine, table } from './dom.js';
import { missingPermission } from './acls.js';
import { QUOTA_KEYS, entityText, formEntity, quotaRows, quotaValue } from './quotas.js';

export async function render(view, route, ctx) {
  const status = statusLine();
  const list = h('div', {}, h('p', { class: 'muted' }, 'Loading quotas…'));
  const names = {
    user: h('input', { name: 'user', placeholder: 'alice', 'data-testid': 'quota-user' }),
    'client-id': h('input', { name: 'client-id', placeholder: 'app (X-Client-Id)', 'data-testid': 'quota-client-id' }),
    ip: h('input', { name: 'ip', placeholder: '10.0.0.1', 'data-testid': 'quota-ip' }),
  };
  const defaults = {
    user: h('input', { type: 'checkbox', name: 'user-default', 'data-testid': 'quota-user-default' }),
    'client-id': h('input', { type: 'checkbox', name: 'client-id-default', 'data-testid': 'quota-client-id-default' }),
    ip: h('input', { type: 'checkbox', name: 'ip-default', 'data-testid': 'quota-ip-default' }),
  };
  const key = h('select', { name: 'key', 'data-testid': 'quota-key' },
    QUOTA_KEYS.map((k) => h('option', { value: k.key }, `${k.key} (${k.unit})`)));
  const value = h('input', { name: 'value', required: true, placeholder: '1048576', 'data-testid': 'quota-value' });
  let alterTitle = null;   // null: the principal may ALTER_CONFIGS on the cluster
  let quotas = [];
  let unreadable = null;   // why the list could not be read (a 403): shown instead of an empty table

  const show = () => {
    if (unreadable) {
      fill(list, h('p', { class: 'muted', 'data-testid': 'quotas-unreadable' }, unreadable));
      return;
    }
    fill(list, table([
      { title: 'entity', cell: (r) => entityText(r.entity) },
      { title: 'quota', cell: (r) => r.key },
      { title: 'value', cell: (r) => String(r.value) },
      { title: '', cell: (r) => h('button', { type: 'button', class: 'danger', 'data-testid': 'quota-remove',
        disabled: alterTitle !== null, title: alterTitle || `remove ${r.key} of ${entityText(r.entity)}`,
        onclick: () => remove(r) }, 'Remove') },
    ], quotaRows(quotas), { empty: 'no client quotas', testid: 'quotas-table' }));
  };

  const load = async () => {
    try {
      const cluster = await api.cluster();
      alterTitle = missingPermission(cluster.authorized_operations, 'ALTER_CONFIGS');
      quotas = await api.clientQuotas();
      unreadable = null;
    } catch (e) {
      quotas = [];
      unreadable = e.status === 403 ? 'the quotas cannot be listed without DESCRIBE_CONFIGS on the cluster'
                                    : 'the quotas could not be read';
      status.show(e.status === 403 ? new Error(`${e.message} (${missingPermission([], 'DESCRIBE_CONFIGS')})`) : e);
    }
    if (!ctx.alive) return;
    set.disabled = alterTitle !== null;
    set.title = alterTitle || 'set this quota';
    show();
  };

  const remove = async (r) => {
    try {
      await api.alterClientQuotas({ entity: r.entity, quotas: { [r.key]: null } });
      status.ok(`removed ${r.key} of ${entityText(r.entity)}`);
      await load();
    } catch (e) {
      status.show(e);
    }
  };

  const set = h('button', { type: 'submit', 'data-testid': 'quota-set' }, 'Set quota');
  const form = h('form', { class: 'acl-form', 'data-testid': 'quota-form', onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      const entity = formEntity(Object.fromEntries(Object.entries(names).map(([t, el]) => [t, el.value])),
        Object.fromEntries(Object.entries(defaults).map(([t, el]) => [t, el.checked])));
      const v = quotaValue(key.value, value.value);
      await api.alterClientQuotas({ entity, quotas: { [key.value]: v } });
      status.ok(`set ${key.value}=${v} for ${entityText(entity)}`);
      await load();
    } catch (e) {
      status.show(e);
    }
  } },
  ...Object.keys(names).map((t) => h('label', {}, `${t} `, names[t], ' ', defaults[t], ' default')),
  h('label', {}, 'Quota ', key, ' ', value),
  set);

  fill(view, h('h1', {}, 'Client quotas'), status.el,
    h('p', { class: 'muted' }, 'The most specific entity that sets a key bounds a client (user and client id first; ' +
      'over HTTP the client id is the X-Client-Id header, else the address). Over a byte rate, HTTP clients get 429 ' +
      'with Retry-After; Kafka clients are throttled.'),
    list, h('h2', {}, 'Set a quota'), form);
  await load();
}
