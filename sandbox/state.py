# The Python state of a conversation, saved after a run and restored
# before the next one, inside the sandbox. The runner (runner.go) runs this
# source as the module _sandpiper_state when a run keeps state. The host
# never unpickles what it writes: to the host a state is bytes.
#
# The state directory holds, when the run starts, "max" (the most bytes the
# state may take, the run's memory limit and the milliseconds its restore
# may take, in decimal, separated by spaces; see sandbox.StateBounds) and,
# when there is a state, "in". restore
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
# the others are restored all the same. Restoring builds data and runs
# nothing the state names (see _Restore, and "restoring, out of harm's
# way" for the child process it runs in).

import functools
import importlib
import io
import json
import marshal
import os
import pickle
import re
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
#
# Restoring builds data: it never runs code the state carries, nor code a
# module holds that does more than build a value. Functions and classes
# the conversation defined are made with their code, but until the
# restore is over a function's code is a stub that refuses to run (so
# that nothing the state holds can call the conversation's code while it
# is restored: a class's __setstate__, __hash__ or __init__ included), and
# code objects exist only wrapped (_Code), so that no stub can be given
# real code meanwhile. See _Restore for what a state may refer to.


class _Empty:
    """An empty closure cell's contents."""

    __slots__ = ()

    def __reduce__(self):
        return "EMPTY"


EMPTY = _Empty()


class Refused(Exception):
    """A state refers to something restoring does not use."""


class _Calling(Exception):
    def __init__(self, *a):
        super().__init__("restoring it would run code the conversation defined (a method or function of its own): a restore only builds data")


class _Code:
    """A code object, unusable until the restore is over."""

    __slots__ = ("code",)

    def __init__(self, code):
        object.__setattr__(self, "code", code)

    def __setattr__(self, k, v):
        raise AttributeError("read-only")

    def __setstate__(self, state):
        raise Refused("a code object cannot be changed")

    def __reduce__(self):
        return marshal.loads, (marshal.dumps(self.code),)


_stubs = {}


def _stub(n):
    """Code with n free variables that refuses to run."""
    c = _stubs.get(n)
    if c is None:
        cells = ["_c%d" % i for i in range(n)]
        src = "def _o():\n%s    def f(*a, **k):\n        raise '_calling'\n        %s\n    return f\n" % (
            "".join("    %s = None\n" % v for v in cells), "(" + ", ".join(cells) + ",)" if n else "pass")
        ns = {}
        exec(compile(src, "<sandpiper-restore>", "exec", dont_inherit=True), ns)
        code = ns["_o"]().__code__
        c = _stubs[n] = code.replace(co_consts=tuple(_Calling if k == "_calling" else k for k in code.co_consts))
    return c


# The restore under way, when there is one.
_ctx = None


def _restoring():
    if _ctx is None:
        raise Refused("no restore is under way")
    return _ctx


def make_function(code, module, name, qualname, ncells):
    ctx = _restoring()
    if isinstance(code, _Code):
        code = code.code
    if type(code) is not types.CodeType or type(ncells) is not int or ncells != len(code.co_freevars) \
            or type(name) is not str or type(qualname) is not str or type(module) is not str:
        raise Refused("a function's record is damaged")
    m = sys.modules.get(module)
    if m is None or module in ("builtins", "sys", __name__) or m.__dict__ is not getattr(m, "__dict__", None):
        raise Refused("a function's globals (the module %s) are not restored" % _short(module, 60))
    cells = tuple(types.CellType() for _ in range(ncells)) if ncells else None
    f = types.FunctionType(_stub(ncells), m.__dict__, name, None, cells)
    f.__qualname__ = qualname
    ctx.functions.append((f, code))
    ctx.made.add(id(f))
    return f


def set_function(f, state):
    ctx = _restoring()
    if type(f) is not types.FunctionType or id(f) not in ctx.made:
        raise Refused("a function's state is for no function the state made")
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


