// coordkit: fenced locks, semaphores and leadership through `coordctl agent`.
//
// No dependencies, Node >= 18. A hold is one HTTP request whose response
// streams JSON lines; releasing it (or this process dying) closes it.
//
//   const { Client } = require('./coordkit.js');
//   const client = new Client('http://127.0.0.1:4050');
//   await using held = await client.lock('jobs/nightly', { timeout: 5 }); // or: try { } finally { await held.release() }
//   held.on('lost', (reason) => stop());
//   await write(data, { token: held.token, scope: held.scope }); // the resource fences
//   held.check(); // throws LostError once the hold is lost
//   await client.lock('jobs/nightly', { signal: AbortSignal.timeout(5000) }); // or an AbortController's
//
// See docs/api.md for the API and what a hold does and does not promise.
'use strict';

const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const { EventEmitter } = require('node:events');

const asyncDispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');

const NO_NEWS = 'no news from the agent before the lease deadline';

// One 'abort' listener per signal, whatever the number of holds waiting on
// it (an application's shutdown signal shared by many would otherwise pass
// Node's MaxListeners and warn): onAbort(signal, fn) returns fn's removal.
const aborters = new WeakMap();
function onAbort(signal, fn) {
  let fns = aborters.get(signal);
  if (!fns) {
    fns = new Set();
    aborters.set(signal, fns);
    signal.addEventListener('abort', () => {
      for (const f of fns) f();
      fns.clear();
    }, { once: true });
  }
  fns.add(fn);
  return () => fns.delete(fn);
}

/** An error answer of the agent: .code is its stable code (docs/api.md). */
class CoordError extends Error {
  constructor(code, message, status) {
    super(`${code}: ${message}`);
    this.name = 'CoordError';
    Object.assign(this, { code, status });
  }
}

/** Not acquired: code "busy" (tryOnce) or "timeout". */
class NotAcquired extends CoordError {
  constructor(code, message, status) {
    super(code, message, status);
    this.name = 'NotAcquired';
  }
}

/** The hold was lost (or released): .reason says why. */
class LostError extends Error {
  constructor(reason) {
    super(`hold lost: ${reason}`);
    this.name = 'LostError';
    this.reason = reason;
  }
}

class Client {
  /**
   * url: the agent's; token: its --api-token-file token, if it has one;
   * tokenFile: a file holding it instead, read at each request (a rotated
   * Kubernetes Secret is followed, as the agent follows it);
   * connectTimeout (s): how long connecting, and a read request, may go
   * without an answer; a hold waits no longer than its timeout and
   * connectTimeout more for the agent's (an agent whose host is gone
   * answers nothing, not even a refusal).
   */
  constructor(url = 'http://127.0.0.1:4050', { token, tokenFile, connectTimeout = 10 } = {}) {
    if (token !== undefined && tokenFile !== undefined) throw new TypeError('token and tokenFile: give one');
    this.url = new URL(url);
    this.token = token;
    this.tokenFile = tokenFile;
    this.connectTimeout = connectTimeout;
    this.currentToken(); // a missing or empty file is an error now, not at the first request
  }

  /** The token to send: token, or tokenFile's content as it is now. */
  currentToken() {
    if (this.tokenFile === undefined) return this.token;
    const tok = fs.readFileSync(this.tokenFile, 'utf8').trim();
    if (!tok) throw new Error(`tokenFile ${this.tokenFile}: the file is empty`);
    return tok;
  }

  headers(body) {
    const h = { Accept: 'application/json, application/x-ndjson' };
    if (body) h['Content-Type'] = 'application/json';
    const tok = this.currentToken();
    if (tok) h.Authorization = `Bearer ${tok}`;
    return h;
  }

