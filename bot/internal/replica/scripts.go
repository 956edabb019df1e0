package replica

import "github.com/redis/go-redis/v9"

// The queue's state changes are Lua scripts, so that each is atomic: a
// question is deduplicated and queued, started, finished or handed back
// in one step, with nothing left half done if the replica or the
// connection dies in between. Each is safe to run again after a lost
// reply (go-redis retries on network errors).
//
// The keys: the stream of questions (its consumer group holds what each
// replica took and has not finished: the pending entries list); per
// thread, the order list (the thread's unfinished entry ids, in queue
// order) and the lease (the replica answering the thread); the started
// hash (per entry: "attempts token replica previous").

// enqueueScript drops a question seen before, refuses one past the queue
// bound, and otherwise appends it to the stream and its thread's order
// list.
//
// KEYS: stream, order list, answer hash, dedupe keys...
// ARGV: dedupe ttl (s), max queued, thread, question id, payload,
// order ttl (ms), answer ttl (s)
// Returns {"dup"}, {"full"} or {"ok", id}.
var enqueueScript = redis.NewScript(`
local dup = false
local set = {}
for i = 4, #KEYS do
  if redis.call('SET', KEYS[i], '1', 'NX', 'EX', ARGV[1]) then
    set[#set + 1] = KEYS[i]
  else
    dup = true
  end
end
if dup then return {'dup'} end
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[2]) then
  for _, k in ipairs(set) do redis.call('DEL', k) end
  return {'full'}
end
local id = redis.call('XADD', KEYS[1], '*', 't', ARGV[3], 'q', ARGV[4], 'p', ARGV[5])
redis.call('RPUSH', KEYS[2], id)
redis.call('PEXPIRE', KEYS[2], ARGV[6])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[3], 'thread', ARGV[3], 'state', 'queued', 'replica', '')
  redis.call('EXPIRE', KEYS[3], ARGV[7])
end
return {'ok', id}
`)

// startScript starts an entry if it is its thread's turn: it is the
// first unfinished entry of the thread (entries deleted from the stream
// are skipped) and no other replica holds the thread's lease. It takes
// the lease and counts the attempt. A retry with the same token does not
// count again.
//
// KEYS: stream, order list, lease, started hash, answer hash, stop key
// ARGV: group, entry id, replica, token, lease ttl (ms), has question id
// ("1" or ""), answer ttl (s), thread
// Returns {"wait", head}, {"busy", holder}, {"lost", owner} or
// {"go", attempt, previous replica, stopped by}.
var startScript = redis.NewScript(`
local id = ARGV[2]
local p = redis.pcall('XPENDING', KEYS[1], ARGV[1], id, id, 1)
if type(p) == 'table' and not p.err and #p > 0 and p[1][2] ~= ARGV[3] then
  return {'lost', p[1][2]}
end
local head = redis.call('LINDEX', KEYS[2], 0)
while head and head ~= id do
  if #redis.call('XRANGE', KEYS[1], head, head) > 0 then break end
  redis.call('LPOP', KEYS[2])
  head = redis.call('LINDEX', KEYS[2], 0)
end
if head and head ~= id then return {'wait', head} end
local holder = redis.call('GET', KEYS[3])
if holder and holder ~= ARGV[3] then return {'busy', holder} end
redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[5])
local n, prev = 1, ''
local rec = redis.call('HGET', KEYS[4], id)
if rec then
  local a, tok, r, pr = string.match(rec, '^(%d+) (%S+) (%S*) ?(%S*)$')
  if tok == ARGV[4] then
    n, prev = tonumber(a), pr
  else
    n, prev = tonumber(a) + 1, r
  end
end
redis.call('HSET', KEYS[4], id, n .. ' ' .. ARGV[4] .. ' ' .. ARGV[3] .. ' ' .. prev)
local stopped = ''
if ARGV[6] == '1' then
  redis.call('HSET', KEYS[5], 'state', 'running', 'replica', ARGV[3], 'thread', ARGV[8])
  redis.call('EXPIRE', KEYS[5], ARGV[7])
  stopped = redis.call('GET', KEYS[6]) or ''
end
return {'go', n, prev, stopped}
`)

// doneScript finishes an entry: acks and deletes it, takes it off its
// thread's order list, releases the lease, and announces the thread's
// next turn. An entry another replica has taken over is left alone.
//
// KEYS: stream, order list, lease, started hash, answer hash
// ARGV: group, entry id, replica, thread, turns channel, has question id,
// answer ttl (s)
// Returns "ok" or "lost".
var doneScript = redis.NewScript(`
local id = ARGV[2]
local p = redis.pcall('XPENDING', KEYS[1], ARGV[1], id, id, 1)
local grouped = type(p) == 'table' and not p.err
if grouped and #p > 0 and p[1][2] ~= ARGV[3] then return 'lost' end
if grouped then redis.call('XACK', KEYS[1], ARGV[1], id) end
redis.call('XDEL', KEYS[1], id)
redis.call('LREM', KEYS[2], 1, id)
if redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
redis.call('HDEL', KEYS[4], id)
if ARGV[6] == '1' then
  redis.call('HSET', KEYS[5], 'state', 'done', 'replica', ARGV[3])
  redis.call('EXPIRE', KEYS[5], ARGV[7])
end
redis.call('PUBLISH', ARGV[5], ARGV[4])
return 'ok'
`)

