// ACLs (issue 30): every ACL, filtered by principal and resource; add one; delete one. The add and
// delete buttons are disabled, with a title naming the permission, when the signed-in principal
// may not ALTER the cluster (the v3 cluster's authorized_operations).
import { api } from './api.js';
import { fill, h, statusLine, table } from './dom.js';
import { ACL_OPERATIONS, ACL_RESOURCE_TYPES, filterAcls, missingPermission } from './acls.js';

function select(name, values, testid) {
  return h('select', { name, 'data-testid': testid }, values.map((v) => h('option', { value: v }, v)));
}

export async function render(view, route, ctx) {
  const status = statusLine();
  const principalFilter = h('input', { name: 'principal', placeholder: 'User:alice', 'data-testid': 'acl-filter-principal' });
  const resourceFilter = h('input', { name: 'resource', placeholder: 'topic name', 'data-testid': 'acl-filter-resource' });
  const list = h('div', {}, h('p', { class: 'muted' }, 'Loading ACLs…'));
  const form = {
    resourceType: select('resource_type', ACL_RESOURCE_TYPES, 'acl-resource-type'),
    resourceName: h('input', { name: 'resource_name', placeholder: 'name (not for CLUSTER)', 'data-testid': 'acl-resource-name' }),
    patternType: select('pattern_type', ['LITERAL', 'PREFIXED'], 'acl-pattern-type'),
    principal: h('input', { name: 'principal', required: true, placeholder: 'User:alice', 'data-testid': 'acl-principal' }),
    host: h('input', { name: 'host', value: '*', 'data-testid': 'acl-host' }),
    operation: select('operation', ACL_OPERATIONS.filter((o) => o !== 'ALL').concat(['ALL']), 'acl-operation'),
    permission: select('permission', ['ALLOW', 'DENY'], 'acl-permission'),
  };
  let alterTitle = null;   // null: the principal may ALTER the cluster
  let acls = [];

  const show = () => {
    // A refused or failed read is not an empty list (the new user of session 37 read "no ACLs"
    // under the 403): the status line above names why.
    if (acls === null) return fill(list, h('p', { class: 'muted' }, 'The ACLs could not be listed: see the error above.'));
    fill(list, table([
      { title: 'principal', cell: (a) => a.principal },
      { title: 'host', cell: (a) => a.host },
      { title: 'operation', cell: (a) => a.operation },
      { title: 'permission', cell: (a) => a.permission },
      { title: 'resource', cell: (a) => `${a.resource_type} ${a.resource_name}` },
      { title: 'pattern', cell: (a) => a.pattern_type },
      { title: '', cell: (a) => h('button', { type: 'button', class: 'danger', 'data-testid': 'acl-delete',
        disabled: alterTitle !== null, title: alterTitle || 'delete this ACL', onclick: () => remove(a) }, 'Delete') },
    ], filterAcls(acls, { principal: principalFilter.value, resource: resourceFilter.value }),
    { empty: 'no ACLs', testid: 'acls-table' }));
  };

  const load = async () => {
    try {
      const cluster = await api.cluster();
      alterTitle = missingPermission(cluster.authorized_operations, 'ALTER');
      acls = await api.acls();
    } catch (e) {
      acls = null;
      status.show(e);   // a 403 names the permission already
    }
    if (!ctx.alive) return;
    add.disabled = alterTitle !== null;
    add.title = alterTitle || 'add this ACL';
    show();
  };

  const remove = async (a) => {
    try {
      await api.deleteAcls({ resource_type: a.resource_type, resource_name: a.resource_name, pattern_type: a.pattern_type,
        principal: a.principal, host: a.host, operation: a.operation, permission: a.permission });
      await load();
    } catch (e) {
      status.show(e);
    }
  };

  const add = h('button', { type: 'submit', 'data-testid': 'acl-add' }, 'Add ACL');
  const addForm = h('form', { class: 'acl-form', 'data-testid': 'acl-form', onsubmit: async (ev) => {
    ev.preventDefault();
    const name = form.resourceType.value === 'CLUSTER' ? 'kafka-cluster' : form.resourceName.value;
    try {
      await api.createAcl({ resource_type: form.resourceType.value, resource_name: name,
        pattern_type: form.patternType.value, principal: form.principal.value, host: form.host.value || '*',
        operation: form.operation.value, permission: form.permission.value });
      status.ok(`added ${form.permission.value} ${form.operation.value} on ${form.resourceType.value} ${name} for ${form.principal.value}`);
      await load();
    } catch (e) {
      status.show(e);
    }
  } },
  h('label', {}, 'Resource ', form.resourceType, ' ', form.resourceName, ' ', form.patternType),
  h('label', {}, 'Principal ', form.principal),
  h('label', {}, 'Host ', form.host),
  h('label', {}, 'Operation ', form.operation, ' ', form.permission),
  add);

  principalFilter.addEventListener('input', show);
  resourceFilter.addEventListener('input', show);
  fill(view, h('h1', {}, 'ACLs'), status.el,
    h('div', { class: 'filters' }, h('label', {}, 'Principal ', principalFilter), ' ',
      h('label', {}, 'Resource ', resourceFilter)),
    list, h('h2', {}, 'Add an ACL'), addForm);
  await load();
}
