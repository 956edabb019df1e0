# The Python state of a conversation, saved after a run and restored
# before the next one, inside the sandbox. The runner (runner.go) runs this
# source as the module _sandpiper_state when a run keeps state. The host
# never unpickles what it writes: to the host a state is bytes.
#
# The state directory holds, when the run starts, "max" (the most bytes the
# state may take, in decimal) and, when there is a state, "in". restore
# reads "in", deletes it and writes "report.json"; after the code, save
# writes "out", then "report.json" again, with "saved": true once "out" is
# whole.
#
# A state file is MAGIC, then the value of each name kept, each pickled on
# its own (protocol 5), then an index (JSON: [name, offset, length] a name)
# and the index's offset in 8 bytes, little-endian. A value that is also
# the value of a name saved before it, or an element of one (df2 = df, a
# list holding df, first = items[0]), is saved as a reference to it, so
# that it stays the same object. Functions
# (lambdas included) and classes defined in __main__ are saved by value
# (their code through marshal), modules by name, the rest as pickle saves
# it. What pickle refuses (open files, sockets, generators, locks ...) is
# dropped, and so is a value that would take the state past its limit; a
# name that cannot be restored (its module is gone, say) is reported, and
# the others are restored all the same.

import functools
import importlib
import json
import marshal
import os
import pickle
import sys
import time
import types

MAGIC = b"SANDPIPER STATE 1\n"
# Bounds on the report: names listed, characters of a name and of a
# reason; past them the counts still count.
LIST_MAX = 300
NAME_CHARS = 100
WHY_CHARS = 160
# Values of these types are never saved as references to another name.
_ATOMIC = (type(None), bool, int, float, complex, str, bytes)
# The elements of a list, tuple or dict of at most this many are
# references too.
_ELEMENTS = 10000


class TooLarge(Exception):
    pass


def _short(s, n):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 1] + "\u2026"


def _why(e):
    if isinstance(e, (TooLarge, TypeError, pickle.PicklingError)):
        return _short(e, WHY_CHARS)
    return _short("%s: %s" % (type(e).__name__, e), WHY_CHARS)


def _size(n):
    if n < 1024:
        return "%d bytes" % n
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return "%.4g %s" % (n, unit)


def write_report(d, report):
    try:
        tmp = os.path.join(d, "report.tmp")
        with open(tmp, "w") as f:
            json.dump(report, f)
        os.replace(tmp, os.path.join(d, "report.json"))
    except Exception:
        pass


# ---------- reconstructors, pickled by reference (_sandpiper_state.X) ----------


class _Empty:
    """An empty closure cell's contents."""

    def __reduce__(self):
        return "EMPTY"


EMPTY = _Empty()


def make_function(code, module, name, qualname, ncells):
    cells = tuple(types.CellType() for _ in range(ncells)) if ncells else None
    f = types.FunctionType(code, sys.modules[module].__dict__, name, None, cells)
    f.__qualname__ = qualname
    return f


def set_function(f, state):
    defaults, kwdefaults, cells, attrs, doc, module, annotations = state
    f.__defaults__ = defaults
    f.__kwdefaults__ = kwdefaults
    for c, v in zip(f.__closure__ or (), cells):
        if v is not EMPTY:
            c.cell_contents = v
    f.__dict__.update(attrs)
    f.__doc__ = doc
    f.__module__ = module
    f.__annotations__ = annotations


# The classes made so far in this restore, by the token they were saved
# with: one class stays one class, whichever names refer to it.
_classes = {}


def make_class(token, meta, name, bases, ns):
    c = _classes.get(token)
    if c is None:
        c = _classes[token] = meta(name, bases, ns)
    return c


def set_class(c, state):
    for k, v in state.items():
        setattr(c, k, v)


def make_lru_cache(f, maxsize, typed):
    return functools.lru_cache(maxsize=maxsize, typed=typed)(f)


# ---------- saving ----------

_CLASS_SKIP = ("__dict__", "__weakref__", "_abc_impl")


def _singletons():
    """Objects compared by identity that must stay themselves (the
    sentinels of dataclasses): saved as the module attributes they are."""
    out = {}
    m = sys.modules.get("dataclasses")
    if m is not None:
        for a in ("MISSING", "KW_ONLY", "_FIELD", "_FIELD_CLASSVAR", "_FIELD_INITVAR", "_HAS_DEFAULT_FACTORY", "_EMPTY_METADATA"):
            if hasattr(m, a):
                out[id(getattr(m, a))] = (getattr(m, a), "dataclasses", a)
    return out


