// Tests of coordkit.js against a real `coordctl agent` on a real etcd. Run by
// internal/cmd/agent's Go tests (make test), which set COORDKIT_AGENT_URL,
// COORDKIT_AGENT_TTL and COORDKIT_TEST_REVOKE_URL. By hand:
//   COORDKIT_AGENT_URL=http://127.0.0.1:4050 node --test clients/node/
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { once } = require('node:events');
const { Client, NotAcquired, CoordError, LostError } = require('./coordkit.js');

const URL_ = process.env.COORDKIT_AGENT_URL ?? 'http://127.0.0.1:4050';
const TTL = Number(process.env.COORDKIT_AGENT_TTL ?? '10');
const REVOKE = process.env.COORDKIT_TEST_REVOKE_URL;
const c = new Client(URL_);
const fresh = (name) => `nodetest-${randomBytes(4).toString('hex')}/${name}`;

// until polls check (the agent's state has no event to wait on) until it
// holds, failing with what after 30 s.
async function until(check, what) {
  const deadline = Date.now() + 30000;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, what);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const waiters = (name, n) => until(async () => (await c.lockStatus(name)).waiters.length >= n, 'no waiter queued');

test('lock: token, scope, release', async () => {
  const name = fresh('a');
  const held = await c.lock(name, { timeout: 30 });
  assert.ok(held.token > 0);
  assert.equal(held.scope, `${name}/`);
  assert.ok(held.leaseDeadline > new Date());
  held.check();
  assert.equal((await c.lockStatus(name)).holders[0].token, held.token);
  await held.release();
  assert.equal(held.reason, 'released');
  assert.throws(() => held.check(), LostError);
});

test("this machine's clock 30 s off the agent's, both ways: the hold is neither lost at once nor believed past its deadline", async () => {
  const realNow = Date.now;
  for (const skew of [30000, -30000]) {
    Date.now = () => realNow() + skew;
    let held;
    try {
      held = await c.lock(fresh('skew'), { timeout: 30 });
      const left = performance.now();
      assert.ok(held.expires - left > 0, `skew ${skew} ms: the deadline is already past`);
      assert.ok(held.expires - left <= TTL * 1000 + 1000, `skew ${skew} ms: ${held.expires - left} ms left, more than the TTL`);
      const shown = held.leaseDeadline.getTime() - Date.now();
      assert.ok(shown > 0 && shown <= TTL * 1000 + 1000, `skew ${skew} ms: leaseDeadline ${shown} ms away on this clock`);
      // A held line moves the deadline on: with it counted on this clock
      // the hold is still good.
      const first = held.expires;
      await until(() => held.expires !== first, `skew ${skew} ms: no held line`);
      held.check();
    } finally {
      Date.now = realNow;
      await held?.release();
    }
  }
});

test('exclusion: try, timeout, then the waiter', async () => {
  const name = fresh('x');
  const first = await c.lock(name);
  await assert.rejects(c.lock(name, { tryOnce: true }), (e) => e instanceof NotAcquired && e.code === 'busy');
  await assert.rejects(c.lock(name, { timeout: 0.2 }), (e) => e instanceof NotAcquired && e.code === 'timeout');
  const next = c.lock(name, { timeout: 30 });
  await waiters(name, 1);
  await first.release();
  const second = await next;
  assert.ok(second.token > first.token);
  await second.release();
});

test('await using releases', { skip: !Symbol.asyncDispose && 'no Symbol.asyncDispose in this Node' }, async () => {
  const name = fresh('using');
  const held = await c.lock(name);
  await held[Symbol.asyncDispose]();
  const again = await c.lock(name, { tryOnce: true });
  await again.release();
});

test('crash of the holder releases at once', async () => {
  const name = fresh('crash');
  const src = `const {Client}=require(${JSON.stringify(path.join(__dirname, 'coordkit.js'))});
    new Client(${JSON.stringify(URL_)}).lock(${JSON.stringify(name)}).then(h=>{console.log('held',h.token);setInterval(()=>{},1e6)})`;
  const child = spawn(process.execPath, ['-e', src], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const [line] = await once(child.stdout, 'data');
    assert.match(String(line), /^held \d+/);
    const next = c.lock(name, { timeout: 30 });
    await waiters(name, 1);
    const killed = performance.now();
    child.kill('SIGKILL');
    const held = await next;
    const ms = performance.now() - killed;
    console.error(`crash handoff: ${ms.toFixed(1)} ms (TTL ${TTL} s)`);
    assert.ok(ms < (TTL * 1000) / 2, `handoff ${ms} ms: waited for the lease`);
    await held.release();
  } finally {
    child.kill('SIGKILL');
  }
});

test('loss is an event and check() throws', { skip: !REVOKE && 'COORDKIT_TEST_REVOKE_URL is not set' }, async () => {
  const held = await c.lock(fresh('lost'));
  const lost = once(held, 'lost');
  const res = await fetch(`${REVOKE}?lease=${held.lease}`);
  assert.equal(res.status, 200);
  const [reason] = await lost;
  assert.match(reason, /lost/);
  assert.throws(() => held.check(), LostError);
  await held.release();
});

