// Prometheus text format (0.0.4) parsing and per-second rates from two samples; the lag-history
// points a group page keeps across a move of its coordinator. Pure: no DOM.

/** Text -> [{name, labels: {k: v}, value}] (comments and malformed lines skipped). */
export function parsePrometheus(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      let l;
      while ((l = re.exec(m[3])) !== null) {
        labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      }
    }
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

/**
 * The numbers the console shows, from one /metrics sample:
 * {totals: {records_in, bytes_in, records_out, bytes_out}, topics: {name: same + size_bytes},
 *  cleaner: {name: {dirty_ratio (largest of its partitions), bytes_cleaned, cleaner_s (summed),
 *  last_clean_s (latest; -1 never)}}} (the log cleaner's figures, for compacted topics only),
 *  cleanerPartitions: {name: {partition: the same figures of that one partition}}}.
 */
export function summarize(samples) {
  const fields = {
    ringlog_topic_records_in_total: 'records_in',
    ringlog_topic_bytes_in_total: 'bytes_in',
    ringlog_topic_records_out_total: 'records_out',
    ringlog_topic_bytes_out_total: 'bytes_out',
  };
  const zero = () => ({ records_in: 0, bytes_in: 0, records_out: 0, bytes_out: 0, size_bytes: 0 });
  const totals = zero();
  const topics = {};
  const cleaner = {};
  const cleanerPartitions = {};
  const none = () => ({ dirty_ratio: 0, bytes_cleaned: 0, cleaner_s: 0, last_clean_s: -1 });
  const cleanerOf = (topic) => (cleaner[topic] ||= none());
  const cleanerField = {
    ringlog_log_cleaner_dirty_ratio: 'dirty_ratio',
    ringlog_log_cleaner_bytes_read_total: 'bytes_cleaned',
    ringlog_log_cleaner_seconds_total: 'cleaner_s',
    ringlog_log_cleaner_last_clean_timestamp_seconds: 'last_clean_s',
  };
  for (const s of samples) {
    const field = fields[s.name];
    const topic = s.labels.topic;
    if (cleanerField[s.name] && s.labels.partition !== undefined) {
      ((cleanerPartitions[topic] ||= {})[s.labels.partition] ||= none())[cleanerField[s.name]] = s.value;
    }
    if (field) {
      totals[field] += s.value;
      (topics[topic] ||= zero())[field] += s.value;
    } else if (s.name === 'ringlog_partition_size_bytes') {
      totals.size_bytes += s.value;
      (topics[topic] ||= zero()).size_bytes += s.value;
    } else if (s.name === 'ringlog_log_cleaner_dirty_ratio') {
      cleanerOf(topic).dirty_ratio = Math.max(cleanerOf(topic).dirty_ratio, s.value);
    } else if (s.name === 'ringlog_log_cleaner_bytes_read_total') {
      cleanerOf(topic).bytes_cleaned += s.value;
    } else if (s.name === 'ringlog_log_cleaner_seconds_total') {
      cleanerOf(topic).cleaner_s += s.value;
    } else if (s.name === 'ringlog_log_cleaner_last_clean_timestamp_seconds') {
      cleanerOf(topic).last_clean_s = Math.max(cleanerOf(topic).last_clean_s, s.value);
    }
  }
  return { totals, topics, cleaner, cleanerPartitions };
}

/** Per-second rates between two summarize() results taken `seconds` apart. Counters that went
 *  down (a restarted broker) count from zero. */
export function rates(before, after, seconds) {
  const rate = (a, b) => (seconds > 0 ? Math.max(0, b >= a ? b - a : b) / seconds : 0);
  const pick = (a, b) => ({
    records_in: rate(a.records_in, b.records_in),
    bytes_in: rate(a.bytes_in, b.bytes_in),
    records_out: rate(a.records_out, b.records_out),
    bytes_out: rate(a.bytes_out, b.bytes_out),
  });
  const topics = {};
  const none = { records_in: 0, bytes_in: 0, records_out: 0, bytes_out: 0 };
  for (const [name, b] of Object.entries(after.topics)) topics[name] = pick(before.topics[name] || none, b);
  return { totals: pick(before.totals, after.totals), topics };
}

/** The lag-history points a group page shows ({t: ms, v: total lag}, oldest first): those it
 *  already had (`kept`) and the coordinator's answer now (`fresh`), one per timestamp (the
 *  answer's wins), the last `max`. The history lives in the coordinator's memory, so a move of
 *  the group's coordinator starts it again empty there: without this the chart dropped every
 *  sample it had shown at each move. */
export function mergeLagHistory(kept, fresh, max) {
  const byTime = new Map(kept.map((p) => [p.t, p]));
  for (const p of fresh) byTime.set(p.t, p);
  const merged = [...byTime.values()].sort((a, b) => a.t - b.t);
  return merged.slice(Math.max(0, merged.length - max));
}
