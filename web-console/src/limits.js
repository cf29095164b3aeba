// Every limit of the console, with why that value (style.md "Limits and control flow").

/** Overview and topic list: how often /metrics is sampled for the per-second rates, ms. */
export const METRICS_POLL_MS = 2000;
/** Points kept per live chart: 2 minutes at METRICS_POLL_MS, enough to see a trend on a phone. */
export const CHART_POINTS_MAX = 60;
/** Topics described at once (GET /topics/{topic} per topic for ISR and configs): keeps a
 *  cluster with thousands of topics from opening thousands of requests together. */
export const DESCRIBE_CONCURRENCY_MAX = 8;
/** Topics described for the overview's under-replicated/offline counts; more are counted as
 *  "not checked" rather than described every poll. */
export const OVERVIEW_TOPICS_DESCRIBED_MAX = 200;
/** Message browser: records shown per load (the page holds them all decoded). */
export const BROWSE_RECORDS_MAX = 500;
/** Message browser: bytes asked per fetch (max_bytes of GET .../records). */
export const BROWSE_FETCH_BYTES = 256 * 1024;
/** Message browser: fetches per load; bounds a load of many tiny records. */
export const BROWSE_FETCHES_MAX = 50;
/** Message browser: bytes of a value shown before "show all" (hex dumps grow 4x). */
export const VALUE_PREVIEW_BYTES = 4096;
/** Live tail: records kept on screen; older ones scroll away (a tail is not an archive). */
export const TAIL_RECORDS_MAX = 1000;
/** Live tail: credit granted per WebSocket at a time (ws-protocol.md "Flow control"); granted
 *  again as records arrive, not while paused, so a paused tail costs the server nothing. */
export const TAIL_CREDIT_RECORDS = 100;
/** Live tail: WebSockets opened for "all partitions" (one subscription per connection). */
export const TAIL_SOCKETS_MAX = 32;
/** Consumer groups: how often a group page and the group list are refreshed, ms (the broker
 *  samples lag history every 5 s itself: lag_history_interval_ms). */
export const GROUP_REFRESH_MS = 5000;
/** Groups list: lag summaries fetched at once. */
export const GROUP_SUMMARY_CONCURRENCY_MAX = 8;
/** Delayed delivery: how often the schedulers are asked, ms (each ask copies every window's due
 *  times on the brokers: up to 20,000 per delay partition). */
export const DELAYED_REFRESH_MS = 2000;
/** Brokers page: how often the brokers, the rebalance dry run and the moves under way are asked,
 *  ms (a dry run plans over every partition on the broker answering: not every second). */
export const BROKERS_REFRESH_MS = 5000;