class _Pickler(pickle.Pickler):
    def __init__(self, f, main, saved, singletons):
        super().__init__(f, 5)
        self.main, self.saved, self.singletons = main, saved, singletons

    def persistent_id(self, obj):
        s = self.saved.get(id(obj))
        if s is not None and s[0] is obj:
            return s[1]
        return None

    def reducer_override(self, obj):
        t = type(obj)
        if t is types.FunctionType:
            if obj.__globals__ is self.main.__dict__ or obj.__module__ == "__main__":
                return self._function(obj)
            return NotImplemented
        if t is types.ModuleType:
            name = obj.__name__
            if name == "__main__" or sys.modules.get(name) is not obj:
                raise pickle.PicklingError("the module %s cannot be imported by its name" % name)
            return importlib.import_module, (name,)
        if t is types.CodeType:
            return marshal.loads, (marshal.dumps(obj),)
        if isinstance(obj, type):
            if obj.__module__ == "__main__":
                return self._class(obj)
            return NotImplemented
        if t is functools._lru_cache_wrapper and getattr(obj, "__module__", None) == "__main__":
            # Pickle would look it up in __main__ by name: save the
            # function it wraps instead (the cache starts empty).
            p = obj.cache_parameters()
            return make_lru_cache, (obj.__wrapped__, p["maxsize"], p["typed"])
        s = self.singletons.get(id(obj))
        if s is not None and s[0] is obj:
            return getattr, (importlib.import_module(s[1]), s[2])
        return NotImplemented

    def _function(self, f):
        # Its globals: __main__'s, or (a wrapper a library made for a
        # function of __main__) a module's that is imported by name.
        module = "__main__"
        if f.__globals__ is not self.main.__dict__:
            module = f.__globals__.get("__name__")
            m = sys.modules.get(module) if isinstance(module, str) else None
            if m is None or m.__dict__ is not f.__globals__ or module == "__main__":
                raise pickle.PicklingError("the function %s cannot be saved: its globals are not a module's" % f.__qualname__)
        cells = tuple(_cell(c) for c in (f.__closure__ or ()))
        annotations = dict(getattr(f, "__annotations__", None) or {})
        state = (f.__defaults__, f.__kwdefaults__, cells, dict(f.__dict__), f.__doc__, f.__module__, annotations)
        return make_function, (f.__code__, module, f.__name__, f.__qualname__, len(cells)), state, None, None, set_function

    def _class(self, c):
        meta = type(c)
        if meta is not type and getattr(meta, "__module__", "") != "abc":
            raise pickle.PicklingError("the class %s has the metaclass %s, which cannot be saved" % (c.__qualname__, meta.__qualname__))
        d = vars(c)
        slots = d.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        ns = {"__module__": "__main__", "__qualname__": c.__qualname__}
        if "__slots__" in d:
            ns["__slots__"] = d["__slots__"]
        state = {k: v for k, v in d.items() if k not in _CLASS_SKIP and k not in ns and k not in slots}
        return make_class, (id(c), meta, c.__name__, c.__bases__, ns), state, None, None, set_class


def _cell(c):
    try:
        return c.cell_contents
    except ValueError:
        return EMPTY


class _Limited:
    """A file that refuses to grow past a limit."""

    def __init__(self, f, left, limit):
        self.f, self.left, self.limit = f, left, limit

    def write(self, b):
        n = memoryview(b).nbytes
        if n > self.left:
            raise TooLarge("too large: the state would pass its limit of %s" % _size(self.limit))
        self.left -= n
        return self.f.write(b)


def _refer(saved, name, v):
    """Makes v, saved as name, and its elements, references for the names
    saved after it."""
    if isinstance(v, _ATOMIC):
        return
    saved.setdefault(id(v), (v, name))
    t = type(v)
    if t is dict and len(v) <= _ELEMENTS:
        items = [(k, e) for k, e in v.items() if type(k) in (str, int)]
    elif (t is list or t is tuple) and len(v) <= _ELEMENTS:
        items = enumerate(v)
    else:
        return
    for k, e in items:
        if not isinstance(e, _ATOMIC):
            saved.setdefault(id(e), (e, (name, k)))


def names(main):
    """The names of main a state keeps: all but __dunder__ ones."""
    return [k for k in list(main.__dict__) if isinstance(k, str) and not (k.startswith("__") and k.endswith("__"))]


