// Waiting with a deadline for the KafkaJS tests: they poll a condition, never sleep for one.

/** Resolves once check() is true, polling every 50 ms; rejects after `ms` naming `what`. */
export async function waitFor(check, what, ms = 60_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