// handBackScript returns a held entry to the queue for another replica:
// it appends a copy to the stream, puts the copy's id in the original's
// place on the thread's order list (so the thread's order holds), moves
// the attempt count, acks and deletes the original, and releases the
// lease.
//
// KEYS: stream, order list, lease, started hash, answer hash
// ARGV: group, entry id, replica, thread, turns channel, has question id,
// answer ttl (s)
// Returns the new id, or false if the entry is no longer this replica's.
var handBackScript = redis.NewScript(`
local id = ARGV[2]
local p = redis.pcall('XPENDING', KEYS[1], ARGV[1], id, id, 1)
if type(p) ~= 'table' or p.err or #p == 0 or p[1][2] ~= ARGV[3] then return false end
local e = redis.call('XRANGE', KEYS[1], id, id)
if #e == 0 then
  redis.call('XACK', KEYS[1], ARGV[1], id)
  return false
end
local nid = redis.call('XADD', KEYS[1], '*', unpack(e[1][2]))
local pos = redis.call('LPOS', KEYS[2], id)
if pos then redis.call('LSET', KEYS[2], pos, nid) end
redis.call('XACK', KEYS[1], ARGV[1], id)
redis.call('XDEL', KEYS[1], id)
local rec = redis.call('HGET', KEYS[4], id)
if rec then
  redis.call('HSET', KEYS[4], nid, rec)
  redis.call('HDEL', KEYS[4], id)
end
if redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
if ARGV[6] == '1' then
  redis.call('HSET', KEYS[5], 'state', 'queued', 'replica', '')
  redis.call('EXPIRE', KEYS[5], ARGV[7])
end
redis.call('PUBLISH', ARGV[5], ARGV[4])
return nid
`)

// heartbeatScript keeps a replica's held entries fresh: it re-claims each
// one still pending for the replica (XCLAIM JUSTID resets the idle time
// and leaves the delivery count alone) and renews the leases of the
// threads it answers.
//
// KEYS: stream, then a lease and an answer hash per entry being answered
// ARGV: group, replica, lease ttl (ms), number answered, then the ids of
// the entries being answered, then the other held ids
// Returns per id: 0 fresh, 1 lost (another replica has the entry, or the
// thread, or finished the question), 2 gone (no longer pending and not
// known to be another's: Redis lost it).
var heartbeatScript = redis.NewScript(`
local out = {}
local nrun = tonumber(ARGV[4])
for i = 5, #ARGV do
  local id = ARGV[i]
  local j = i - 4
  local st = 0
  local p = redis.pcall('XPENDING', KEYS[1], ARGV[1], id, id, 1)
  if type(p) ~= 'table' or p.err or #p == 0 then
    st = 2
  elseif p[1][2] ~= ARGV[2] then
    st = 1
  else
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'JUSTID')
  end
  if j <= nrun and st == 2 then
    local r = redis.call('HGET', KEYS[2 * j + 1], 'replica')
    if r and r ~= '' and r ~= ARGV[2] then st = 1 end
  end
  if j <= nrun and st ~= 1 then
    local lk = KEYS[2 * j]
    local h = redis.call('GET', lk)
    if not h then
      redis.call('SET', lk, ARGV[2], 'PX', ARGV[3])
    elseif h == ARGV[2] then
      redis.call('PEXPIRE', lk, ARGV[3])
    else
      st = 1
    end
  end
  out[#out + 1] = st
end
return out
`)

// releaseScript deletes a lease if this replica holds it.
//
// KEYS: lease; ARGV: replica
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// pruneScript removes the group's consumers, other than this replica's,
// that have nothing pending and have been silent for a while: replicas
// that stopped. A consumer with pending entries is kept, since deleting
// it would drop them.
//
// KEYS: stream; ARGV: group, min idle (ms), replica, delete self ("1")
// Returns how many were removed.
var pruneScript = redis.NewScript(`
local cs = redis.pcall('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
if type(cs) ~= 'table' or cs.err then return 0 end
local n = 0
for _, c in ipairs(cs) do
  local name, pending, idle
  for i = 1, #c, 2 do
    if c[i] == 'name' then name = c[i + 1]
    elseif c[i] == 'pending' then pending = c[i + 1]
    elseif c[i] == 'idle' then idle = c[i + 1] end
  end
  local self = name == ARGV[3]
  if pending == 0 and ((self and ARGV[4] == '1') or (not self and idle >= tonumber(ARGV[2]))) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], name)
    n = n + 1
  end
end
return n
`)
