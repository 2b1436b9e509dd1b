/*
 * The sandbox prelude: evaluated in every fresh context before the script, it returns the one function the worker
 * uses to drive the run (`control(op, ...)`). Nothing it defines is reachable from the script except `console`,
 * `ctx` and the built-ins it replaces.
 *
 * Host functions (ctx.readFile, ctx.writeFile, ctx.fetch) return promises; their calls wait in an outbox that the
 * worker empties between job runs and sends to the host, which checks and performs them and sends the outcome back
 * (`settle`). ctx.log and ctx.addCost are one-way: their lines go to the host in order with the next batch.
 *
 * Every intrinsic used after the script starts is captured here first, so a script that replaces Array.prototype.push
 * or JSON.stringify changes its own view only.
 */
(function (configText) {
  var G = globalThis;
  var apply = Reflect.apply;
  var construct = Reflect.construct;
  var defineProperty = Object.defineProperty;
  var freeze = Object.freeze;
  var getPrototypeOf = Object.getPrototypeOf;
  var getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  var objectKeys = Object.keys;
  var isArray = Array.isArray;
  var stringify = JSON.stringify;
  var parse = JSON.parse;
  var StringCtor = String;
  var numberIsFinite = Number.isFinite;
  var PromiseCtor = Promise;
  var promiseThen = Promise.prototype.then;
  var promiseResolve = Promise.resolve;
  var MapCtor = Map;
  var mapGet = Map.prototype.get;
  var mapSet = Map.prototype.set;
  var mapDelete = Map.prototype.delete;
  var WeakSetCtor = WeakSet;
  var weakSetAdd = WeakSet.prototype.add;
  var weakSetHas = WeakSet.prototype.has;
  var ErrorCtor = Error;
  var TypeErrorCtor = TypeError;
  var RangeErrorCtor = RangeError;
  var internalErrorPrototype = InternalError.prototype;
  var errorToString = Error.prototype.toString;
  var stringSlice = String.prototype.slice;
  var stringRepeat = String.prototype.repeat;
  var stringPadStart = String.prototype.padStart;
  var stringPadEnd = String.prototype.padEnd;
  var regExpTest = RegExp.prototype.test;
  var mathFloor = Math.floor;
  var MathObject = Math;
  var RealDate = Date;
  var realDateNow = Date.now;
  var dateToString = Date.prototype.toString;
  var dynamicImport = function (name) { return import(name); };

  var config = parse(configText);
  var limits = config.limits;
  var internal = new WeakSetCtor();
  function mark(fn) {
    apply(weakSetAdd, internal, [fn]);
    return fn;
  }
  function push(list, value) {
    defineProperty(list, list.length, { value: value, writable: true, enumerable: true, configurable: true });
  }
  function cut(text, limit) {
    return text.length > limit ? apply(stringSlice, text, [0, limit]) : text;
  }

  // ------------------------------------------------------------------------------------------------ errors
  // The engine calls prepareStackTrace for every error it builds, its own out-of-memory error included (which
  // arrives as null when not even the error object could be made). That is how a script that catches an
  // out-of-memory error is still ended with a memory limit: the flag is read after every job run.
  var outOfMemory = false;
  function prepareStackTrace(error, frames) {
    if (error === null || error === undefined) {
      outOfMemory = true;
      return '';
    }
    try {
      if (getPrototypeOf(error) === internalErrorPrototype) {
        var d = getOwnPropertyDescriptor(error, 'message');
        if (d !== undefined && d.value === 'out of memory') outOfMemory = true;
      }
    } catch (e) {}
    var out = '';
    try {
      for (var i = 0; i < frames.length; i++) {
        var frame = frames[i];
        var fn;
        try { fn = frame.getFunction(); } catch (e) { fn = undefined; }
        if (fn !== undefined && apply(weakSetHas, internal, [fn])) continue;
        var name = frame.getFunctionName() || '<anonymous>';
        if (frame.isNative()) out += '    at ' + name + ' (native)\n';
        else out += '    at ' + name + ' (' + frame.getFileName() + ':' + frame.getLineNumber() + ':' + frame.getColumnNumber() + ')\n';
      }
    } catch (e) {}
    return out;
  }
  // Both are accessors over the engine's own slots: set them through the accessor, then replace the accessor with one
  // the script cannot use to change them.
  ErrorCtor.prepareStackTrace = mark(prepareStackTrace);
  ErrorCtor.stackTraceLimit = 10;
  var ignore = mark(function (value) {});
  defineProperty(ErrorCtor, 'prepareStackTrace', { get: mark(function () { return undefined; }), set: ignore, enumerable: false, configurable: false });
  defineProperty(ErrorCtor, 'stackTraceLimit', { get: mark(function () { return 10; }), set: ignore, enumerable: false, configurable: false });

  function show(value) {
    var type = typeof value;
    if (type === 'string') return value;
    if (value === null || type === 'undefined' || type === 'number' || type === 'boolean' || type === 'symbol') return StringCtor(value);
    if (type === 'bigint') return StringCtor(value) + 'n';
    if (type === 'function') return '[Function ' + (value.name ? StringCtor(value.name) : '(anonymous)') + ']';
    if (value instanceof ErrorCtor) return apply(errorToString, value, []);
    try {
      var text = stringify(value, function (k, v) { return typeof v === 'bigint' ? StringCtor(v) + 'n' : v; });
      if (text !== undefined) return text;
    } catch (e) {}
    try { return StringCtor(value); } catch (e) { return '[object]'; }
  }

  function describeError(error) {
    var out = { name: '', message: '', stack: '', isError: false };
    try {
      if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
        var stack = error.stack;
        out.isError = error instanceof ErrorCtor || typeof stack === 'string';
        out.name = out.isError ? StringCtor(error.name) : '';
        out.message = out.isError ? StringCtor(error.message) : show(error);
        out.stack = typeof stack === 'string' ? stack : '';
      } else {
        out.message = show(error);
      }
    } catch (e) {
      out.message = '(the error could not be read)';
    }
    out.messageLength = out.message.length;
    out.message = cut(out.message, limits.message);
    out.stack = cut(out.stack, 4096);
    return out;
  }

  // ------------------------------------------------------------------------------------------------ strings
  // The engine has its own cap (2^30 - 1 units); the functions that multiply a string's length refuse to pass
  // the sandbox's lower one before they allocate.
  function tooLong(what, length) {
    return new RangeErrorCtor(what + ': a string of ' + length + ' characters is longer than the limit of ' + limits.stringLength);
  }
  defineProperty(String.prototype, 'repeat', {
    value: mark(function repeat(count) {
      var text = StringCtor(this);
      var n = +count;
      if (n >= 1 && text.length * mathFloor(n) > limits.stringLength) throw tooLong('String.prototype.repeat', text.length * mathFloor(n));
      return apply(stringRepeat, text, [count]);
    }),
    writable: true, enumerable: false, configurable: true,
  });
  defineProperty(String.prototype, 'padStart', {
    value: mark(function padStart(length, fill) {
      if (+length > limits.stringLength) throw tooLong('String.prototype.padStart', +length);
      return apply(stringPadStart, this, [length, fill]);
    }),
    writable: true, enumerable: false, configurable: true,
  });
  defineProperty(String.prototype, 'padEnd', {
    value: mark(function padEnd(length, fill) {
      if (+length > limits.stringLength) throw tooLong('String.prototype.padEnd', +length);
      return apply(stringPadEnd, this, [length, fill]);
    }),
    writable: true, enumerable: false, configurable: true,
  });

  // ------------------------------------------------------------------------------------------------ time and chance
  if (config.clock !== null) {
    var base = config.clock.now;
    var fixed = config.clock.fixed;
    var started = realDateNow();
    var now = mark(fixed ? function now() { return base; } : function now() { return base + (realDateNow() - started); });
    var FakeDate = mark(function Date() {
      if (new.target === undefined) return apply(dateToString, construct(RealDate, [now()]), []);
      var args = [];
      for (var i = 0; i < arguments.length; i++) push(args, arguments[i]);
      if (args.length === 0) push(args, now());
      return construct(RealDate, args, new.target);
    });
    defineProperty(FakeDate, 'prototype', { value: RealDate.prototype, writable: false, enumerable: false, configurable: false });
    defineProperty(RealDate.prototype, 'constructor', { value: FakeDate, writable: true, enumerable: false, configurable: true });
    defineProperty(FakeDate, 'now', { value: now, writable: true, enumerable: false, configurable: true });
    defineProperty(FakeDate, 'parse', { value: RealDate.parse, writable: true, enumerable: false, configurable: true });
    defineProperty(FakeDate, 'UTC', { value: RealDate.UTC, writable: true, enumerable: false, configurable: true });
    defineProperty(G, 'Date', { value: FakeDate, writable: true, enumerable: false, configurable: true });
  }
  if (config.seed !== null) {
    // sfc32, seeded from the 53-bit seed; two outputs make one double in [0, 1) with 53 random bits.
    var sa = config.seed >>> 0;
    var sb = mathFloor(config.seed / 4294967296) >>> 0;
    var sc = 0x9e3779b9;
    var sd = 1;
    var next32 = mark(function () {
      var t = (((sa + sb) >>> 0) + sd) >>> 0;
      sd = (sd + 1) >>> 0;
      sa = sb ^ (sb >>> 9);
      sb = (sc + (sc << 3)) >>> 0;
      sc = (sc << 21) | (sc >>> 11);
      sc = (sc + t) >>> 0;
      return t;
    });
    for (var warm = 0; warm < 15; warm++) next32();
    defineProperty(MathObject, 'random', {
      value: mark(function random() {
        var high = next32() >>> 5;
        var low = next32() >>> 6;
        return (high * 67108864 + low) / 9007199254740992;
      }),
      writable: true, enumerable: false, configurable: true,
    });
  }
  // Not ECMAScript, and a clock the deterministic mode would have to fake too.
  delete G.performance;

  // ------------------------------------------------------------------------------------------------ console
  var headLimit = mathFloor(limits.output / 2);
  var tailLimit = limits.output - headLimit;
  var head = '';
  var tail = '';
  var total = 0;
  var headFull = false;
  function write(line) {
    line = line + '\n';
    total += line.length;
    if (!headFull) {
      var room = headLimit - head.length;
      if (line.length <= room) {
        head += line;
        return;
      }
      head += apply(stringSlice, line, [0, room]);
      headFull = true;
      line = apply(stringSlice, line, [room]);
    }
    if (tailLimit > 0) {
      tail = tail + line;
      if (tail.length > tailLimit) tail = apply(stringSlice, tail, [tail.length - tailLimit]);
    }
  }
  function join(args) {
    var text = '';
    for (var i = 0; i < args.length; i++) text += (i ? ' ' : '') + show(args[i]);
    return text;
  }
  var consoleObject = {};
  var levels = ['log', 'info', 'warn', 'error', 'debug', 'trace'];
  for (var li = 0; li < levels.length; li++) {
    defineProperty(consoleObject, levels[li], {
      value: mark(function () { write(join(arguments)); }),
      writable: true, enumerable: true, configurable: true,
    });
  }
  defineProperty(G, 'console', { value: consoleObject, writable: true, enumerable: false, configurable: true });

  // ------------------------------------------------------------------------------------------------ ctx
  var closed = false;
  var nextId = 1;
  var outbox = [];
  var waiting = new MapCtor();
  var outstanding = 0;
  var costLines = 0;

  function ended(name) {
    return new ErrorCtor(name + ': the run has ended');
  }
  function post(name, args) {
    push(outbox, [0, name, stringify(args)]);
  }
  function request(name, args) {
    var id = nextId++;
    var resolveIt;
    var rejectIt;
    var promise = new PromiseCtor(function (resolve, reject) { resolveIt = resolve; rejectIt = reject; });
    apply(mapSet, waiting, [id, [resolveIt, rejectIt]]);
    outstanding++;
    push(outbox, [id, name, stringify(args)]);
    return promise;
  }
  function text(name, what, value) {
    if (typeof value !== 'string') throw new TypeErrorCtor(name + ': ' + what + ' must be a string, not ' + (value === null ? 'null' : typeof value));
    if (value.length > limits.stringLength) throw tooLong(name, value.length);
    return value;
  }
  var decimalText = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
  function amount(field, value, required) {
    if (value === undefined || value === null) {
      if (required) throw new TypeErrorCtor('ctx.addCost: ' + field + ' is required');
      return null;
    }
    var shown;
    if (typeof value === 'number') {
      if (!numberIsFinite(value)) throw new TypeErrorCtor('ctx.addCost: ' + field + ' must be finite');
      if (value < 0) throw new TypeErrorCtor('ctx.addCost: ' + field + ' must not be negative');
      shown = StringCtor(value);
    } else if (typeof value === 'string') {
      if (value.length > 256 || !apply(regExpTest, decimalText, [value])) throw new TypeErrorCtor('ctx.addCost: ' + field + ' must be a non-negative decimal number, not ' + stringify(cut(value, 40)));
      shown = value;
    } else {
      throw new TypeErrorCtor('ctx.addCost: ' + field + ' must be a number or a decimal string');
    }
    return shown;
  }
  function label(field, value, required) {
    if (value === undefined || value === null) {
      if (required) throw new TypeErrorCtor('ctx.addCost: ' + field + ' is required');
      return null;
    }
    if (typeof value !== 'string') throw new TypeErrorCtor('ctx.addCost: ' + field + ' must be a string');
    if (value.length > 256) throw new TypeErrorCtor('ctx.addCost: ' + field + ' is longer than 256 characters');
    return value;
  }
  var ctx = {};
  function method(name, fn) {
    defineProperty(ctx, name, { value: mark(fn), writable: false, enumerable: true, configurable: false });
  }
  defineProperty(ctx, 'instanceId', { value: config.ids.instanceId, writable: false, enumerable: true, configurable: false });
  defineProperty(ctx, 'toolCallId', { value: config.ids.toolCallId, writable: false, enumerable: true, configurable: false });
  method('log', function log() {
    if (closed) throw ended('ctx.log');
    post('log', [cut(join(arguments), limits.logChars + 1)]);
  });
  method('readFile', function readFile(path) {
    if (closed) return promiseReject(ended('ctx.readFile'));
    return request('readFile', [text('ctx.readFile', 'path', path)]);
  });
  method('writeFile', function writeFile(path, content) {
    if (closed) return promiseReject(ended('ctx.writeFile'));
    return request('writeFile', [text('ctx.writeFile', 'path', path), text('ctx.writeFile', 'text', content)]);
  });
  method('fetch', function fetch(url, options) {
    if (closed) return promiseReject(ended('ctx.fetch'));
    url = text('ctx.fetch', 'url', url);
    var sent = { method: 'GET', headers: {}, body: null };
    if (options !== undefined && options !== null) {
      if (typeof options !== 'object') throw new TypeErrorCtor('ctx.fetch: options must be an object');
      if (options.method !== undefined) sent.method = text('ctx.fetch', 'method', options.method);
      if (options.body !== undefined && options.body !== null) sent.body = text('ctx.fetch', 'body', options.body);
      var headers = options.headers;
      if (headers !== undefined && headers !== null) {
        if (typeof headers !== 'object' || isArray(headers)) throw new TypeErrorCtor('ctx.fetch: headers must be an object of strings');
        var names = objectKeys(headers);
        for (var i = 0; i < names.length; i++) {
          sent.headers[names[i]] = text('ctx.fetch', 'header ' + names[i], headers[names[i]]);
        }
      }
    }
    return request('fetch', [url, sent]);
  });
  method('addCost', function addCost(line) {
    if (closed) throw ended('ctx.addCost');
    if (line === null || typeof line !== 'object') throw new TypeErrorCtor('ctx.addCost: pass an object { counter, quantity, unitPrice, per?, multiplier?, label?, source? }');
    var entry = {
      counter: label('counter', line.counter, true),
      quantity: amount('quantity', line.quantity, true),
      unitPrice: amount('unitPrice', line.unitPrice, true),
      per: amount('per', line.per, false),
      multiplier: amount('multiplier', line.multiplier, false),
      label: label('label', line.label, false),
      source: label('source', line.source, false),
    };
    if (entry.per !== null && +entry.per === 0) throw new TypeErrorCtor('ctx.addCost: per must not be zero');
    if (costLines >= limits.costLines) throw new TypeErrorCtor('ctx.addCost: a run adds at most ' + limits.costLines + ' cost lines');
    costLines++;
    post('addCost', [entry]);
  });
  freeze(ctx);
  function promiseReject(error) {
    return new PromiseCtor(function (resolve, reject) { reject(error); });
  }

  // ------------------------------------------------------------------------------------------------ the run
  var status = 'pending';
  var settledValue;
  var settledReason;
  function track(promise) {
    apply(promiseThen, apply(promiseResolve, PromiseCtor, [promise]), [
      mark(function (value) { status = 'fulfilled'; settledValue = value; closed = true; }),
      mark(function (reason) { status = 'rejected'; settledReason = reason; closed = true; }),
    ]);
  }
  function toNull(key, value) {
    return value === undefined ? null : value;
  }
  function finish() {
    if (status === 'rejected') return stringify({ status: 'error', error: describeError(settledReason) });
    if (status !== 'fulfilled') return stringify({ status: 'pending' });
    var value = settledValue;
    if (value === undefined) return stringify({ status: 'ok', type: 'undefined', json: null });
    var json;
    try {
      json = stringify(value, config.undefinedAsNull ? toNull : undefined);
    } catch (e) {
      return stringify({ status: 'result', message: 'the result cannot be written as JSON: ' + describeError(e).message });
    }
    if (json === undefined) return stringify({ status: 'result', message: 'the result (a ' + typeof value + ') cannot be written as JSON' });
    if (json.length > limits.result) return stringify({ status: 'result', message: 'the result is ' + json.length + ' characters of JSON, more than the limit of ' + limits.result });
    return stringify({ status: 'ok', type: typeof value, json: json });
  }
  function describeModule(namespace) {
    var out = { exports: objectKeys(namespace), tool: null, hook: null, error: null };
    try {
      if (namespace.tool !== undefined) out.tool = stringify(namespace.tool, toNull);
      if (namespace.hook !== undefined) out.hook = stringify(namespace.hook, toNull);
    } catch (e) {
      out.error = describeError(e);
    }
    return out;
  }

  var helpers = [push, cut, show, describeError, tooLong, join, write, ended, post, request, text, amount, label, method,
    promiseReject, track, toNull, finish, describeModule, dynamicImport];
  for (var hi = 0; hi < helpers.length; hi++) mark(helpers[hi]);

  return mark(function control(op, a, b, c) {
    if (op === 'body') {
      // a: the compiled async function, b: the input as JSON text
      track(a(parse(b), ctx));
      return null;
    }
    if (op === 'module') {
      // a: the module's evaluation promise, b: the export to call (null: describe the module), c: the arguments
      track(apply(promiseThen, apply(promiseResolve, PromiseCtor, [a]), [function () {
        return apply(promiseThen, dynamicImport('<input>'), [function (namespace) {
          if (b === null) return describeModule(namespace);
          var fn = namespace[b];
          if (typeof fn !== 'function') throw new TypeErrorCtor('the module does not export a function named ' + b);
          var args = parse(c);
          if (config.passCtx) push(args, ctx);
          return apply(fn, undefined, args);
        }]);
      }]));
      return null;
    }
    if (op === 'take') {
      if (outbox.length === 0) return null;
      var batch = stringify(outbox);
      outbox = [];
      return batch;
    }
    if (op === 'settle') {
      // a: call id, b: true to resolve, c: the value as JSON text, or the error message
      var entry = apply(mapGet, waiting, [a]);
      if (entry === undefined) return null;
      apply(mapDelete, waiting, [a]);
      outstanding--;
      if (b === true) entry[0](parse(c));
      else if (b === 'range') entry[1](new RangeErrorCtor(c));
      else if (b === 'type') entry[1](new TypeErrorCtor(c));
      else entry[1](new ErrorCtor(c));
      return null;
    }
    if (op === 'status') return status;
    if (op === 'outstanding') return outstanding;
    if (op === 'oom') return outOfMemory;
    if (op === 'finish') return finish();
    if (op === 'close') {
      closed = true;
      return null;
    }
    if (op === 'console') return stringify({ head: head, tail: tail, total: total });
    throw new TypeErrorCtor('unknown operation ' + op);
  });
})