test('shared lock, semaphore, campaign', async () => {
  const rw = fresh('rw');
  const [r1, r2] = await Promise.all([c.lock(rw, { shared: true }), c.lock(rw, { shared: true })]);
  await assert.rejects(c.lock(rw, { tryOnce: true }), NotAcquired);
  await Promise.all([r1.release(), r2.release()]);

  const sem = fresh('sem');
  const s1 = await c.semaphore(sem, 2);
  const s2 = await c.semaphore(sem, 2);
  assert.deepEqual(new Set([s1.slot, s2.slot]), new Set([0, 1]));
  await assert.rejects(c.semaphore(sem, 2, { tryOnce: true }), (e) => e.code === 'busy');
  await Promise.all([s1.release(), s2.release()]);

  const svc = fresh('svc');
  const l = await c.campaign(svc, 'node-1', { timeout: 30 });
  assert.deepEqual(await c.leader(svc), { leader: 'node-1', token: l.token });
  await l.release();
});

test('bad request', async () => {
  await assert.rejects(c.lock('/x'), (e) => e instanceof CoordError && e.code === 'bad_request' && e.status === 400);
});

test('an AbortSignal gives up a waiting hold, and the agent drops its key', { timeout: 30000 }, async () => {
  const name = fresh('abort');
  const first = await c.lock(name);
  const ac = new AbortController();
  const waiting = c.lock(name, { signal: ac.signal });
  await waiters(name, 1);
  ac.abort();
  await assert.rejects(waiting, (e) => e.name === 'AbortError');
  // The closed request removed the waiting key: nobody queues behind first.
  await until(async () => (await c.lockStatus(name)).waiters.length === 0, 'the aborted waiter still queues');
  await assert.rejects(c.lock(name, { signal: AbortSignal.abort() }), (e) => e.name === 'AbortError');
  await first.release();
  const free = await c.lock(name, { tryOnce: true });
  await free.release();
  // A signal that fires after the grant changes nothing.
  const later = new AbortController();
  const h2 = await c.lock(name, { signal: later.signal });
  later.abort();
  h2.check();
  assert.equal(h2.lost, false);
  await h2.release();
});

test('one AbortSignal shared by many waiting holds: no MaxListeners warning', { timeout: 30000 }, async () => {
  const name = fresh('shared-signal');
  const first = await c.lock(name);
  const warnings = [];
  const onWarning = (w) => warnings.push(w.name);
  process.on('warning', onWarning);
  try {
    const ac = new AbortController();
    const waits = Array.from({ length: 12 }, () => c.lock(name, { signal: ac.signal }));
    await waiters(name, 12);
    ac.abort();
    const results = await Promise.allSettled(waits);
    assert.deepEqual(results.map((r) => r.reason?.name), Array(12).fill('AbortError'));
    await new Promise((r) => setImmediate(r)); // warnings are emitted on a later tick
  } finally {
    process.off('warning', onWarning);
  }
  assert.deepEqual(warnings.filter((n) => n === 'MaxListenersExceededWarning'), []);
  await first.release();
});

test('the error page of a proxy is a CoordError with the status', async () => {
  const http = require('node:http');
  const srv = http.createServer((req, res) => {
    req.resume();
    res.writeHead(502, { 'Content-Type': 'text/html' }).end('<html><body>502 Bad Gateway</body></html>');
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  try {
    const bad = new Client(`http://127.0.0.1:${srv.address().port}`);
    for (const p of [bad.lock('x'), bad.lockStatus('x')]) {
      await assert.rejects(p, (e) => e instanceof CoordError && e.code === 'http_502' && e.status === 502 && /Bad Gateway/.test(e.message));
    }
  } finally {
    srv.close();
  }
});

test('an agent that refuses or does not resolve is a CoordError unavailable, the cause kept', async () => {
  const net = require('node:net');
  const probe = net.createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address();
  await new Promise((r) => probe.close(r));
  const gone = new Client(`http://127.0.0.1:${port}`, { connectTimeout: 5 });
  for (const p of [gone.lock('x', { timeout: 1 }), gone.lockStatus('x')]) {
    await assert.rejects(p, (e) => e instanceof CoordError && e.code === 'unavailable' &&
      e.message.includes(`cannot reach the agent at http://127.0.0.1:${port}`) && e.cause?.code === 'ECONNREFUSED');
  }
  await assert.rejects(new Client('http://agent.invalid:4050', { connectTimeout: 5 }).lockStatus('x'),
    (e) => e instanceof CoordError && e.code === 'unavailable');
});

test("an agent gone silent ends the hold at the lease deadline, with 'lost'", { timeout: (TTL + 15) * 1000 }, async () => {
  // A proxy that stops passing bytes on both sides: the agent looks frozen
  // (a partition, a stopped host), and no FIN or RST reaches the client.
  const net = require('node:net');
  const agent = new URL(URL_);
  let frozen = false;
  const sockets = [];
  const px = net.createServer((down) => {
    const up = net.connect(Number(agent.port), agent.hostname);
    sockets.push(down, up);
    down.on('data', (d) => frozen || up.write(d));
    up.on('data', (d) => frozen || down.write(d));
    for (const [a, b] of [[down, up], [up, down]]) {
      a.on('error', () => {});
      a.on('close', () => b.destroy());
    }
  });
  px.listen(0, '127.0.0.1');
  await once(px, 'listening');
  try {
    const held = await new Client(`http://127.0.0.1:${px.address().port}`).lock(fresh('silent'));
    const lost = once(held, 'lost');
    frozen = true;
    const start = performance.now();
    const [reason] = await lost;
    assert.equal(reason, 'no news from the agent before the lease deadline');
    const waited = performance.now() - start;
    console.error(`silent agent: lost after ${(waited / 1000).toFixed(2)} s (TTL ${TTL} s)`);
    assert.ok(waited < (TTL + 1) * 1000, `lost after ${waited} ms`);
    assert.throws(() => held.check(), LostError);
  } finally {
    for (const s of sockets) s.destroy();
    px.close();
  }
});