def make_class(token, meta, name, bases, ns):
    ctx = _restoring()
    if isinstance(meta, _Guard):
        meta = meta.f is _safe_type and type or meta.f
    abc = sys.modules.get("abc")
    if not (meta is type or abc is not None and meta is abc.ABCMeta) or type(name) is not str \
            or type(bases) is not tuple or not all(isinstance(b, type) for b in bases) or not isinstance(ns, dict):
        raise Refused("a class's record is damaged")
    c = ctx.classes.get(token)
    if c is None:
        clean = {"__module__": "__main__", "__qualname__": ns.get("__qualname__") if type(ns.get("__qualname__")) is str else name}
        slots = ns.get("__slots__")
        if "__slots__" in ns:
            if not (type(slots) is str or type(slots) in (tuple, list) and all(type(s) is str for s in slots)):
                raise Refused("a class's record is damaged")
            clean["__slots__"] = slots
        c = ctx.classes[token] = meta(name, bases, clean)
        ctx.made.add(id(c))
    return c


def set_class(c, state):
    ctx = _restoring()
    if id(c) not in ctx.made or not isinstance(c, type) or not isinstance(state, dict):
        raise Refused("a class's state is for no class the state made")
    for k, v in state.items():
        setattr(c, k, v)


def make_lru_cache(f, maxsize, typed):
    if not callable(f) or not (maxsize is None or type(maxsize) is int) or type(typed) is not bool:
        raise Refused("a cached function's record is damaged")
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
        if t is _Guard:
            return ref, (obj.f,)
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


def _raise_fsize():
    """Raises the soft limit on a file's size to the hard one, which
    leaves room for the state (the soft one is the disk's limit), and
    returns the limits to put back."""
    try:
        import resource
        old = resource.getrlimit(resource.RLIMIT_FSIZE)
        if old[0] != old[1]:
            resource.setrlimit(resource.RLIMIT_FSIZE, (old[1], old[1]))
            return old
    except Exception:
        pass
    return None


def _put_back(which, old):
    """Puts back the limits _raise_fsize or _cap_memory changed: old is
    what they returned (None: nothing changed), which the name of the
    resource ("RLIMIT_FSIZE", "RLIMIT_AS")."""
    if old is not None:
        try:
            import resource
            resource.setrlimit(getattr(resource, which), old)
        except Exception:
            pass


def save(d, main, limit, report):
    """Saves main's names to d/out, within limit bytes, and writes the
    report (report holds what restore said)."""
    start = time.perf_counter()
    kept, dropped = [], []
    tmp = os.path.join(d, "out.tmp")
    fsize = _raise_fsize()
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
    _put_back("RLIMIT_FSIZE", fsize)
    report["kept"], report["keptCount"] = [_short(n, NAME_CHARS) for n in kept[:LIST_MAX]], len(kept)
    report["dropped"] = [[_short(n, NAME_CHARS), w] for n, w in dropped[:LIST_MAX]]
    report["droppedCount"] = len(dropped)
    report["saveSeconds"] = time.perf_counter() - start
    write_report(d, report)


# ---------- restoring ----------


class Lost(Exception):
    pass


class _Guard:
    """A module's function closed to change (pickle may set the state of
    anything it is given). A live one builds data and may be called while
    restoring; another (a function a value refers to: {"mean":
    statistics.mean}) may be called only once the restore is over, and
    stands for the function in the value."""

    __slots__ = ("f", "live")

    def __init__(self, f, live=True):
        object.__setattr__(self, "f", f)
        object.__setattr__(self, "live", live)

    def __call__(self, *a, **k):
        if self.live is not True and _ctx is not None:
            raise Refused("%s is not called while restoring: a restore builds data" % self.live)
        return self.f(*a, **k)

    def __getattr__(self, k):
        return getattr(self.f, k)

    def __repr__(self):
        return repr(self.f)

    def __setattr__(self, k, v):
        raise AttributeError("read-only")

    def __delattr__(self, k):
        raise AttributeError("read-only")

    def __setstate__(self, state):
        raise Refused("a function of a module cannot be changed")


# The dataclasses sentinels a state may refer to (see _singletons).
_SENTINELS = ("MISSING", "KW_ONLY", "_FIELD", "_FIELD_CLASSVAR", "_FIELD_INITVAR", "_HAS_DEFAULT_FACTORY", "_EMPTY_METADATA")


