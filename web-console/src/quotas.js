// Client-quota helpers without a DOM (issue 31): the rows of the quota table and the PUT body of
// the set and remove forms.

/** Kafka's quota keys (QuotaConfigs) with their units, as the /client-quotas routes name them. */
export const QUOTA_KEYS = [
  { key: 'producer_byte_rate', unit: 'bytes/s' },
  { key: 'consumer_byte_rate', unit: 'bytes/s' },
  { key: 'request_percentage', unit: '% of a request thread' },
  { key: 'controller_mutation_rate', unit: 'partitions/s' },
  { key: 'connection_creation_rate', unit: 'connections/s (ip entities)' },
];
export const QUOTA_ENTITY_TYPES = ['user', 'client-id', 'ip'];
export const QUOTA_DEFAULT = '<default>';

/** "user=alice,client-id=<default>" (user first, as kafka-configs prints an entity). */
export function entityText(entity) {
  return QUOTA_ENTITY_TYPES.filter((t) => t in entity).map((t) => `${t}=${entity[t]}`).join(',');
}

/** One row per entity and key of a KafkaClientQuotaList's data, sorted by entity then key. */
export function quotaRows(quotas) {
  const rows = [];
  for (const q of quotas) {
    for (const [key, value] of Object.entries(q.quotas || {})) rows.push({ entity: q.entity, key, value });
  }
  return rows.sort((a, b) => entityText(a.entity).localeCompare(entityText(b.entity)) || a.key.localeCompare(b.key));
}

/**
 * The entity of the set form: each of `names` (user, client-id, ip) that is not empty, with
 * `defaults[type]` true meaning `<default>`. Throws naming what is wrong.
 */
export function formEntity(names, defaults = {}) {
  const entity = {};
  for (const t of QUOTA_ENTITY_TYPES) {
    if (defaults[t]) entity[t] = QUOTA_DEFAULT;
    else if ((names[t] || '').trim()) entity[t] = names[t].trim();
  }
  if (Object.keys(entity).length === 0) throw new Error('name a user, a client id or an ip (or tick its default)');
  return entity;
}

/** The quota value of the set form as a number above 0; throws naming the key otherwise. */
export function quotaValue(key, text) {
  const v = Number(String(text).trim());
  if (!String(text).trim() || !Number.isFinite(v) || v <= 0) throw new Error(`${key} must be a number above 0, got "${text}"`);
  return v;
}