  /** The response of one request; signal, until the response comes, destroys the request. */
  request(method, path, body, signal) {
    const mod = this.url.protocol === 'https:' ? https : http;
    const data = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = mod.request(new URL(path, this.url), { method, headers: this.headers(data !== undefined) }, resolve);
      // An agent that refuses, resets or cannot be resolved is a CoordError
      // 'unavailable' like one that does not answer (the cause kept).
      req.on('error', (e) => reject(e instanceof CoordError || (signal && e === signal.reason) ? e
        : Object.assign(new CoordError('unavailable', `cannot reach the agent at ${this.url.origin}: ${e.message}`), { cause: e })));
      // Silence this long ends the request (a hold turns it off once answered).
      req.setTimeout(this.connectTimeout * 1000, () =>
        req.destroy(new CoordError('unavailable', `no answer from the agent at ${this.url.origin} within ${this.connectTimeout} s: its host or the network to it is gone`)));
      if (signal) {
        const off = onAbort(signal, () => req.destroy(signal.reason));
        req.once('response', off);
        req.once('close', off);
      }
      req.end(data);
    });
  }

  /**
   * An exclusive (shared: true, a shared) lock. Options: timeout (s),
   * tryOnce, prefix, signal (an AbortSignal: aborting it while the hold
   * waits gives up, rejecting with signal.reason; it has no effect once
   * the hold is granted).
   */
  lock(name, { shared = false, ...opts } = {}) {
    return this.hold('/v1/lock', { name, mode: shared ? 'shared' : 'exclusive' }, opts);
  }

  /** A slot of the semaphore name with limit slots (.slot, .scope). */
  semaphore(name, limit, opts = {}) {
    return this.hold('/v1/semaphore', { name, limit }, opts);
  }

  /** Leadership of the election name, proclaiming id, while held. */
  campaign(name, id, opts = {}) {
    return this.hold('/v1/election/campaign', { name, id }, opts);
  }

  async hold(path, body, { timeout, tryOnce, prefix, signal } = {}) {
    if (timeout !== undefined && tryOnce) throw new TypeError('timeout and tryOnce exclude each other');
    if (timeout !== undefined) body.timeout = timeout;
    if (tryOnce) body.try = true;
    if (prefix) body.prefix = prefix;
    signal?.throwIfAborted();
    const res = await this.request('POST', path, body, signal);
    if (res.statusCode !== 200) throw await errorOf(res);
    const held = new Held(res);
    // Waiting takes as long as the agent lets it; an agent whose host is
    // gone answers nothing, ever: with a timeout (or tryOnce) the wait ends
    // that and connectTimeout later, and without one once TCP keepalive
    // finds the host gone (a first probe after 1 s of silence, then
    // libuv's: 10 probes 1 s apart in Node 20, about 11 s in all).
    res.socket?.setTimeout(0);
    res.socket?.setKeepAlive(true, 1000);
    const wait = timeout ?? (tryOnce ? 0 : undefined);
    const waitTimer = wait === undefined ? undefined : setTimeout(() =>
      held.abandon(`no answer from the agent within ${wait + this.connectTimeout} s (the timeout, and connectTimeout ${this.connectTimeout} s more): its host or the network to it is gone`),
    (wait + this.connectTimeout) * 1000);
    // Giving up closes the request: the agent removes the waiting key at once.
    const off = signal ? onAbort(signal, () => res.destroy()) : () => {};
    if (signal?.aborted) res.destroy();
    let ev;
    try {
      ev = await held.first();
    } catch (e) {
      throw signal?.aborted ? signal.reason : e;
    } finally {
      off();
      clearTimeout(waitTimer);
    }
    if (signal?.aborted) {
      // Aborted between the grant and this line: the stream is closed, so
      // the agent releases the hold; give up as if it came a moment later.
      await held.release();
      throw signal.reason;
    }
    if (ev.event === 'error') {
      res.destroy();
      const Cls = ev.code === 'busy' || ev.code === 'timeout' ? NotAcquired : CoordError;
      throw new Cls(ev.code, ev.message);
    }
    return held;
  }

  /** GET a read endpoint (/v1/lock/status, /v1/election/leader, ...). */
  async get(path, query = {}) {
    const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined));
    const res = await this.request('GET', `${path}?${q}`);
    if (res.statusCode !== 200) throw await errorOf(res);
    return JSON.parse(await text(res));
  }

  lockStatus(name, prefix) {
    return this.get('/v1/lock/status', { name, prefix });
  }

  /** { leader: id or null, token } */
  async leader(name, prefix) {
    const d = await this.get('/v1/election/leader', { name, prefix });
    return { leader: d.leader, token: d.token ?? 0 };
  }
}

async function text(res) {
  let s = '';
  res.setEncoding('utf8');
  for await (const chunk of res) s += chunk;
  return s;
}