def _safe_getattr(obj, name):
    if obj is sys.modules.get("dataclasses") and name in _SENTINELS:
        return getattr(obj, name)
    enum = sys.modules.get("enum")
    if enum is not None and isinstance(obj, enum.EnumMeta) and type(name) is str and name in obj.__members__:
        return obj.__members__[name]  # an enum's member, as Enum pickles it
    raise Refused("getattr is not restored: a restore builds data and reads no attributes")


def _safe_type(*a):
    if len(a) == 1 and (a[0] is None or a[0] is NotImplemented or a[0] is Ellipsis):
        return type(a[0])
    raise Refused("type() is not restored: a restore builds data and makes no types")


# Modules whose import does something (a program's __main__, a demo).
_LOUD = {"this", "antigravity", "__hello__", "__phello__", "idlelib", "turtledemo", "tkinter", "turtle", "pip", "ensurepip", "venv", __name__}


def _loud(module):
    parts = module.split(".")
    return parts[0] in _LOUD or "__main__" in parts or not all(p.isidentifier() for p in parts)


def _safe_import(name):
    if type(name) is not str or _loud(name):
        raise Refused("the module %s is not imported while restoring" % _short(name, 60))
    ctx = _restoring()
    m = sys.modules.get(name) or ctx.imported(lambda: importlib.import_module(name))
    ctx.watch(m)
    return m


def _ufunc(module, name):
    np = sys.modules.get("numpy")
    m = sys.modules.get(module) if type(module) is str else None
    v = getattr(m, name, None) if m is not None and type(name) is str and module.split(".")[0] == "numpy" else None
    if np is None or not isinstance(v, np.ufunc):
        raise Refused("a numpy ufunc's record is damaged")
    return v


def ref(v):
    """A value as it is (what a function a value refers to is saved as)."""
    return v


def _load_code(data):
    c = marshal.loads(data)
    if type(c) is not types.CodeType:
        raise Refused("a code object's record is damaged")
    return _Code(c)


# Modules a state's values may not come from: they run programs, open
# files and sockets, load code, or change the interpreter. A value of
# another module's class is made as pickle makes it; of a module's
# functions only those that build data (_FUNCTIONS) are called.
_DENIED = {
    "os", "posix", "nt", "posixpath", "ntpath", "sys", "subprocess", "_posixsubprocess", "ctypes", "_ctypes", "builtins", "importlib",
    "runpy", "code", "codeop", "pickle", "_pickle", "pickletools", "marshal", "shelve", "dbm", "shutil", "socket", "_socket", "ssl",
    "_ssl", "select", "selectors", "signal", "_signal", "threading", "_thread", "multiprocessing", "_multiprocessing", "concurrent",
    "asyncio", "gc", "inspect", "io", "_io", "tempfile", "pty", "tty", "termios", "fcntl", "mmap", "resource", "atexit", "webbrowser",
    "socketserver", "http", "urllib", "ftplib", "smtplib", "imaplib", "poplib", "xmlrpc", "wsgiref", "logging", "sqlite3", "_sqlite3",
    "zipfile", "tarfile", "gzip", "bz2", "lzma", "zipimport", "pkgutil", "site", "sysconfig", "platform", "faulthandler", "trace",
    "tracemalloc", "pdb", "bdb", "cProfile", "profile", "timeit", "unittest", "doctest", "pydoc", "distutils", "setuptools",
    "operator", "_operator", "types", "copyreg", "functools", "_functools", "weakref", "_weakref", "ast", "dis", "readline",
    "rlcompleter", "sched", "getpass", "glob", "filecmp", "fileinput", "compileall", "py_compile", "_imp", "_frozen_importlib",
    "_frozen_importlib_external", "_sandpiper_state", "_codecs", "codecs", "string", "linecache", "traceback", "warnings", "contextlib",
    "cmd", "shlex", "_winapi", "msvcrt", "winreg", "IPython",
    "wave", "aifc", "sunau", "mailbox", "netrc", "nntplib", "telnetlib", "smtpd", "asyncore", "asynchat", "cgitb", "crypt",
    "pwd", "grp", "spwd", "syslog", "nis", "ossaudiodev", "curses", "dbm", "zipapp", "tabnanny", "lib2to3", "uu", "chunk",
}
# Parts of allowed packages that read or write files, or load code.
_DENIED_PARTS = ("numpy.lib.npyio", "numpy.lib._datasource", "numpy.testing", "numpy.f2py", "numpy.distutils", "numpy.ctypeslib",
                 "numpy.core.memmap", "numpy.lib.format", "pandas.io", "pandas.util", "pandas.testing", "pandas._testing",
                 "matplotlib.backends", "matplotlib.pyplot", "scipy.io", "scipy.weave")
