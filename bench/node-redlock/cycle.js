// node-redlock 5.0 (on ioredis 5) over the lock-bench's nodes: sequential
// acquire+release cycles on all of the given nodes and on the first alone,
// `rounds` rounds of `n` cycles each, the order swapped every round, on
// node's one event loop (the shape of our current-thread row).
//
//   node cycle.js <rounds> <n> <redis://host:port>...
//
// Prints one line of three numbers: the medians of the five-node and
// one-node µs per cycle, and the median of the rounds' own five/one ratios.
"use strict";
const Redis = require("ioredis");
const Redlock = require("redlock").default;

const [rounds, n, ...urls] = process.argv.slice(2);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function cycleUs(redlock, n) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const lock = await redlock.acquire([`node-redlock:${i % 7}`], 10000);
    await lock.release();
  }
  return Number(process.hrtime.bigint() - started) / 1e3 / n;
}

(async () => {
  const clients = urls.map((url) => new Redis(url));
  // No retries: every acquire here is uncontended, as in ours.
  const settings = { retryCount: 0 };
  const all = new Redlock(clients, settings);
  const first = new Redlock(clients.slice(0, 1), settings);
  await cycleUs(all, 200); // connect and warm up
  await cycleUs(first, 200);
  const five = [], one = [], ratios = [];
  for (let round = 0; round < Number(rounds); round++) {
    let f, o;
    if (round % 2 === 0) {
      f = await cycleUs(all, Number(n));
      o = await cycleUs(first, Number(n));
    } else {
      o = await cycleUs(first, Number(n));
      f = await cycleUs(all, Number(n));
    }
    five.push(f);
    one.push(o);
    ratios.push(f / o);
  }
  console.log(`${median(five)} ${median(one)} ${median(ratios)}`);
  clients.forEach((c) => c.disconnect());
})().catch((e) => {
  console.error(`node-redlock: ${e.stack || e}`);
  process.exit(1);
});
