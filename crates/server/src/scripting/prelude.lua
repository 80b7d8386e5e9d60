-- Skerry's Lua prelude: builds the world a script sees as Redis builds it (script_lua.c).
-- Runs once per interpreter with the Rust functions as arguments; returns the runner and
-- the protected environment scripts are compiled in.
local call, pcall_cmd, place, error_of, sha1hex, setresp, log, set_repl, acl_check, random,
    randomseed, killed = ...

local type, rawget, rawset, error, select, tostring, setmetatable, getmetatable, xpcall, pcall =
    type, rawget, rawset, error, select, tostring, setmetatable, getmetatable, xpcall, pcall
local setfenv, loadstring, load, floor = setfenv, loadstring, load, math.floor
local G = _G

local redis = G.redis
redis.call = call
redis.pcall = pcall_cmd
redis.sha1hex = sha1hex
redis.setresp = setresp
redis.log = log
redis.set_repl = set_repl
redis.acl_check_cmd = acl_check
redis.error_reply = function(...)
    if select('#', ...) ~= 1 or type((...)) ~= 'string' then
        return { err = 'ERR wrong number or type of arguments' }
    end
    local e = ...
    if e:sub(1, 1) == '-' then
        e = e:sub(2)
    end
    local space = e:find(' ', 1, true)
    if not space then
        e = 'ERR ' .. e
    end
    e = e:gsub('[\r\n]+$', '')
    return { err = e }
end
redis.status_reply = function(...)
    if select('#', ...) ~= 1 or type((...)) ~= 'string' then
        return { err = 'ERR wrong number or type of arguments' }
    end
    return { ok = (...) }
end
redis.replicate_commands = function()
    return true
end
redis.breakpoint = function()
    return false
end
redis.debug = function() end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3

-- redis.call inside pcall: Redis 7's pcall gives the error text, not the error table.
local function text_of_error(ok, ...)
    if not ok then
        local e = ...
        if killed() then
            -- SCRIPT KILL's error is not caught: the script stops.
            error(e, 0)
        end
        if type(e) == 'userdata' then
            local m = error_of(e, false)
            if m then
                return false, m
            end
        elseif type(e) == 'table' then
            local m = rawget(e, 'err')
            if type(m) == 'string' then
                return false, m
            end
        end
    end
    return ok, ...
end
G.pcall = function(...)
    return text_of_error(pcall(...))
end

-- math.random and math.randomseed with Redis's own generator.
G.math.random = function(...)
    local n = select('#', ...)
    local r = random()
    if n == 0 then
        return r
    elseif n == 1 then
        local u = floor((...))
        if u < 1 then
            error("bad argument #1 to 'random' (interval is empty)", 2)
        end
        return floor(r * u) + 1
    elseif n == 2 then
        local l, u = ...
        l, u = floor(l), floor(u)
        if l > u then
            error("bad argument #2 to 'random' (interval is empty)", 2)
        end
        return floor(r * (u - l + 1)) + l
    end
    error('wrong number of arguments', 2)
end
G.math.randomseed = function(seed)
    randomseed(seed)
end

-- Redis's error handler: the error as a table with the script's source and line.
function G.__redis__err__handler(err)
    local source, line = place()
    if type(err) == 'userdata' then
        local m, is_table = error_of(err, true)
        if is_table then
            err = { err = m }
        elseif m then
            err = m
        end
    end
    if type(err) ~= 'table' then
        err = { err = 'ERR ' .. tostring(err) }
    end
    if source then
        err.source = source
        err.line = line
    end
    return err
end
local handler = G.__redis__err__handler

-- Redis 8.0 loads a sandboxed os library: only os.clock.
G.os = { clock = G.os.clock }

-- The globals scripts may see (Redis's allow lists); the rest go.
local allowed = {
    os = true, string = true, cjson = true, bit = true, cmsgpack = true, math = true, table = true,
    struct = true, redis = true, __redis__err__handler = true, xpcall = true, tostring = true,
    setmetatable = true, next = true, assert = true, tonumber = true, rawequal = true,
    collectgarbage = true, getmetatable = true, rawset = true, pcall = true, coroutine = true,
    type = true, _G = true, select = true, unpack = true, gcinfo = true, pairs = true,
    rawget = true, loadstring = true, ipairs = true, _VERSION = true, load = true,
    error = true, KEYS = true, ARGV = true,
}
for k in pairs(G) do
    if not allowed[k] then
        G[k] = nil
    end
end

-- Read-only tables: an empty proxy whose reads fall through to the real table and whose
-- writes fail, with Redis's text.
local protected = setmetatable({}, { __mode = 'k' })
local function readonly_error()
    error('Attempt to modify a readonly table', 2)
end
-- What getmetatable shows of a protected table: an empty read-only table.
local shown_meta = setmetatable({}, { __newindex = readonly_error, __metatable = false })
protected[shown_meta] = true
local function protect(t, on_missing)
    if on_missing then
        setmetatable(t, { __index = on_missing })
    end
    local proxy = setmetatable({}, {
        __index = t,
        __newindex = readonly_error,
        __metatable = shown_meta,
    })
    protected[proxy] = true
    return proxy
end
G.setmetatable = function(t, m)
    if protected[t] then
        error('Attempt to modify a readonly table', 2)
    end
    return setmetatable(t, m)
end
-- Lua 5.1.5's unpack overflows its result count for extreme indexes (and then writes past
-- its stack): refused before, with the error Redis's patched Lua gives.
local real_unpack = unpack
G.unpack = function(t, ...)
    local a, b = ...
    if a == nil then
        a = 1
    end
    if b == nil and type(t) == 'table' then
        b = #t
    end
    if type(a) == 'number' and type(b) == 'number' and a <= b and b - a >= 2147483646 then
        error('too many results to unpack', 2)
    end
    -- The same arguments: the C function's stack room counts them.
    return real_unpack(t, ...)
