#!/usr/bin/env python3
"""Redis CPU of the start's insert-if-absent, three ways (2026-11-24 experiment, see docs/benchmarks.md).

Against an empty Redis on port 6390 (it is FLUSHALLed): a 300,000-field instance hash, then rounds of 200 writes of
512 new keys each, alternated: the START_ABSENT script as shipped (its Lua taken from Lua.java), the same insert in
native commands under WATCH (MULTI, one HSETNX per key, HLEN, the session SET and SADD, GET of the taint counter,
EXEC), pipelined HSETNX without MULTI, and one blind HSET (the floor). The inserted fields are deleted after each
round, outside the measurement, so the hash stays at 300,000 fields. Redis CPU is read from INFO cpu.
Run from the repository root: python3 docs/data/start-native-experiment-2026-11-24.py
"""
import re, sys, textwrap
src = open('metadata-store-redis/src/main/java/dev/kvpool/meta/store/redis/Lua.java').read()
common = re.search(r'COMMON = """\s*\n(.*?)""";', src, re.S).group(1)
start = re.search(r'"start-absent", COMMON \+ """\s*\n(.*?)"""\);', src, re.S).group(1)
LUA = textwrap.dedent(common) + textwrap.dedent(start)
import socket, os, time, random, struct
class R:
    def __init__(s, port=6390):
        s.s = socket.create_connection(('127.0.0.1', port)); s.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.f = s.s.makefile('rb', buffering=1 << 20)
    @staticmethod
    def enc(args):
        out = [b'*%d\r\n' % len(args)]
        for a in args:
            if isinstance(a, int): a = str(a).encode()
            elif isinstance(a, str): a = a.encode()
            out.append(b'$%d\r\n' % len(a)); out.append(a); out.append(b'\r\n')
        return b''.join(out)
    def read(s):
        l = s.f.readline(); t = l[:1]; r = l[1:-2]
        if t == b'+': return r.decode()
        if t == b'-': return Exception(r.decode())
        if t == b':': return int(r)
        if t == b'$':
            n = int(r)
            if n < 0: return None
            d = s.f.read(n + 2); return d[:-2]
        if t == b'*':
            n = int(r)
            if n < 0: return None
            return [s.read() for _ in range(n)]
        raise Exception('bad ' + repr(l))
    def pipe(s, cmds):
        s.s.sendall(b''.join(R.enc(c) for c in cmds)); return [s.read() for _ in cmds]
    def call(s, *a): return s.pipe([a])[0]
def cpu(r):
    info = r.call('INFO', 'cpu').decode()
    d = dict(l.split(':') for l in info.split('\r\n') if ':' in l)
    return float(d['used_cpu_user']) + float(d['used_cpu_sys'])
import os, random, time
r = R()
r.call('FLUSHALL')
lua = LUA
sha = r.call('SCRIPT', 'LOAD', lua).decode()
r.call('SET', '{i}live', 'inc1')
# prefill 300k fields in batches
for b in range(300):
    args = ['HSET', '{i}blk']
    for j in range(1000): args += [os.urandom(8), os.urandom(24)]
    r.call(*args)
N = 512
def fresh():
    return [(os.urandom(8), os.urandom(24)) for _ in range(N)]
sid = [0]
def script(kv):
    sid[0] += 1; s = 'sess%d' % sid[0]
    blob = os.urandom(16 + 16 * N)
    args = ['EVALSHA', sha, 5, '{i}live', '{i}blk', '{i}sset', '{i}s:' + s, '{i}taint', 'inc1', s, int(time.time()*1000) + 60000, 1000000000, blob]
    for f, v in kv: args += [f, v]
    res = r.call(*args)
    assert res[0] == 1 and res[1] == b'1' * N, res
def native(kv):
    sid[0] += 1; s = 'sess%d' % sid[0]
    blob = os.urandom(16 + 16 * N)
    b1 = r.pipe([['UNWATCH'], ['WATCH', '{i}live', '{i}s:' + s], ['GET', '{i}live'], ['HLEN', '{i}blk']])
    assert b1[2] == b'inc1'
    cmds = [['MULTI']] + [['HSETNX', '{i}blk', f, v] for f, v in kv] + [['HLEN', '{i}blk'], ['SET', '{i}s:' + s, blob, 'PXAT', int(time.time()*1000) + 60000], ['SADD', '{i}sset', s], ['GET', '{i}taint'], ['EXEC']]
    res = r.pipe(cmds)
    ex = res[-1]
    assert ex is not None and all(x == 1 for x in ex[:N]), ex[:3]
def nomulti(kv):
    sid[0] += 1; s = 'sess%d' % sid[0]
    blob = os.urandom(16 + 16 * N)
    cmds = [['SET', '{i}s:' + s, blob, 'PXAT', int(time.time()*1000) + 60000]] + [['HSETNX', '{i}blk', f, v] for f, v in kv] + [['SADD', '{i}sset', s]]
    res = r.pipe(cmds)
    assert all(x == 1 for x in res[1:N+1])
def floor(kv):
    args = ['HSET', '{i}blk']
    for f, v in kv: args += [f, v]
    assert r.call(*args) == N
variants = {'script': script, 'native': native, 'hset': floor, 'nomulti': nomulti}
tot = {k: [0.0, 0] for k in variants}
for rnd in range(10):
    for name, fn in (variants.items() if rnd % 2 == 0 else reversed(list(variants.items()))):
        batches = [fresh() for _ in range(200)]
        c0 = cpu(r); t0 = time.time()
        for kv in batches: fn(kv)
        c1 = cpu(r); t1 = time.time()
        tot[name][0] += c1 - c0; tot[name][1] += 200 * N
        for kv in batches: r.call('HDEL', '{i}blk', *[f for f, v in kv])
        r.call('DEL', '{i}sset')
        for k in r.call('KEYS', '{i}s:*') or []: r.call('DEL', k)
        print('%d %-7s redis cpu %.2f us/block  wall %.2f us/block' % (rnd, name, (c1 - c0) / (200 * N) * 1e6, (t1 - t0) / (200 * N) * 1e6))
for k, (c, n) in tot.items(): print('TOTAL %-7s %.2f us/block' % (k, c / n * 1e6))
print(r.call('HLEN', '{i}blk'))