# The builtins a state may refer to: types that build data, and
# exceptions (any class of builtins deriving from BaseException).
_BUILTINS = {"bool", "int", "float", "complex", "str", "bytes", "bytearray", "list", "tuple", "dict", "set", "frozenset", "slice",
             "range", "object", "memoryview", "enumerate", "zip", "map", "filter", "reversed", "iter", "NotImplemented", "Ellipsis"}
# Functions of modules that build a value from data, by (module, name),
# beside those of _PATTERN in the data packages (_DATA).
_FUNCTIONS = {("re", "_compile"), ("array", "_array_reconstructor"), ("pytz", "_p"), ("pytz", "_UTC"),
              ("zoneinfo", "ZoneInfo._unpickle"),
              ("pandas._libs.missing", "NA"), ("pandas._libs.tslibs.nattype", "NaT")}
_DATA = ("numpy", "pandas", "pytz", "dateutil", "zoneinfo", "scipy", "sklearn", "statsmodels", "sympy", "mpmath", "networkx", "shapely",
         "pyarrow", "polars", "matplotlib", "PIL", "seaborn", "xarray")
_PATTERN = re.compile(r"_reconstruct|_mareconstruct|_frombuffer|scalar|__\w+_ctor|_{1,2}(pyx_)?unpickle\w*|_new_\w+|\w+_unpickle|_unpickle_\w+")
_SPECIAL = {
    ("builtins", "getattr"): _Guard(_safe_getattr),
    ("builtins", "type"): _Guard(_safe_type),
    ("importlib", "import_module"): _Guard(_safe_import),
    ("marshal", "loads"): _Guard(_load_code),
    ("_sandpiper_state", "make_function"): _Guard(make_function),
    ("_sandpiper_state", "set_function"): _Guard(set_function),
    ("_sandpiper_state", "make_class"): _Guard(make_class),
    ("_sandpiper_state", "set_class"): _Guard(set_class),
    ("_sandpiper_state", "make_lru_cache"): _Guard(make_lru_cache),
    ("_sandpiper_state", "EMPTY"): EMPTY,
    ("_sandpiper_state", "ref"): _Guard(ref),
}


def _special(module, name):
    v = _SPECIAL.get((module, name))
    if v is None and module == "copyreg" and name in ("_reconstructor", "__newobj__", "__newobj_ex__"):
        import copyreg
        v = _SPECIAL[(module, name)] = _Guard(getattr(copyreg, name))
    if v is None and module == "functools" and name == "partial":
        v = functools.partial
    if v is None and module.split(".")[0] == "numpy" and name == "_ufunc_reconstruct":
        v = _SPECIAL[(module, name)] = _Guard(_ufunc)
    if v is None and module == "types" and name == "SimpleNamespace":
        v = types.SimpleNamespace
    if v is None and module == "collections" and name in ("OrderedDict", "defaultdict", "deque", "Counter", "ChainMap", "UserDict", "UserList", "UserString"):
        import collections
        v = getattr(collections, name)
        _restoring().watch(v)
    return v


def _denied(module):
    if _loud(module) or module.split(".")[0] in _DENIED:
        return True
    return any(module == p or module.startswith(p + ".") for p in _DENIED_PARTS)


_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE
_SCALARS = (type(None), bool, int, float, complex, str, bytes)