// The CoordError of a non-200 answer: the agent's code and message, or
// http_STATUS with the body's start when something else answered (a
// proxy's HTML page).
async function errorOf(res) {
  const body = await text(res);
  let e;
  try {
    e = JSON.parse(body).error;
  } catch {}
  if (!e) return new CoordError(`http_${res.statusCode}`, body.slice(0, 200), res.statusCode);
  return new CoordError(e.code ?? `http_${res.statusCode}`, e.message ?? '', res.statusCode);
}

/**
 * One hold: token, scope, key, lease, slot (semaphores), leaseDeadline (a
 * Date) and lost. Emits 'lost' (reason) once, unless released first.
 */
class Held extends EventEmitter {
  constructor(res) {
    super();
    this.res = res;
    this.lost = false;
    this.released = false;
    this.reason = undefined;
    this.expires = undefined; // performance.now() at the lease deadline last told
    this.buf = '';
    this.waiters = [];
    res.setEncoding('utf8');
    res.on('data', (chunk) => this.data(chunk));
    res.on('close', () => this.lose('the stream ended (agent gone or connection lost)'));
    res.on('error', () => {});
  }

  data(chunk) {
    this.buf += chunk;
    let i;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      if (line) this.event(JSON.parse(line));
    }
  }

  event(ev) {
    if (ev.event === 'acquired' || ev.event === 'error') {
      if (ev.event === 'acquired') {
        Object.assign(this, { token: ev.token, scope: ev.scope, key: ev.key, lease: ev.lease, slot: ev.slot });
        this.deadline(ev);
      }
      for (const w of this.waiters.splice(0)) w.resolve(ev);
    } else if (ev.event === 'held') {
      this.deadline(ev);
    } else if (ev.event === 'lost') {
      this.lose(ev.reason ?? 'lost');
    } else if (ev.event === 'released') {
      this.lose('released'); // the agent deleted the key
    }
  }

  // deadline notes the lease deadline an event tells, and arms the loss at
  // it: an agent gone silent (a partition, a frozen host: no FIN reaches
  // us) ends the hold then, as check() would, 'lost' included. The time
  // left (lease_remaining_s) is counted down on this machine's clock:
  // lease_deadline is the agent's wall clock, which ours may be off by any
  // amount (used only from an agent that does not send the time left).
  deadline(ev) {
    let left;
    if (typeof ev.lease_remaining_s === 'number') left = ev.lease_remaining_s * 1000;
    else if (ev.lease_deadline) left = Date.parse(ev.lease_deadline) - Date.now();
    else return;
    this.leaseDeadline = new Date(Date.now() + left);
    this.expires = performance.now() + left;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.abandon(NO_NEWS), Math.max(0, left));
    this.timer.unref?.();
  }

  // abandon ends the hold for reason and closes its stream (the agent, if
  // it is still there, releases the key).
  abandon(reason) {
    this.lose(reason);
    this.res.destroy();
  }

  first() {
    return new Promise((resolve, reject) => {
      if (this.lost) return reject(new CoordError('unavailable', 'the stream ended before the hold was granted'));
      this.waiters.push({ resolve, reject });
    });
  }

  lose(reason) {
    if (this.lost) return;
    clearTimeout(this.timer);
    this.lost = true;
    this.reason = reason;
    for (const w of this.waiters.splice(0)) w.reject(new CoordError('unavailable', reason));
    if (!this.released) this.emit('lost', reason);
  }

  /** Throw LostError if lost, or if the lease deadline passed without news. */
  check() {
    if (!this.lost && this.expires !== undefined && performance.now() >= this.expires) {
      this.abandon(NO_NEWS);
    }
    if (this.lost) throw new LostError(this.reason);
  }

  /**
   * Release: end the request; the agent deletes the key at once and says so
   * on the stream, which this waits for (up to waitMs).
   */
  async release(waitMs = 10000) {
    this.released = true;
    if (!this.res.destroyed) {
      const closed = new Promise((resolve) => this.res.once('close', resolve));
      const timer = setTimeout(() => this.res.destroy(), waitMs);
      this.res.socket?.end(); // a half close: the answer can still come
      await closed;
      clearTimeout(timer);
    }
    this.lose('released');
  }

  async [asyncDispose]() {
    await this.release();
  }
}

module.exports = { Client, Held, CoordError, NotAcquired, LostError };