end
G.rawset = function(t, k, v)
    if protected[t] then
        error('Attempt to modify a readonly table', 0)
    end
    return rawset(t, k, v)
end
for _, name in ipairs({ 'string', 'cjson', 'bit', 'cmsgpack', 'math', 'table', 'struct', 'redis', 'coroutine', 'os' }) do
    if type(G[name]) == 'table' then
        G[name] = protect(G[name])
    end
end
-- The string metatable: its visible face is read-only too.
local smeta = getmetatable('')
if smeta then
    smeta.__metatable = protect(smeta)
end

-- The environment of scripts: reads fall through to the globals, a missing global is an
-- error, and writes fail.
local env = protect(G, function(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end)
rawset(G, '_G', env)

-- Code compiled by a script runs in the same environment.
-- Binary chunks (string.dump) are refused: crafted bytecode can break the interpreter.
rawset(G, 'loadstring', function(s, name)
    if type(s) == 'string' and s:byte(1) == 27 then
        return nil, 'binary chunks are not allowed'
    end
    local f, e = loadstring(s, name)
    if f then
        setfenv(f, env)
    end
    return f, e
end)
rawset(G, 'load', function(fn, name)
    local first = true
    local reader = fn
    if type(fn) == 'function' then
        reader = function()
            local piece = fn()
            if first and type(piece) == 'string' and piece ~= '' then
                first = false
                if piece:byte(1) == 27 then
                    return nil
                end
            end
            return piece
        end
    end
    local f, e = load(reader, name)
    if f then
        setfenv(f, env)
    end
    return f, e
end)

-- Functions (FUNCTION LOAD): a library's code runs with `redis` limited to what loading
-- may use, and its functions register into the load context; at run time the same
-- functions see the whole `redis` table.
local load_ctx = nil
local function load_error(msg)
    error({ err = 'ERR ' .. msg }, 0)
end
local function register_function(...)
    if not load_ctx then
        load_error('redis.register_function can only be called on FUNCTION LOAD command')
    end
    local n = select('#', ...)
    local name, callback, flags, description
    if n == 1 then
        local t = ...
        if type(t) ~= 'table' then
            load_error('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
        end
        for k, v in pairs(t) do
            if k == 'function_name' then
                if type(v) ~= 'string' then
                    load_error('function_name argument given to redis.register_function must be a string')
                end
                name = v
            elseif k == 'description' then
                if type(v) ~= 'string' then
                    load_error('description argument given to redis.register_function must be a string')
                end
                description = v
            elseif k == 'callback' then
                if type(v) ~= 'function' then
                    load_error('callback argument given to redis.register_function must be a function')
                end
                callback = v
            elseif k == 'flags' then
                if type(v) ~= 'table' then
                    load_error('flags argument to redis.register_function must be a table representing function flags')
                end
                flags = {}
                for _, f in ipairs(v) do
                    if f ~= 'no-writes' and f ~= 'allow-oom' and f ~= 'allow-stale'
                        and f ~= 'no-cluster' and f ~= 'allow-cross-slot-keys' then
                        load_error('unknown flag given')
                    end
                    flags[#flags + 1] = f
                end
            else
                load_error('unknown argument given to redis.register_function')
            end
        end
        if not name then
            load_error('redis.register_function must get a function name argument')
        end
        if not callback then
            load_error('redis.register_function must get a callback argument')
        end
    elseif n == 2 then
        name, callback = ...
        if type(name) ~= 'string' then
            load_error('first argument to redis.register_function must be a string')
        end
        if type(callback) ~= 'function' then
            load_error('second argument to redis.register_function must be a function')
        end
    else
        load_error('wrong number of arguments to redis.register_function')
    end
    if not name:find('^[%w_]+$') then
        load_error('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
    end
    if load_ctx[name] then
        load_error('Function already exists in the library')
    end
    load_ctx[name] = { callback = callback, flags = flags or {}, description = description }
    load_ctx[#load_ctx + 1] = name
end
local function missing_global(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
-- While a library loads, its globals are `redis` alone, with only what loading may use.
local load_redis = protect({
    register_function = register_function,
    log = log,
    LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
    REDIS_VERSION = redis.REDIS_VERSION,
    REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
}, missing_global)
local lib_env = setmetatable({}, {
    __index = function(_, k)
        if load_ctx then
            if k == 'redis' then
                return load_redis
            end
            error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
        end
        return env[k]
    end,
    __newindex = readonly_error,
    __metatable = shown_meta,
})
protected[lib_env] = true

-- Runs a library's compiled code: its functions as { names..., [name] = {callback, flags,
-- description} }, or false and the error.
local function load_library(chunk)
    setfenv(chunk, lib_env)
    load_ctx = {}
    local ok, e = xpcall(chunk, handler)
    local ctx = load_ctx
    load_ctx = nil
    if not ok then
        return false, e
    end
    return ctx
end

local function run(f)
    return xpcall(f, handler)
end
local function run_function(f, keys, args)
    return xpcall(function()
        return f(keys, args)
    end, handler)
end
return run, env, run_function, load_library