class _Restore:
    """One restore: what it made, and the objects outside the state it
    handed to pickle, watched so that a state cannot change them."""

    def __init__(self):
        self.made = set()      # ids of the functions and classes made
        self.functions = []    # (function, its code) to give back at the end
        self.classes = {}      # the classes made, by their token
        self.watched = {}      # id -> (object, its attributes as they were)
        self.references = {}   # names bound to a module's function or class: (module, name)

    memory = size = 0
    old = None  # the address space's limit before the restore's cap

    def cap(self):
        """Bounds the address space so that a value too large for the
        run's memory fails with MemoryError (see _cap_memory)."""
        self.old = _cap_memory(self.memory, self.size)

    def uncap(self):
        _put_back("RLIMIT_AS", self.old)
        self.old = None

    def imported(self, load):
        """Calls load, which imports a module, without the cap: the data
        stack reserves far more address space than it uses, and the cap
        is set again from where the import left it."""
        if self.old is None:
            return load()
        self.uncap()
        try:
            return load()
        finally:
            self.cap()

    def watch(self, obj):
        if id(obj) in self.watched or id(obj) in self.made:
            return
        if isinstance(obj, type):
            if obj.__flags__ & _IMMUTABLE:
                return
            snap = dict(vars(obj))
        elif isinstance(obj, types.ModuleType) or hasattr(obj, "__dict__") and not callable(obj):
            try:
                snap = dict(vars(obj))
            except TypeError:
                return
        else:
            return
        self.watched[id(obj)] = (obj, snap)

    def changed(self):
        """Puts back what a load changed of the objects watched, and says
        what it was."""
        out = []
        for obj, snap in list(self.watched.values()):
            cur = vars(obj)
            if len(cur) == len(snap) and all(cur.get(k, _Empty) is v for k, v in snap.items()):
                continue
            keys = [k for k in snap if cur.get(k, _Empty) is not snap[k]]
            added = [k for k in list(cur) if k not in snap]
            for k in added:
                if isinstance(cur[k], types.ModuleType):  # a submodule imported
                    snap[k] = cur[k]
                    continue
                keys.append(k)
                try:
                    if isinstance(obj, type):
                        delattr(obj, k)
                    else:
                        del cur[k]
                except Exception:
                    pass
            for k in keys:
                if k in snap:
                    try:
                        if isinstance(obj, type):
                            setattr(obj, k, snap[k])
                        else:
                            cur[k] = snap[k]
                    except Exception:
                        pass
            if keys:
                what = getattr(obj, "__name__", None) or type(obj).__name__
                out.append("%s.%s" % (what, keys[0]))
        return out

    def find(self, module, name):
        if type(module) is not str or type(name) is not str:
            raise Refused("a reference is damaged")
        v = _special(module, name)
        if v is not None:
            return v
        where = "%s.%s" % (_short(module, 60), _short(name, 60))
        if module == "builtins":
            import builtins
            v = getattr(builtins, name, None) if "." not in name else None
            if name in _BUILTINS or isinstance(v, type) and issubclass(v, BaseException):
                return v
            return self.inert(v, where)
        if any(p.startswith("__") and p.endswith("__") for p in name.split(".")) and not _PATTERN.fullmatch(name.rsplit(".", 1)[-1]):
            raise Refused("%s is not restored: a restore builds data" % where)
        if _denied(module):
            if _loud(module):
                raise Refused("%s is not restored: a restore imports no %s" % (where, _short(module, 60)))
            return self.inert(self.load(module, name), where)
        v = self.load(module, name)
        if isinstance(v, type):
            self.watch(v)
            return v
        last = name.rsplit(".", 1)[-1]
        if (module, name) in _FUNCTIONS or module.split(".")[0] in _DATA and _PATTERN.fullmatch(last) \
                or last.startswith("__pyx_unpickle_"):
            if isinstance(v, types.ModuleType):
                raise Refused("%s is a module" % where)
            if callable(v) and type(v) is not types.BuiltinFunctionType:
                return _Guard(v)
            self.watch(v)
            return v
        if type(v) in _SCALARS:
            return v
        return self.inert(v, where)

    def load(self, module, name):
        if module in sys.modules:
            return pickle.Unpickler.find_class(self.unpickler, module, name)
        return self.imported(lambda: pickle.Unpickler.find_class(self.unpickler, module, name))

    def inert(self, v, where):
        """A function or class a value refers to, which the restore does
        not call: it stands in the value as a guard, callable once the
        restore is over."""
        if callable(v) and not isinstance(v, types.ModuleType):
            return _Guard(v, live=where)
        raise Refused("%s is not restored: a restore builds data" % where)


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, restored, lost, ctx):
        super().__init__(f)
        self.restored, self.lost, self.ctx = restored, lost, ctx
        ctx.unpickler = self

    def find_class(self, module, name):
        return self.ctx.find(module, name)

    def persistent_load(self, pid):
        name, key = (pid, None) if type(pid) is str else pid
        if name in self.lost:
            raise Lost("it refers to %s, which could not be restored" % name)
        if name not in self.restored:
            raise pickle.UnpicklingError("it refers to %s, which is not in the state" % name)
        v = self.restored[name]
        ref = self.ctx.references.get(name)
        if ref is not None:
            # What a name bound to a module's function is, inside a
            # value: only what a value may refer to.
            return self.ctx.find(*ref)
        if type(pid) is not str:
            try:
                v = v[key]
            except (LookupError, TypeError):
                raise pickle.UnpicklingError("it refers to a part of %s that is gone" % name) from None
        if isinstance(v, (type, types.ModuleType)):
            self.ctx.watch(v)
        return v