def save(d, main, limit, report):
    """Saves main's names to d/out, within limit bytes, and writes the
    report (report holds what restore said)."""
    start = time.perf_counter()
    kept, dropped = [], []
    tmp = os.path.join(d, "out.tmp")
    try:
        with open(tmp, "wb", buffering=0) as f:
            f.write(MAGIC)
            # Room is kept for the index's entry of each name and its end.
            w = _Limited(f, limit - len(MAGIC) - 8 - 2, limit)
            saved, index, singletons = {}, [], _singletons()
            for name in names(main):
                try:
                    v = main.__dict__[name]
                except KeyError:
                    continue
                pos, left = f.tell(), w.left
                try:
                    entry = len(json.dumps([name, pos, limit])) + 2
                    if entry > w.left:
                        raise TooLarge("too large: the state would pass its limit of %s" % _size(limit))
                    w.left -= entry
                    _Pickler(w, main, saved, singletons).dump(v)
                except Exception as e:
                    f.seek(pos)
                    f.truncate()
                    w.left = left
                    dropped.append([name, _why(e)])
                    continue
                index.append([name, pos, f.tell() - pos])
                kept.append(name)
                _refer(saved, name, v)
            at = f.tell()
            f.write(json.dumps(index).encode())
            f.write(at.to_bytes(8, "little"))
            size = f.tell()
        os.replace(tmp, os.path.join(d, "out"))
        report.update(saved=True, size=size)
    except BaseException as e:
        report.update(saved=False, saveError=_why(e))
        try:
            os.unlink(tmp)
        except OSError:
            pass
    report["kept"], report["keptCount"] = [_short(n, NAME_CHARS) for n in kept[:LIST_MAX]], len(kept)
    report["dropped"] = [[_short(n, NAME_CHARS), w] for n, w in dropped[:LIST_MAX]]
    report["droppedCount"] = len(dropped)
    report["saveSeconds"] = time.perf_counter() - start
    write_report(d, report)


# ---------- restoring ----------


class Lost(Exception):
    pass


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, restored, lost):
        super().__init__(f)
        self.restored, self.lost = restored, lost

    def persistent_load(self, pid):
        name, key = (pid, None) if type(pid) is str else pid
        if name in self.lost:
            raise Lost("it refers to %s, which could not be restored" % name)
        if name not in self.restored:
            raise pickle.UnpicklingError("it refers to %s, which is not in the state" % name)
        v = self.restored[name]
        if type(pid) is str:
            return v
        try:
            return v[key]
        except (LookupError, TypeError):
            raise pickle.UnpicklingError("it refers to a part of %s that is gone" % name) from None


def restore(d, main):
    """Restores into main the names d/in holds, deletes it, writes the
    report and returns it."""
    start = time.perf_counter()
    report = {"version": 1, "saved": False}
    restored, lost = {}, {}
    path = os.path.join(d, "in")
    try:
        f = open(path, "rb")
    except OSError:
        f = None
    if f is not None:
        with f:
            try:
                os.unlink(path)
            except OSError:
                pass
            try:
                entries = _index(f)
            except Exception as e:
                report["unreadable"] = _why(e)
                entries = []
            for name, pos, length in entries:
                try:
                    f.seek(pos)
                    v = _Unpickler(f, restored, lost).load()
                    if f.tell() != pos + length:
                        raise pickle.UnpicklingError("its record is damaged")
                except Exception as e:
                    lost[name] = _why(e)
                    continue
                main.__dict__[name] = restored[name] = v
    _classes.clear()
    report["restored"] = [_short(n, NAME_CHARS) for n in list(restored)[:LIST_MAX]]
    report["restoredCount"] = len(restored)
    report["notRestored"] = [[_short(n, NAME_CHARS), w] for n, w in list(lost.items())[:LIST_MAX]]
    report["notRestoredCount"] = len(lost)
    report["restoreSeconds"] = time.perf_counter() - start
    write_report(d, report)
    return report


def _index(f):
    if f.read(len(MAGIC)) != MAGIC:
        raise ValueError("it is not a state file of this version")
    size = f.seek(0, 2)
    if size < len(MAGIC) + 8:
        raise ValueError("it is cut short")
    f.seek(size - 8)
    at = int.from_bytes(f.read(8), "little")
    if not len(MAGIC) <= at <= size - 8:
        raise ValueError("its index is damaged")
    f.seek(at)
    entries = json.loads(f.read(size - 8 - at))
    if not isinstance(entries, list):
        raise ValueError("its index is damaged")
    for e in entries:
        if not (isinstance(e, list) and len(e) == 3 and isinstance(e[0], str) and type(e[1]) is int and type(e[2]) is int
                and len(MAGIC) <= e[1] and 0 < e[2] and e[1] + e[2] <= at):
            raise ValueError("its index is damaged")
    return entries
