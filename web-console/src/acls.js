// ACL helpers without a DOM (issue 30): the list's filter and the text of a disabled button.

/** Kafka's operations of an ACL, as the v3 routes name them. */
export const ACL_OPERATIONS = ['ALL', 'READ', 'WRITE', 'CREATE', 'DELETE', 'ALTER', 'DESCRIBE', 'CLUSTER_ACTION',
  'DESCRIBE_CONFIGS', 'ALTER_CONFIGS', 'IDEMPOTENT_WRITE'];
export const ACL_RESOURCE_TYPES = ['TOPIC', 'GROUP', 'CLUSTER', 'TRANSACTIONAL_ID'];

/**
 * null when `authorized` (the authorized_operations of a v3 answer) holds `operation`, else the
 * title of a disabled control naming the missing permission, e.g. "needs ALTER on the cluster
 * (an ACL ALLOW ALTER on CLUSTER kafka-cluster)".
 */
export function missingPermission(authorized, operation, resource = 'CLUSTER kafka-cluster') {
  if (Array.isArray(authorized) && authorized.includes(operation)) return null;
  const [type] = resource.split(' ');
  return `needs ${operation} on the ${type.toLowerCase().replace('_', ' ')} (an ACL ALLOW ${operation} on ${resource})`;
}

/** The ACLs whose principal and resource name contain the filters' texts (case-insensitive). */
export function filterAcls(acls, { principal = '', resource = '' } = {}) {
  const p = principal.trim().toLowerCase();
  const r = resource.trim().toLowerCase();
  return acls.filter((a) => (!p || a.principal.toLowerCase().includes(p)) &&
    (!r || `${a.resource_type} ${a.resource_name}`.toLowerCase().includes(r)));
}