def _global_only(data):
    """The module and name a record refers to when it is that reference
    alone (a name bound to a module's function: from math import sqrt)."""
    if len(data) > 600:
        return None
    import pickletools
    strings, ref = [], None
    try:
        for op, arg, _ in pickletools.genops(data):
            n = op.name
            if n in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
                strings.append(arg)
            elif n == "STACK_GLOBAL" and ref is None and len(strings) == 2:
                ref = tuple(strings)
            elif n == "GLOBAL" and ref is None and not strings:
                ref = tuple(arg.split(" ", 1))
            elif n not in ("PROTO", "FRAME", "MEMOIZE", "STOP"):
                return None
    except Exception:
        return None
    return ref


def _load_name(name, f, pos, length, restored, lost, ctx):
    ref = None
    if length <= 600:
        f.seek(pos)
        ref = _global_only(f.read(length))
    if ref is not None and ref[0] not in ("_sandpiper_state", "__main__") and not _loud(ref[0]):
        # A name bound to a module's function or class: restored as the
        # import it is (it is not called).
        ctx.unpickler = _Unpickler(io.BytesIO(b""), restored, lost, ctx)
        v = ctx.load(ref[0], ref[1])
        ctx.references[name] = ref
        return v
    # Straight from the file: a large bytes value is read once, into
    # itself.
    f.seek(pos)
    v = _Unpickler(f, restored, lost, ctx).load()
    if f.tell() != pos + length:
        raise pickle.UnpicklingError("its record is damaged")
    return v


def _restore(d, main, memory=0, size=0):
    """Restores into main the names d/in holds, deletes it, writes the
    report and returns it."""
    global _ctx
    start = time.perf_counter()
    report = {"version": 1, "saved": False}
    restored, lost = {}, {}
    path = os.path.join(d, "in")
    try:
        f = open(path, "rb")
    except OSError:
        f = None
    ctx = _ctx = _Restore()
    ctx.memory, ctx.size = memory, size
    ctx.cap()
    try:
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
                        v = _load_name(name, f, pos, length, restored, lost, ctx)
                        changed = ctx.changed()
                        if changed:
                            raise Refused("restoring it changed %s, which a restore leaves alone" % ", ".join(changed[:3]))
                    except Exception as e:
                        ctx.changed()
                        lost[name] = _why(e)
                        continue
                    restored[name] = v
        # The restore is over: the functions get their code.
        for fn, code in ctx.functions:
            fn.__code__ = code
    finally:
        _ctx = None
        ctx.uncap()
    for name, v in restored.items():
        main.__dict__[name] = v
    report["restored"] = [_short(n, NAME_CHARS) for n in list(restored)[:LIST_MAX]]
    report["restoredCount"] = len(restored)
    report["notRestored"] = [[_short(n, NAME_CHARS), w] for n, w in list(lost.items())[:LIST_MAX]]
    report["notRestoredCount"] = len(lost)
    report["restoreSeconds"] = time.perf_counter() - start
    write_report(d, report)
    return report


# ---------- restoring, out of harm's way ----------
#
# A state's restore may still hang (data can be slow to build: a dict of
# colliding keys), die or fill memory: it runs in a child process of the
# program's, with its own time and memory, and only once it is done does
# that child go on to run the code (the parent then waits for it and ends
# as it ends). When it dies or takes too long (more CPU than half the run's
# time, or nine tenths of the run's time), the parent, which restored
# nothing, reports why (restoreFailed) and runs the code without names.

# The least memory a restore may use, and what is kept back for the rest
# of the run, beyond what the program and the state's file hold.
_RESTORE_MIN = 16 << 20
_RESTORE_MARGIN = 48 << 20


def _status(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cap_memory(memory, size):
    """Bounds this process's address space so that the restore fails
    with MemoryError before the run's memory limit; returns the limit to
    put back."""
    if memory <= 0:
        return None
    try:
        import resource
        vm, rss = _status("/proc/self/status", "VmSize"), _status("/proc/self/status", "VmRSS")
        if vm is None or rss is None:
            return None
        old = resource.getrlimit(resource.RLIMIT_AS)
        cap = vm + max(memory - rss - size - _RESTORE_MARGIN, _RESTORE_MIN)
        if old[1] != resource.RLIM_INFINITY:
            cap = min(cap, old[1])
        resource.setrlimit(resource.RLIMIT_AS, (cap, old[1]))
        return old
    except Exception:
        return None


def _ended(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import signal
            name = signal.Signals(sig).name
        except Exception:
            name = "signal %d" % sig
        return "was killed (%s)" % name
    return "ended the process (exit status %d)" % os.waitstatus_to_exitcode(status)


def _follow(pid):
    """Waits for the child that runs the code and ends as it ended."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        import signal
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        except Exception:
            pass
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def restore(d, main, memory=0, ms=0):
    """Restores into main the names d/in holds (see above), deletes it,
    writes the report and returns it. memory is the run's memory limit,
    in bytes, and ms the most the restore may take, in milliseconds (0:
    unknown)."""
    path = os.path.join(d, "in")
    try:
        size = os.stat(path).st_size
    except OSError:
        return _restore(d, main)
    seconds = ms / 1000 if ms > 0 else 10
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass
    r, w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            report = _restore(d, main, memory, size)
        except BaseException as e:
            report = {"version": 1, "saved": False, "unreadable": _why(e)}
            write_report(d, report)
        os.write(w, b"1")
        os.close(w)
        return report
    os.close(w)
    import select
    why = None
    # The budget is CPU time (a slow import on a busy host is not a
    # hang), and wall time up to nine tenths of the run's.
    wall = 1.8 * seconds
    while why is None:
        left = start + wall - time.monotonic()
        cpu = _cpu(pid)
        if left <= 0 or cpu > seconds:
            why = "restoring them took longer than %s" % _seconds(wall) if left <= 0 else \
                "restoring them took more than %s of CPU" % _seconds(seconds)
            os.kill(pid, 9)
            break
        try:
            ready, _, _ = select.select([r], [], [], min(left, 0.05))
        except InterruptedError:
            continue
        if ready:
            if os.read(r, 1) == b"1":
                os.close(r)
                _follow(pid)
            break
    os.close(r)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if why is None:
        why = "restoring them " + _ended(status)
        if memory > 0 and os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9:
            why += ", likely at the memory limit"
    try:
        os.unlink(path)
    except OSError:
        pass
    report = {"version": 1, "saved": False, "restoreFailed": why, "restored": [], "restoredCount": 0, "notRestored": [],
              "notRestoredCount": 0, "restoreSeconds": time.monotonic() - start}
    write_report(d, report)
    return report


def _cpu(pid):
    """The CPU time process pid has used, in seconds (0 when unknown)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0


def _seconds(s):
    return "%g s" % round(s, 1)


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
